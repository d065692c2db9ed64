"""The data-safety refusals of tests/actions/test_data_safety.py on both Spark engines: the
driver batch (records as Arrow on the driver) and the DataFrame path (records checked in
Spark tasks). Items 1, 3, 4 and 5 of the attack: each lost, shifted or nulled data before."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieKeyError, HoodieSchemaError
from airflow_hoodie.table.read import read_table
from tests.actions.test_data_safety import files_under, rows
from tests.actions.test_write import conf
from tests.spark.test_upsert import engine_conf

ENGINES = [None, "driver"]  # the DataFrame path, the driver batch


def _cfg(driver_batch: str | None, table_type: str = "COPY_ON_WRITE", **extra: str) -> HoodieConfig:
    return HoodieConfig(conf(table_type, **extra)).with_values(engine_conf(driver_batch))


@pytest.mark.parametrize("driver_batch", ENGINES)
@pytest.mark.parametrize("operation", ["upsert", "bulk_insert"])
def test_an_empty_partition_segment_is_refused_and_a_first_write_leaves_nothing(spark, tmp_path, driver_batch,
                                                                                operation):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = tmp_path / "t"
    with pytest.raises(HoodieKeyError, match="empty segment"):
        upsert_dataframe(spark, spark.createDataFrame(rows([1, 2], p="x/")), str(base), operation,
                         _cfg(driver_batch), "t")
    assert files_under(base) == []
    upsert_dataframe(spark, spark.createDataFrame(rows([1, 2])), str(base), operation, _cfg(driver_batch), "t")
    with pytest.raises(HoodieKeyError, match="empty segment"):
        upsert_dataframe(spark, spark.createDataFrame(rows([3], p="x//y")), str(base), operation, _cfg(driver_batch))
    assert sorted(read_table(str(base)).column("id").to_pylist()) == [1, 2]


@pytest.mark.parametrize("driver_batch", ENGINES)
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_null_ordering_value_is_refused(spark, tmp_path, driver_batch, table_type):
    """BaseAvroPayload refuses a record whose ordering value is null (Hudi 0.14)."""
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    upsert_dataframe(spark, spark.createDataFrame(rows([1], ts=5, v="five")), base, "upsert",
                     _cfg(driver_batch, table_type), "t")
    bad = pa.table({"id": [1], "ts": pa.array([None], pa.int64()), "p": ["a"], "v": ["null"]})
    with pytest.raises(HoodieKeyError, match="is null in 1 of 1 records"):
        upsert_dataframe(spark, spark.createDataFrame(bad), base, "upsert", _cfg(driver_batch, table_type))
    assert read_table(base, columns=["id", "ts", "v"]).to_pylist() == [{"id": 1, "ts": 5, "v": "five"}]


@pytest.mark.parametrize("driver_batch", ENGINES)
def test_a_timestamp_ntz_column_is_refused_by_a_table_of_instants(spark, tmp_path, driver_batch):
    """Spark's TIMESTAMP_NTZ arrives as a naive timestamp: stored as UTC it shifted by the
    session's offset (09:00 in New York became 09:00 UTC)."""
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    at = dt.datetime(2024, 1, 2, 9, 0, tzinfo=dt.timezone.utc)
    zoned = rows([1]).append_column("at", pa.array([at], pa.timestamp("us", tz="UTC")))
    upsert_dataframe(spark, spark.createDataFrame(zoned), base, "upsert", _cfg(driver_batch), "t")
    ntz = spark.createDataFrame(rows([1], ts=2)).selectExpr("*", "TIMESTAMP_NTZ'2024-01-02 09:00:00' AS at")
    with pytest.raises(HoodieSchemaError, match="without time zone"):
        upsert_dataframe(spark, ntz, base, "upsert", _cfg(driver_batch))
    got = read_table(base, columns=["at"]).column("at").to_pylist()[0]
    assert (got.replace(tzinfo=dt.timezone.utc) if got.tzinfo is None else got) == at


@pytest.mark.parametrize("driver_batch", ENGINES)
def test_a_batch_without_a_stored_column_keeps_the_stored_values(spark, tmp_path, driver_batch):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    upsert_dataframe(spark, spark.createDataFrame(rows([1, 2], v="kept")), base, "upsert", _cfg(driver_batch), "t")
    no_v = spark.createDataFrame(rows([1], ts=2).drop_columns(["v"]))
    with pytest.raises(HoodieSchemaError, match="lacks the table's column"):
        upsert_dataframe(spark, no_v, base, "upsert", _cfg(driver_batch))
    assert {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()} == {1: "kept", 2: "kept"}
    upsert_dataframe(spark, no_v, base, "upsert",
                     _cfg(driver_batch, **{"hoodie.write.set.null.for.missing.columns": "true"}))
    assert {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()} == {1: None, 2: "kept"}
