"""External proof: hudi-rs (PyPI ``hudi``) reads the log blocks we write.

Each test copies a MOR table real Hudi wrote, rewrites or appends log blocks with our
writer, and checks hudi-rs' snapshot read.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.table.log.data_block import (
    avro_data_block,
    decode_data_block,
    parquet_data_block,
)
from airflow_hoodie.table.log.delete_block import DeleteRecord, delete_block
from airflow_hoodie.table.log.log_block import rollback_command_block, serialize_block
from airflow_hoodie.table.log.log_reader import read_log_blocks
from airflow_hoodie.table.log.log_writer import LogWriter
from airflow_hoodie.table.storage.storage import Storage

hudi = pytest.importorskip("hudi")

STORAGE = Storage.local()
TRIPS_FILE_ID = "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0"
TRIPS_BASE = "20250331030642808"
TRIPS_LOG_INSTANT = "20250331030645735"


def _copy(conformance: Path, name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(conformance / "tables/mor" / name, dst)
    for p in dst.rglob("*"):
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    dst.chmod(dst.stat().st_mode | stat.S_IWUSR)
    return dst


def _snapshot(path: Path) -> dict[str, dict]:
    table = hudi.HudiTableBuilder.from_base_uri(str(path)).build()
    rows = pa.Table.from_batches(table.read()).to_pylist()
    return {r["_hoodie_record_key"]: r for r in rows}


@pytest.mark.parametrize(
    "name,kind",
    [("v6_trips_8i1u", "avro"), ("v6_trips_8i1u", "parquet"),
     ("v6_nonpartitioned", "avro"), ("v6_nonpartitioned", "parquet")],
)
def test_hudi_rs_reads_our_reencoded_data_blocks(conformance, tmp_path, name, kind):
    table = _copy(conformance, name, tmp_path)
    before = _snapshot(table)
    encode = avro_data_block if kind == "avro" else parquet_data_block
    for log in table.rglob(".*.log.*"):
        blocks = list(read_log_blocks(STORAGE, str(log)))
        log.write_bytes(b"".join(
            serialize_block(encode(decode_data_block(b), b.schema, b.instant_time)) for b in blocks))
    assert _snapshot(table) == before


def test_hudi_rs_applies_our_delete_block(conformance, tmp_path):
    table = _copy(conformance, "v6_trips_8i1u", tmp_path)
    before = _snapshot(table)
    key = "334e26e9-8355-45cc-97c6-c31daf0df330"  # in the base file of that file group
    assert key in before
    with LogWriter(STORAGE, str(table / "city=san_francisco"), TRIPS_FILE_ID, TRIPS_BASE, "0-0-0") as w:
        [res] = w.append([delete_block([DeleteRecord(key, "city=san_francisco", None)], TRIPS_LOG_INSTANT)])
    assert res.offset > 0  # appended to the existing log file
    after = _snapshot(table)
    assert key not in after and len(after) == len(before) - 1


def test_hudi_rs_applies_our_rollback_block(conformance, tmp_path):
    table = _copy(conformance, "v6_trips_8i1u", tmp_path)
    key = "9909a8b1-2d15-4d3d-8ec9-efc48c536a00"
    assert _snapshot(table)[key]["_hoodie_commit_time"] == TRIPS_LOG_INSTANT
    with LogWriter(STORAGE, str(table / "city=san_francisco"), TRIPS_FILE_ID, TRIPS_BASE, "0-0-0") as w:
        w.append([rollback_command_block("20250331030646000", TRIPS_LOG_INSTANT)])
    assert _snapshot(table)[key]["_hoodie_commit_time"] == TRIPS_BASE  # back to the base row
