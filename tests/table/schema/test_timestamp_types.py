"""Timestamps as Hudi 0.14 writes them: UTC instants, Avro ``timestamp-micros`` and parquet
``TIMESTAMP(MICROS, isAdjustedToUTC=true)``; timestamps without a zone are refused."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieNotSupportedError

CONF = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts"}


def _parquet_column(path, name: str):
    pf = pq.ParquetFile(path)
    return pf.schema.column(pf.schema.names.index(name)), json.loads(pf.schema_arrow.metadata[b"parquet.avro.schema"])


def test_our_timestamps_have_the_types_of_a_real_hudi_file(conformance, tmp_path):
    real = next((conformance / "tables" / "cow" / "v6_nonpartitioned").glob("*.parquet"))
    real_col, real_avro = _parquet_column(real, "timestampField")
    base = tmp_path / "t"
    when = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc)
    write_arrow(str(base), pa.table({"id": [1], "ts": [1], "timestampField": pa.array([when], pa.timestamp("us", "UTC"))}),
                "upsert", CONF, table_name="t")
    ours_col, ours_avro = _parquet_column(next(base.glob("*.parquet")), "timestampField")
    assert (ours_col.physical_type, str(ours_col.logical_type)) == (real_col.physical_type, str(real_col.logical_type))
    pick = lambda av: [f["type"] for f in av["fields"] if f["name"] == "timestampField"]  # noqa: E731
    assert pick(ours_avro) == pick(real_avro) == [["null", {"type": "long", "logicalType": "timestamp-micros"}]]


def test_a_timestamp_without_time_zone_is_refused_before_anything_is_written(tmp_path):
    base = tmp_path / "t"
    naive = pa.table({"id": [1], "ts": [1], "at": pa.array([dt.datetime(2024, 5, 1)], pa.timestamp("us"))})
    with pytest.raises(HoodieNotSupportedError, match="'at'.*without time zone.*assume_timezone"):
        write_arrow(str(base), naive, "upsert", CONF, table_name="t")
    assert not base.exists() or not list(base.rglob("*.parquet"))
