"""The DataFrame upsert path (a batch over hoodie.airflow.write.driver.batch.max.bytes) runs
at most five Spark jobs: keying, one shuffle that dedupes and tags, one shuffle to the
file-group writers. Each job is a scheduling round trip and, before, a pass over the batch.
When every partition's records fit one tag group (hoodie.copyonwrite.insert.split.size),
the tag groups are whole partitions and the writers read them with no second shuffle: four
jobs. A partition split over several tag groups takes the shuffle by bucket."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieError
from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.read import read_table


@pytest.mark.parametrize("split,max_jobs", [(None, 4), ("4", 5)])
def test_a_dataframe_upsert_with_duplicates_runs_at_most_five_jobs(spark, tmp_path, split, max_jobs):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    cfg = HoodieConfig({"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
                        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "SIMPLE",
                        "hoodie.table.type": "MERGE_ON_READ", DRIVER_BATCH_MAX_BYTES: "0"})
    if split:  # 20 records per partition: five tag groups each
        cfg = cfg.with_values({"hoodie.copyonwrite.insert.split.size": split})
    rows = [{"id": i, "ts": 1, "p": "ab"[i % 2], "v": f"v{i}"} for i in range(40)]
    upsert_dataframe(spark, spark.createDataFrame(rows), base, "insert", cfg, "t")
    # id 3 twice with the same ordering value: the later row wins (Hudi's preCombine);
    # id 5 twice: the greater ordering value wins whatever the order
    batch = [dict(r, ts=2, v="new") for r in rows[:10]] + [{"id": 3, "ts": 2, "p": "b", "v": "later"},
                                                        {"id": 5, "ts": 1, "p": "b", "v": "older"},
                                                        {"id": 100, "ts": 2, "p": "a", "v": "n"}]
    group = f"dataframe-upsert-jobs-{split}"
    spark.sparkContext.setJobGroup(group, "one upsert")
    try:
        r = upsert_dataframe(spark, spark.createDataFrame(batch), base, "upsert", cfg)
    finally:
        spark.sparkContext.setJobGroup("tests", "other")
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
    assert (r.updates, r.inserts) == (10, 1)
    assert jobs <= max_jobs, jobs
    got = {row["id"]: row["v"] for row in read_table(base, columns=["id", "v"]).to_pylist()}
    assert got == {**{i: f"v{i}" for i in range(40)}, **{i: "new" for i in range(10)}, 3: "later", 100: "n"}


def test_the_partition_writer_takes_each_partition_whole_across_batches():
    from airflow_hoodie.spark.upsert import _partition_runs
    from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH

    def batch(paths):
        return pa.record_batch({PARTITION_PATH: paths, "n": list(range(len(paths)))})

    runs = list(_partition_runs(iter([batch(["a", "a", "b"]), batch(["b", "b"]), batch([]), batch(["c"])])))
    assert [(r.column(PARTITION_PATH).unique().to_pylist(), r.num_rows) for r in runs] == \
        [(["a"], 2), (["b"], 3), (["c"], 1)]
    with pytest.raises(HoodieError, match="in pieces"):  # never writes a partition from half its records
        list(_partition_runs(iter([batch(["a", "b"]), batch(["a"])])))
