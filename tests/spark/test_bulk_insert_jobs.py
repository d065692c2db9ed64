"""bulk_insert on the row-writer path checks its records in the write job itself: no Spark
job of its own (it cost a pass over the batch and about a third of a 1M-row bulk_insert),
and a batch the write tasks refuse still leaves nothing behind on a first write and the
table as it was on a later one."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieKeyError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_data_safety import files_under


def _conf() -> HoodieConfig:
    # the layout of benchmarks/bulk_insert.py: rows of a partition path meet in one task
    return HoodieConfig({"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
                         "hoodie.datasource.write.precombine.field": "ts",
                         "hoodie.datasource.write.partitionpath.field": "p",
                         "hoodie.bulkinsert.sort.mode": "PARTITION_PATH_REPARTITION",
                         "hoodie.bulkinsert.shuffle.parallelism": "3"})


def _rows(ids: range, parts: list[str]) -> pa.Table:
    return pa.table({"id": [f"k{i:04d}" for i in ids], "ts": [1] * len(ids),
                     "p": [parts[i % len(parts)] for i in ids], "v": list(ids)})


def _jobs(spark, group: str, fn) -> int:
    spark.sparkContext.setJobGroup(group, group)
    try:
        fn()
    finally:
        spark.sparkContext.setJobGroup("tests", "other")
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_a_first_bulk_insert_runs_the_shuffle_and_the_write_only(spark, tmp_path):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    df = spark.createDataFrame(_rows(range(60), ["a", "b", "c"])).repartition(3)
    jobs = _jobs(spark, "bulk-first-write", lambda: upsert_dataframe(spark, df, base, "bulk_insert", _conf(), "t"))
    assert jobs <= 2, jobs  # was 3: a job of its own checked the records first
    assert sorted(read_table(base, columns=["id"]).column(0).to_pylist()) == [f"k{i:04d}" for i in range(60)]


def test_records_refused_by_the_write_tasks_leave_nothing_on_a_first_write_and_the_table_on_a_later(
        spark, tmp_path):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = tmp_path / "t"
    # good rows in two partition paths (their tasks may write files before the bad one fails)
    bad = spark.createDataFrame(_rows(range(30), ["a", "b", "x//y"])).repartition(3)
    with pytest.raises(HoodieKeyError, match="empty segment"):
        upsert_dataframe(spark, bad, str(base), "bulk_insert", _conf(), "t")
    assert files_under(base) == []  # no data, no partition metadata, no table

    upsert_dataframe(spark, spark.createDataFrame(_rows(range(10), ["a"])), str(base), "bulk_insert", _conf(), "t")
    before = files_under(base)
    with pytest.raises(HoodieKeyError, match="empty segment"):
        upsert_dataframe(spark, bad, str(base), "bulk_insert", _conf())
    table = HoodieTable.load(str(base))
    assert [i.action for i in table.timeline.completed_commits().instants] == ["commit"]
    assert sorted(read_table(str(base), columns=["id"]).column(0).to_pylist()) == [f"k{i:04d}" for i in range(10)]
    assert [f for f in files_under(base) if f.endswith(".parquet")] == [f for f in before if f.endswith(".parquet")]
