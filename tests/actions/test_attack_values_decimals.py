"""Attack: decimals wider than Python's default decimal context (28 significant digits). Hudi
keeps a decimal(38, s) column's bounds exactly (V2: the unscaled bytes; V1: a decimal(30, 15)
wrapper); if our filter value or a bound we compute is rounded, data skipping compares the wrong
numbers and a filtered read leaves out the file holding the row, without a word. A bound we
store rounded (a MERGE_ON_READ log file's, computed from its records) misleads every Hudi reader
with data skipping too."""

from __future__ import annotations

import decimal
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.stats_reader import index_partition_files, read_index_records
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.metadata_table.column_stats import unwrap_value

WIDE = pa.decimal128(38, 10)
#: 38 digits: its 28-digit rounding is ...677 (and a 30-digit one ...677.50, which rounds on to ...678)
VALUE = decimal.Decimal("1234567890123456789012345677.4999999999")


def _bound(wrapped: object) -> decimal.Decimal:
    """A stored V2 decimal bound, exactly: the unscaled bytes at the column's scale."""
    value = unwrap_value(wrapped)
    assert isinstance(value, bytes), value
    with decimal.localcontext(decimal.Context(prec=100)):
        return decimal.Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-WIDE.scale)


def _config(version: int, table_type: str) -> dict[str, str]:
    cfg = {"hoodie.table.name": "t", "hoodie.table.type": table_type, "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.metadata.index.column.stats.enable": "true", "hoodie.parquet.small.file.limit": "0",
           "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
    if version != 6:
        cfg["hoodie.write.table.version"] = str(version)
    return cfg


def _rows(ids: list[str], ts: int, value: decimal.Decimal) -> pa.Table:
    return pa.table({"id": ids, "p": ["p0"] * len(ids), "ts": [ts] * len(ids), "d": pa.array([value] * len(ids), WIDE)})


@pytest.mark.parametrize("version", [6, 9])
def test_a_filter_on_a_38_digit_decimal_keeps_its_rows(tmp_path: Path, version: int) -> None:
    """COW: the base file holding ``VALUE`` must survive data skipping for ``d == VALUE``."""
    base = str(tmp_path / "t")
    cfg = _config(version, "COPY_ON_WRITE")
    write_arrow(base, _rows(["a", "b"], 1, decimal.Decimal(1)), "upsert", cfg)
    write_arrow(base, _rows(["c"], 1, VALUE), "upsert", cfg)
    for op in ("==", ">=", "<="):
        listed = read_table(base, columns=["id"], filters=[("d", op, VALUE)], metadata_enable=False)
        skipped = read_table(base, columns=["id"], filters=[("d", op, VALUE)])
        assert sorted(skipped.column("id").to_pylist()) == sorted(listed.column("id").to_pylist()), op
    assert read_table(base, columns=["id"], filters=[("d", "==", VALUE)]).column("id").to_pylist() == ["c"]


def test_a_log_files_column_stats_keep_a_38_digit_decimal_exact(tmp_path: Path) -> None:
    """MOR v9: the update goes to a log file; its column_stats bounds (V2: exact unscaled bytes)
    must be the value itself. (V1's decimal(30, 15) wrapper cannot hold 43 digits at all.)"""
    base = str(tmp_path / "t")
    cfg = _config(9, "MERGE_ON_READ")
    write_arrow(base, _rows(["a"], 1, decimal.Decimal(1)), "upsert", cfg)
    write_arrow(base, _rows(["a"], 2, VALUE), "upsert", cfg)
    table = HoodieTable.load(base)
    bounds = {(m["fileName"], _bound(m["minValue"]), _bound(m["maxValue"]))
              for m in (r["ColumnStatsMetadata"] for r in read_index_records(
                  index_partition_files(table, "column_stats")).values()) if m["columnName"] == "d"}
    logs = {(lo, hi) for name, lo, hi in bounds if ".log." in name}
    assert logs == {(VALUE, VALUE)}, bounds
    assert read_table(base, columns=["id"], filters=[("d", "==", VALUE)]).column("id").to_pylist() == ["a"]
