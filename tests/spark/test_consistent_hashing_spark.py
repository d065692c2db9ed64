"""The consistent-hashing bucket index on the DataFrame path (issue 39, item 2): the Spark engine
(ring positions computed where the records are) and the driver-side engine put every row in the
node xxhash32 picks, as the in-process engine does; a split resize run on Spark executors keeps
every key (ours and hudi-rs)."""

from __future__ import annotations

from airflow_hoodie.actions.clustering import run_clustering
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.test_consistent_hashing import CONF, _batch, _check_rows_in_ring, _metas


def test_spark_writes_and_resizes_by_ring(spark, tmp_path) -> None:
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe
    from airflow_hoodie.spark.executor import SparkExecutor

    keys = {f"k{i}" for i in range(30)}
    metas = {}
    for engine in ("spark", "driver", "arrow"):
        base = str(tmp_path / engine)
        conf = {**CONF, **({DRIVER_BATCH_MAX_BYTES: "0"} if engine == "spark" else {})}
        for data in (_batch(24, 1), _batch(12, 2, start=18)):
            if engine == "arrow":
                write_arrow(base, data, "upsert", conf)
            else:
                upsert_dataframe(spark, spark.createDataFrame(data.to_pandas()), base, "upsert", HoodieConfig(conf),
                                 "svc")
        _check_rows_in_ring(base, keys)
        metas[engine] = _metas(base, "a") + _metas(base, "b")
    assert metas["spark"] == metas["driver"] == metas["arrow"]
    base = str(tmp_path / "spark")
    out = run_clustering(HoodieTable.load(base), HoodieConfig({**CONF, "hoodie.parquet.max.file.size": "1000",
                                                               "hoodie.bucket.index.max.num.buckets": "5"}),
                         SparkExecutor(spark))
    assert out["state"] == "completed"
    assert [len(m["nodes"]) for m in _metas(base, "a")] == [4, 5]
    _check_rows_in_ring(base, keys)
    upsert_dataframe(spark, spark.createDataFrame(_batch(6, 3, start=28).to_pandas()), base, "upsert",
                     HoodieConfig({**CONF, DRIVER_BATCH_MAX_BYTES: "0"}), "svc")
    _check_rows_in_ring(base, keys | {"k30", "k31", "k32", "k33"})
