"""Attack on the base-file writer's dictionary choice (``dictionary_columns``, 9776a75): it
decides per column on the first 4,096 values whether a dictionary pays. Whatever it decides,
every value must read back as written, through a COW merge (the file rewritten) and a MOR
compaction (logs merged into a new base file), by our reader and by hudi-rs: nulls, a column
that is all null, binaries, decimals, dates and timestamps, nested structs, lists and maps,
strings far over a page, and columns whose first 4,096 values differ from the rest (unique
then constant, constant then unique)."""

from __future__ import annotations

import datetime
import decimal
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.file_group.base_file_writer import DICTIONARY_SAMPLE_ROWS
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows, normalize_table

ROWS = DICTIONARY_SAMPLE_ROWS + 404
SCHEMA = pa.schema([
    ("id", pa.string()), ("p", pa.string()), ("ts", pa.int64()),
    ("s_null", pa.string()), ("all_null", pa.string()), ("b", pa.binary()),
    ("dec", pa.decimal128(12, 3)), ("dt", pa.date32()), ("tsu", pa.timestamp("us", tz="UTC")),
    ("f", pa.float64()), ("i", pa.int32()),
    ("st", pa.struct([("x", pa.int64()), ("y", pa.string())])),
    ("li", pa.list_(pa.int64())), ("m", pa.map_(pa.string(), pa.int64())),
    ("long", pa.string()), ("unique_first", pa.string()), ("constant_first", pa.int64()),
])


def _rows(keys: list[int], ts: int, rng: random.Random) -> list[dict[str, Any]]:
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return [{
        "id": f"k{k:05d}", "p": "p0", "ts": ts,
        "s_null": None if rng.random() < 0.3 else rng.choice(["x", "yy", ""]),
        "all_null": None,
        "b": None if rng.random() < 0.2 else bytes(rng.randrange(256) for _ in range(rng.randrange(0, 5))),
        "dec": None if rng.random() < 0.1 else decimal.Decimal(rng.randrange(-10 ** 11, 10 ** 11)).scaleb(-3),
        "dt": datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randrange(-40000, 40000)),
        "tsu": epoch + datetime.timedelta(microseconds=rng.randrange(-10 ** 15, 10 ** 15)),
        "f": None if rng.random() < 0.1 else rng.choice([0.1, -0.0, 1e300, rng.random()]),
        "i": rng.choice([0, -2 ** 31, 2 ** 31 - 1, rng.randrange(-5, 5)]),
        "st": None if rng.random() < 0.1 else {"x": rng.randrange(3), "y": None if rng.random() < 0.5 else "s"},
        "li": None if rng.random() < 0.1 else [rng.randrange(3) for _ in range(rng.randrange(4))],
        "m": None if rng.random() < 0.1 else [(f"k{j}", rng.randrange(9)) for j in range(rng.randrange(3))],
        "long": ("L" * 70_000 + str(k)) if k % 1201 == 0 else f"v{k % 7}",
        # the writer samples a column's first 4,096 rows: here they say the opposite of the rest
        "unique_first": f"u{k}-{ts}" if k < DICTIONARY_SAMPLE_ROWS else "same",
        "constant_first": 7 if k < DICTIONARY_SAMPLE_ROWS else k * 1000 + ts,
    } for k in keys]


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


@pytest.mark.parametrize("version, table_type", [(6, "COPY_ON_WRITE"), (9, "MERGE_ON_READ")])
def test_every_value_reads_back_whatever_the_dictionary_choice(tmp_path: Path, version: int, table_type: str) -> None:
    rng = random.Random(version)
    base = str(tmp_path / "t")
    cfg = {"hoodie.table.name": "t", "hoodie.table.type": table_type, "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.parquet.small.file.limit": "0", "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
    if version != 6:
        cfg["hoodie.write.table.version"] = str(version)
    model = {r["id"]: r for r in _rows(list(range(ROWS)), 1, rng)}
    write_arrow(base, _table(list(model.values())), "upsert", cfg)
    # updates across the sample boundary plus new keys: a COW merge rewrites the file, a MOR
    # write logs them and the compaction below rewrites the base file
    changed = _rows(sorted(rng.sample(range(ROWS + 300), 900)), 2, rng)
    write_arrow(base, _table(changed), "upsert", cfg)
    model.update({r["id"]: r for r in changed})
    if table_type == "MERGE_ON_READ":
        assert c.schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True).instant is not None
        assert c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(cfg))["state"] == \
            "completed"
    latest: dict[str, Path] = {}  # file group -> its newest base file
    for f in sorted((Path(base) / "p0").glob("*.parquet"), key=lambda f: f.name.rsplit("_", 1)[-1]):
        latest[f.name.split("_", 1)[0]] = f
    written = pa.concat_tables(pq.read_table(f).select(SCHEMA.names) for f in latest.values())
    assert max(pq.ParquetFile(f).metadata.num_rows for f in latest.values()) > DICTIONARY_SAMPLE_ROWS
    expected = normalize_table(_table(list(model.values())))
    assert normalize_table(written) == expected  # the files themselves, read by pyarrow
    ours = read_table(base)
    assert normalize_table(ours.select(SCHEMA.names)) == expected
    assert hudi_rs_rows(base) == normalize_table(ours)
