"""Silent timeline faults made loud: an unreadable latest commit, stale temp files."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.read import read_table

CONF = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts"}


def _table(tmp_path):
    base = tmp_path / "t"
    write_arrow(str(base), pa.table({"id": [1, 2], "ts": [1, 1]}), "upsert", CONF, table_name="t")
    write_arrow(str(base), pa.table({"id": [2, 3], "ts": [2, 2]}), "upsert", CONF)
    latest = sorted(p for p in (base / ".hoodie").iterdir() if p.name.endswith(".commit"))[-1]
    return base, latest


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage"])
def test_an_unreadable_latest_commit_stops_reads_and_writes_and_names_the_file(tmp_path, damage):
    base, latest = _table(tmp_path)
    good = latest.read_bytes()
    latest.write_bytes({"empty": b"", "truncated": good[: len(good) // 2], "garbage": b"\x00\xffnot json"}[damage])
    before = sorted(p.name for p in base.rglob("*"))
    with pytest.raises(HoodieCorruptedDataError, match=latest.name):
        read_table(str(base))
    with pytest.raises(HoodieCorruptedDataError, match="delete this one file"):
        write_arrow(str(base), pa.table({"id": [9], "ts": [9]}), "upsert", CONF)
    assert sorted(p.name for p in base.rglob("*")) == before  # the table is left as it was
    # the remedy the message gives: the instant goes pending and the next write rolls it back
    latest.unlink()
    quick = {**CONF, "hoodie.client.heartbeat.interval_in_ms": "100"}  # a 200 ms window for the test
    time.sleep(0.3)
    result = write_arrow(str(base), pa.table({"id": [9], "ts": [9]}), "upsert", quick)
    assert result.rolled_back == [latest.name.split(".")[0]]
    assert sorted(read_table(str(base), columns=["id"]).column("id").to_pylist()) == [1, 2, 9]


def test_a_writer_removes_stale_temp_files_only(tmp_path):
    base, _ = _table(tmp_path)
    stale = base / ".hoodie" / "20240101000000000.commit.0123abcd.tmp"
    fresh = base / ".hoodie" / "20240101000000001.commit.4567cdef.tmp"
    stale.write_bytes(b"{}")
    fresh.write_bytes(b"{}")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert len(read_table(str(base))) == 3  # readers ignore them
    write_arrow(str(base), pa.table({"id": [4], "ts": [3]}), "upsert", CONF)
    assert not stale.exists() and fresh.exists()
