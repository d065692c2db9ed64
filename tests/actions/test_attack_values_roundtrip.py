"""Attack: values at the edges of their types through every path that rewrites records: a COW
merge, a MERGE_ON_READ log (Avro) and its compaction, and clustering. Our read and hudi-rs's must
return exactly what was written: decimals at full precision and negative, timestamps before
1900 and past 2262 (milliseconds, microseconds, a non-UTC zone), the first and last dates,
binary of every byte value and empty, strings holding NUL and separators, NaN, infinities,
-0.0, the smallest subnormal, float32 extremes, int8/int16 extremes, and nested structs, lists
and maps with nulls at every level (a null struct vs a struct of nulls, [] vs null, a null map
value)."""

from __future__ import annotations

import datetime
import decimal
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table

UTC = datetime.timezone.utc
SCHEMA = pa.schema([
    ("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
    ("d1", pa.decimal128(5, 0)), ("d2", pa.decimal128(38, 10)), ("d3", pa.decimal128(18, 15)),
    ("tms", pa.timestamp("ms", tz="UTC")), ("tus", pa.timestamp("us", tz="UTC")),
    ("tny", pa.timestamp("us", tz="America/New_York")), ("dt", pa.date32()), ("bin", pa.binary()), ("s", pa.string()),
    ("f", pa.float64()), ("f32", pa.float32()),
    ("st", pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.struct([("x", pa.float64())]))])),
    ("li", pa.list_(pa.int64())), ("ls", pa.list_(pa.struct([("q", pa.string())]))),
    ("mp", pa.map_(pa.string(), pa.int64())), ("i8", pa.int8()), ("i16", pa.int16()), ("b", pa.bool_()),
])


def _row(i: int, ts: int) -> dict[str, Any]:
    neg = i % 2
    return {
        "id": f"k{i}", "p": f"p{i % 2}", "ts": ts,
        "d1": decimal.Decimal(-99999 if neg else 99999),
        "d2": decimal.Decimal("-1234567890123456789012345678.0123456789") if neg else decimal.Decimal("1E-10"),
        "d3": decimal.Decimal("-999.999999999999999") if neg else decimal.Decimal("0.000000000000001"),
        "tms": datetime.datetime(1900, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) if neg
        else datetime.datetime(2262, 4, 11, 23, 47, 16, 854000, tzinfo=UTC),
        "tus": [datetime.datetime(1, 1, 1, tzinfo=UTC), datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                datetime.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)][i % 3],
        "tny": datetime.datetime(1960, 2, 29, 12, 0, 0, ts, tzinfo=UTC),
        "dt": [datetime.date(1, 1, 1), datetime.date(1969, 12, 31), datetime.date(9999, 12, 31)][i % 3],
        "bin": [b"", None, bytes(range(256))][i % 3],
        "s": ["", None, "ü\u0000\U0001F600,:/="][i % 3],
        "f": [float("nan"), float("inf"), float("-inf"), -0.0, 5e-324, 1.7976931348623157e308][i % 6],
        "f32": [float("nan"), float("inf"), -0.0, 1.401298464324817e-45, 3.4028234663852886e38, None][i % 6],
        "st": [None, {"a": None, "b": None, "c": None}, {"a": ts, "b": "", "c": {"x": None}}][i % 3],
        "li": [None, [], [None, ts, None]][i % 3],
        "ls": [None, [None], [{"q": None}, None, {"q": "z"}]][i % 3],
        "mp": [None, [], [("k", None), ("", ts)]][i % 3],
        "i8": -128 if neg else 127, "i16": -32768 if neg else 32767, "b": None if i % 3 == 0 else bool(neg),
    }


def _same(value: Any) -> Any:
    """NaN equal to NaN, -0.0 told from 0.0, zones to UTC; nested values compared the same way."""
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else (value, math.copysign(1.0, value))
    if isinstance(value, datetime.datetime):
        return value.astimezone(UTC)
    if isinstance(value, dict):
        return {k: _same(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_same(v) for v in value]
    return value


def _hudi_rs(base: str) -> dict[str, dict[str, Any]]:
    """hudi-rs's snapshot as Python values (not normalized to text: the values themselves)."""
    from hudi import HudiReadOptions, HudiTableBuilder

    batches = list(HudiTableBuilder.from_base_uri(base).build().read(HudiReadOptions()))
    return {r["id"]: r for r in pa.Table.from_batches(batches).select(SCHEMA.names).to_pylist()}


def _assert_reads(base: str, model: dict[str, dict[str, Any]], step: str) -> None:
    ours = {r["id"]: r for r in read_table(base).select(SCHEMA.names).to_pylist()}
    theirs = _hudi_rs(base)
    for name, rows in (("ours", ours), ("hudi-rs", theirs)):
        assert set(rows) == set(model), (step, name)
        bad = [(k, col, model[k][col], rows[k][col]) for k in model for col in SCHEMA.names
               if _same(rows[k][col]) != _same(model[k][col])]
        assert bad == [], (step, name)


@pytest.mark.parametrize("version,table_type", [(6, "COPY_ON_WRITE"), (9, "MERGE_ON_READ")])
def test_edge_values_survive_merges_logs_compaction_and_clustering(tmp_path: Path, version: int,
                                                                   table_type: str) -> None:
    base = str(tmp_path / "t")
    cfg = {"hoodie.table.name": "t", "hoodie.table.type": table_type, "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.parquet.small.file.limit": "0", "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
    if version != 6:
        cfg["hoodie.write.table.version"] = str(version)
    model: dict[str, dict[str, Any]] = {}

    def write(rows: list[dict[str, Any]], operation: str, step: str) -> None:
        write_arrow(base, pa.Table.from_pylist(rows, schema=SCHEMA), operation, cfg)
        model.update({r["id"]: r for r in rows})
        _assert_reads(base, model, step)

    write([_row(i, 1) for i in range(12)], "bulk_insert", "bulk_insert")
    write([_row(i, 2) for i in range(0, 12, 2)], "upsert", "update (a COW merge / a MOR log)")
    if table_type == "MERGE_ON_READ":
        c.schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True)
        c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(cfg))
        _assert_reads(base, model, "compaction")
    write([_row(i, 3) for i in range(1, 12, 3)], "upsert", "second update")
    result = cu.run_clustering(HoodieTable.load(base), HoodieConfig(
        {**cfg, "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)}), LocalExecutor())
    assert result.get("state") == "completed"
    _assert_reads(base, model, "clustering")


def test_a_time_of_day_in_milliseconds_takes_merge_on_read_updates(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.parquet.small.file.limit": "0", "hoodie.metadata.index.column.stats.enable": "true"}
    times = pa.array([datetime.time(23, 59, 59, 999000), datetime.time(0, 0)], pa.time32("ms"))
    write_arrow(base, pa.table({"id": ["a", "b"], "p": ["p0", "p0"], "ts": [1, 1], "x": times}), "upsert", cfg)
    write_arrow(base, pa.table({"id": ["b"], "p": ["p0"], "ts": [2], "x": times.slice(0, 1)}), "upsert", cfg)
    assert read_table(base, columns=["id", "x"]).sort_by("id").column("x").to_pylist() == [times[0].as_py()] * 2
