"""hoodie.index.type=BUCKET on the DataFrame path (issue 39): the Spark engine (records
bucketed where they are, tagged in the shared tag step, written by the shared file-group
tasks) and the driver-side engine lay the table out exactly as Hudi's BucketIdentifier says,
on versions 6 and 9, COPY_ON_WRITE and MERGE_ON_READ; both give the in-process engine's rows."""

from __future__ import annotations

import pytest

from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.read import read_table
from tests.actions.test_bucket_index import _batch, _check_layout, _conf
from tests.table.normalize import hudi_rs_rows, normalize_table


def _rows(base: str) -> list[tuple]:
    t = read_table(base)
    return sorted(zip(t.column("id").to_pylist(), t.column("p").to_pylist(), t.column("v").to_pylist()))


@pytest.mark.parametrize("version,table_type", [(6, "COPY_ON_WRITE"), (9, "MERGE_ON_READ"), (6, "MERGE_ON_READ"),
                                                (9, "COPY_ON_WRITE")])
def test_spark_writes_by_bucket(spark, tmp_path, monkeypatch, version: int, table_type: str) -> None:
    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.spark import upsert as up
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    spark_tags = []
    original = up.SparkWriteEngine.tag_buckets
    monkeypatch.setattr(up.SparkWriteEngine, "tag_buckets",
                        lambda self, routing: spark_tags.append(1) or original(self, routing))

    ids = [f"k{i}" for i in range(30)] + ["key:with:colon"]
    batches = [(_batch(ids, 1), "upsert"), (_batch(ids[:7] + [f"new{i}" for i in range(9)], 2), "upsert"),
               (_batch(["k1", "new2"], 3, parts=["a", "a"]), "delete")]
    results = {}
    for engine in ("spark", "driver", "arrow"):
        base = str(tmp_path / engine)
        conf = _conf(version, table_type, **({DRIVER_BATCH_MAX_BYTES: "0"} if engine == "spark" else {}))
        for data, op in batches:
            if engine == "arrow":
                write_arrow(base, data, op, conf)
            else:
                upsert_dataframe(spark, spark.createDataFrame(data.to_pandas()), base, op, HoodieConfig(conf), "svc")
        _check_layout(base, ["id"], 4, version)
        results[engine] = _rows(base)
    assert len(spark_tags) == 3  # the Spark engine tagged the "spark" table's three writes
    assert results["spark"] == results["driver"] == results["arrow"]
    assert len(results["spark"]) == 38
    assert normalize_table(read_table(str(tmp_path / "spark"))) == hudi_rs_rows(str(tmp_path / "spark"))


def test_spark_refuses_a_default_index_write_into_a_bucket_table(spark, tmp_path) -> None:
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    conf = _conf(9, "COPY_ON_WRITE", **{DRIVER_BATCH_MAX_BYTES: "0"})
    upsert_dataframe(spark, spark.createDataFrame(_batch(["a", "b"], 1).to_pandas()), base, "upsert",
                     HoodieConfig(conf), "svc")
    plain = {k: v for k, v in conf.items() if k != "hoodie.index.type"}
    with pytest.raises(HoodieNotSupportedError, match="hoodie.index.type=BUCKET"):
        upsert_dataframe(spark, spark.createDataFrame(_batch(["c"], 2).to_pandas()), base, "upsert",
                         HoodieConfig(plain), "svc")
    assert read_table(base).num_rows == 2


def test_spark_bulk_insert_by_bucket_and_refused_without_it(spark, tmp_path) -> None:
    """The row writer (random-UUID groups) never writes into a bucket table; a bucket-index
    bulk_insert lays its rows out by bucket."""
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    conf = _conf(6, "COPY_ON_WRITE", **{DRIVER_BATCH_MAX_BYTES: "0"})
    upsert_dataframe(spark, spark.createDataFrame(_batch([f"k{i}" for i in range(12)], 1).to_pandas()), base,
                     "bulk_insert", HoodieConfig(conf), "svc")
    _check_layout(base, ["id"], 4, 6)
    plain = {k: v for k, v in conf.items() if k != "hoodie.index.type"}
    with pytest.raises(HoodieNotSupportedError, match="hoodie.index.type=BUCKET"):
        upsert_dataframe(spark, spark.createDataFrame(_batch(["z"], 2, parts=["c"]).to_pandas()), base,
                         "bulk_insert", HoodieConfig(plain), "svc")
    assert read_table(base).num_rows == 12
