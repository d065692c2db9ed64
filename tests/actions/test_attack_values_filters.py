"""Attack: a filtered read prunes partitions by their paths and ``partition_stats`` and file
slices by ``column_stats``; whatever it prunes, it must return exactly the rows of the unfiltered
read filtered by pyarrow with the same expression. Probed on every value of every primitive
column of a MERGE_ON_READ table (base files and logs) with ``==, <, >=, !=, in, not in``: decimals,
timestamps before the epoch, dates, binary, strings with NUL and non-BMP characters, infinities,
-0.0, int extremes, booleans, all-null columns. (Decimals over 28 digits: test_attack_values_decimals.py.)"""

from __future__ import annotations

import datetime
import decimal
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.read import filters_to_expression, read_table

UTC = datetime.timezone.utc
SCHEMA = pa.schema([
    ("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()), ("d", pa.decimal128(12, 3)),
    ("t", pa.timestamp("us", tz="UTC")), ("dt", pa.date32()), ("bin", pa.binary()), ("s", pa.string()),
    ("f", pa.float64()), ("f32", pa.float32()), ("i", pa.int32()), ("b", pa.bool_()), ("none", pa.string()),
])


def _row(i: int, ts: int) -> dict[str, Any]:
    return {"id": f"k{i}", "p": ["p0", "p1", "p2"][i % 3], "ts": ts,
            "d": decimal.Decimal(i * 1234 - 5000 + ts).scaleb(-3),
            "t": datetime.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC) + datetime.timedelta(microseconds=i * 7 + ts),
            "dt": datetime.date(1900, 1, 1) + datetime.timedelta(days=i * 1000 + ts),
            "bin": [b"", None, bytes([i, 255 - i])][i % 3], "s": ["", None, f"\u0000{i}", f"\U0001F600{i}", f"\uFF21{i}"][i % 5],
            "f": [float("inf"), float("-inf"), -0.0, 0.0, i / 3 - ts][i % 5], "f32": (i - 6) / 4,
            "i": [-2 ** 31, 2 ** 31 - 1, i][i % 3], "b": None if i % 4 == 0 else bool(i % 2), "none": None}


def _table(tmp_path: Path, nan: bool = False) -> tuple[str, pa.Table]:
    base = str(tmp_path / "t")
    cfg = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.write.table.version": "9", "hoodie.parquet.small.file.limit": "0",
           "hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.index.partition.stats.enable": "true",
           "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
    rows = [_row(i, 1) for i in range(12)]
    if nan:
        rows[0]["f"] = rows[0]["f32"] = float("nan")
    write_arrow(base, pa.Table.from_pylist(rows, schema=SCHEMA), "upsert", cfg)
    write_arrow(base, pa.Table.from_pylist([_row(i, 2) for i in range(1, 12, 2)], schema=SCHEMA), "upsert", cfg)
    return base, read_table(base)


def _differences(base: str, full: pa.Table, probes: list[tuple[str, str, Any]]) -> list[Any]:
    out = []
    for flt in probes:
        got = sorted(read_table(base, columns=["id"], filters=[flt]).column("id").to_pylist())
        want = sorted(full.filter(filters_to_expression([flt], full.schema)).column("id").to_pylist())
        if got != want:
            out.append((flt, got, want))
    return out


def test_filtered_reads_equal_the_full_read_filtered_on_every_type(tmp_path: Path) -> None:
    base, full = _table(tmp_path)
    probes: list[tuple[str, str, Any]] = []
    for name in SCHEMA.names:
        values = sorted({repr(v): v for v in full.column(name).to_pylist() if v is not None}.items())
        picked = [v for _, v in values][:: max(1, len(values) - 1)]  # the smallest and the largest
        probes += [(name, op, v) for v in picked for op in ("==", "<", ">=", "!=")]
        if picked:
            probes += [(name, "in", picked), (name, "not in", picked[:1])]
    probes.append(("none", "==", "x"))
    assert len(probes) > 100
    assert _differences(base, full, probes) == []


def test_an_in_filter_on_nan_keeps_the_nan_rows(tmp_path: Path) -> None:
    base, full = _table(tmp_path, nan=True)
    assert math.isnan(full.filter(filters_to_expression([("id", "==", "k0")], full.schema)).column("f")[0].as_py())
    assert _differences(base, full, [("f", "in", [float("nan")]), ("f32", "in", [float("nan")])]) == []
