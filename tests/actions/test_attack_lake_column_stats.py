"""Attack: the metadata table's ``column_stats`` must keep each file's true min/max through
everything that rewrites its records, because a filtered read skips a file on them: a stored
bound a hair off the real one drops rows without a word. Checked against the file's own values
(pyarrow), and through filtered reads with and without the metadata table. (The metadata
table's compaction keeping the wrappers is tests/table/metadata_table/test_column_stats_wrappers.py,
dfe1705, found by this attack.)"""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import assert_metadata_describes_storage


def _config(version: int, **extra: str) -> dict[str, str]:
    cfg = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.metadata.index.column.stats.enable": "true", "hoodie.time.generator.max_expected_clock_skew_ms": "0",
           **extra}
    if version != 6:
        cfg["hoodie.write.table.version"] = str(version)
    return cfg


#: a column per type whose statistics Hudi keeps (nested columns have none)
EDGE_SCHEMA = pa.schema([
    ("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
    ("s", pa.string()), ("all_null", pa.string()), ("b", pa.binary()), ("dec", pa.decimal128(10, 2)),
    ("dt", pa.date32()), ("tsu", pa.timestamp("us", tz="UTC")), ("f", pa.float64()), ("f32", pa.float32()),
    ("i", pa.int32()), ("flag", pa.bool_()), ("long", pa.string()),
])


def _edge_rows(keys: range, ts: int) -> list[dict[str, Any]]:
    out = []
    for k in keys:
        out.append({
            "id": f"k{k:03d}", "p": f"p{k % 2}", "ts": ts, "s": None if k % 3 == 0 else f"s{(k * ts) % 7}",
            "all_null": None, "b": None if k % 4 == 0 else bytes([k % 256, ts % 256]),
            "dec": None if k % 5 == 0 else decimal.Decimal(k * 37 - 500 + ts) / 100,
            "dt": datetime.date(1969, 12, 25) + datetime.timedelta(days=k * ts),
            "tsu": datetime.datetime(1969, 12, 31, 23, tzinfo=datetime.timezone.utc)
            + datetime.timedelta(seconds=k * ts),
            "f": None if k % 6 == 0 else (k - 20) / 10 + ts / 1000, "f32": (k - 20) / 4,
            "i": [-2 ** 31, 2 ** 31 - 1, k][k % 3], "flag": None if k % 7 == 0 else bool(k % 2),
            # > 4 KiB: parquet writers keep no min/max for it; the index must not invent one
            "long": ("L" * 5000 + str(k)) if k == 3 else f"v{k % 5}",
        })
    return out


@pytest.mark.parametrize("version", [6, 9])
def test_column_stats_of_edge_values_equal_the_files_and_filtered_reads_keep_every_row(tmp_path: Path,
                                                                                       version: int) -> None:
    """Nulls, an all-null column, binaries, decimals, dates and timestamps before the epoch,
    int32 extremes, float32, booleans and an over-long string, written then merged (COW)."""
    base = str(tmp_path / "t")
    cfg = _config(version)
    model = {r["id"]: r for r in _edge_rows(range(40), 1)}
    write_arrow(base, pa.Table.from_pylist(list(model.values()), schema=EDGE_SCHEMA), "upsert", cfg)
    changed = _edge_rows(range(0, 60, 3), 2)
    write_arrow(base, pa.Table.from_pylist(changed, schema=EDGE_SCHEMA), "upsert", cfg)
    model.update({r["id"]: r for r in changed})
    assert_metadata_describes_storage(base, "the merge")
    rows = sorted(model.values(), key=lambda r: r["id"])
    probes = [("dec", "==", rows[7]["dec"]), ("dt", "<=", rows[1]["dt"]), ("tsu", ">=", rows[-1]["tsu"]),
              ("f", "==", rows[9]["f"]), ("f32", "<", -4.0), ("i", "==", -2 ** 31), ("b", "==", rows[5]["b"]),
              ("long", "==", "v2"), ("s", ">", "s5"), ("flag", "==", True), ("all_null", "==", "x")]
    for column, op, value in probes:
        kept = read_table(base, columns=["id"], filters=[(column, op, value)]).column("id").to_pylist()
        listed = read_table(base, columns=["id"], filters=[(column, op, value)], metadata_enable=False)
        assert sorted(kept) == sorted(listed.column("id").to_pylist()), (column, op, value)
    assert HoodieTable.load(base).config.table_version == version
