"""Damage in a metadata-table partition is never silence (issue 35, F2).

A record-index log that lost its last bytes (a torn copy) used to be read as if the keys of
its block were absent: the next upsert inserted them again and the table held each twice.
A damaged partition must make the job stop and name the file, or fall back to a lookup that
is correct; it must never answer "key absent"."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pyarrow.compute as pc
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieMetadataDamagedError
from airflow_hoodie.table.read import read_table
from tests.actions.services_fixtures import batch, table_config
from tests.actions.table_versions import table_version  # noqa: F401 - fixture
from tests.table.normalize import hudi_rs_rows

pytestmark = pytest.mark.usefixtures("table_version")

RI = {"hoodie.metadata.record.index.enable": "true", "hoodie.index.type": "RECORD_INDEX"}


def newest_log(folder: Path) -> Path:
    logs = [p for p in folder.iterdir() if ".log." in p.name]
    assert logs, f"no log files under {folder}"
    return max(logs, key=lambda p: p.stat().st_mtime_ns)


def truncate(path: Path, n: int) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:-n])


def keys_twice(base: Path) -> list[str]:
    keys = read_table(str(base)).column("_hoodie_record_key")
    counts = pc.value_counts(keys)
    return [c["values"].as_py() for c in counts if c["counts"].as_py() > 1]


def torn_record_index(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    base = tmp_path / "t"
    cfg = table_config("MERGE_ON_READ", **RI)
    write_arrow(str(base), batch(range(0, 1000), 1), "upsert", cfg)
    write_arrow(str(base), batch(range(1000, 1100), 2), "upsert", cfg)
    torn = newest_log(base / ".hoodie" / "metadata" / "record_index")
    truncate(torn, 9)
    return base, cfg, torn


def test_a_torn_record_index_log_stops_the_upsert_naming_the_file(tmp_path):
    base, cfg, torn = torn_record_index(tmp_path)
    before = read_table(str(base)).num_rows
    with pytest.raises(HoodieMetadataDamagedError) as err:
        write_arrow(str(base), batch(range(0, 1100), 3), "upsert", cfg)
    msg = str(err.value)
    # today: accepted as 10 inserts and 1090 updates, leaving 10 keys twice
    assert torn.name in msg and "record_index" in msg
    assert "hoodie.metadata.enable=false" in msg
    # nothing was written: the same rows, no key twice, for our reader and hudi-rs
    assert read_table(str(base)).num_rows == before == 1100
    assert not keys_twice(base)
    assert len(hudi_rs_rows(str(base))) == 1100


def test_following_the_advice_rebuilds_the_index_and_the_upsert_updates(tmp_path):
    base, cfg, _torn = torn_record_index(tmp_path)
    with pytest.raises(HoodieMetadataDamagedError):
        write_arrow(str(base), batch(range(0, 1100), 3), "upsert", cfg)
    # the advice: one write with the metadata table disabled drops it ...
    write_arrow(str(base), batch(range(0, 10), 3), "upsert", {**cfg, "hoodie.metadata.enable": "false"})
    assert not (base / ".hoodie" / "metadata").exists()
    # ... and the next write with it enabled rebuilds it, record index included
    result = write_arrow(str(base), batch(range(0, 1100), 4), "upsert", cfg)
    assert (base / ".hoodie" / "metadata" / "record_index").exists()
    assert (result.inserts, result.updates) == (0, 1100)
    rows = read_table(str(base))
    assert rows.num_rows == 1100
    assert not keys_twice(base)
    assert set(pc.unique(rows.column("ts")).to_pylist()) == {4}
    assert len(hudi_rs_rows(str(base))) == 1100


STATS = {"hoodie.metadata.index.column.stats.enable": "true",
         "hoodie.metadata.index.partition.stats.enable": "true"}


def torn_since(folder: Path, since_ns: int) -> list[Path]:
    """Cut 9 bytes off every log of ``folder`` written since ``since_ns`` (the last write's
    blocks, in whichever file groups its keys hashed to)."""
    logs = [p for p in folder.iterdir() if ".log." in p.name and p.stat().st_mtime_ns >= since_ns]
    assert logs, f"no log written under {folder}"
    for p in logs:
        truncate(p, 9)
    return logs


def test_a_torn_statistics_log_prunes_nothing_in_reads_and_stops_writes(tmp_path, caplog, table_version):  # noqa: F811
    # Hudi 0.14 (table version 6) has no partition_stats partition
    for partition in ["column_stats"] + (["partition_stats"] if table_version >= 8 else []):
        torn_statistics(tmp_path / partition, caplog, partition)


def torn_statistics(base: Path, caplog: pytest.LogCaptureFixture, partition: str) -> None:
    cfg = table_config("COPY_ON_WRITE", **STATS)
    for start in range(0, 300, 100):  # file groups with disjoint ranges of v
        write_arrow(str(base), batch(range(start, start + 100), 1), "upsert", cfg)
    since = time.time_ns()
    write_arrow(str(base), batch(range(300, 310), 2), "upsert", cfg)
    filters = [("v", ">=", 10300)]
    full = sorted(read_table(str(base), filters=filters, metadata_enable=False).column("id").to_pylist())
    assert full == [f"k{i:04d}" for i in range(300, 310)]
    torn = torn_since(base / ".hoodie" / "metadata" / partition, since)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert sorted(read_table(str(base), filters=filters).column("id").to_pylist()) == full
    named = [r.getMessage() for r in caplog.records if any(t.name in r.getMessage() for t in torn)]
    assert len(named) == 1, named  # once per read
    assert f"{partition} partition is damaged" in named[0] and "prunes nothing" in named[0]
    with pytest.raises(HoodieMetadataDamagedError) as err:
        write_arrow(str(base), batch(range(300, 320), 3), "upsert", cfg)
    assert any(t.name in str(err.value) for t in torn)
    # the advice works
    write_arrow(str(base), batch(range(300, 320), 3), "upsert", {**cfg, "hoodie.metadata.enable": "false"})
    write_arrow(str(base), batch(range(320, 330), 4), "upsert", cfg)
    assert (base / ".hoodie" / "metadata" / partition).exists()
    got = sorted(read_table(str(base), filters=filters).column("id").to_pylist())
    assert got == [f"k{i:04d}" for i in range(300, 330)]


def test_a_torn_tail_past_the_committed_bytes_is_a_crash_leftover_and_skipped(tmp_path):
    """A writer killed while appending leaves a partial block after the bytes every completed
    delta commit recorded: it never held a committed record, so it is skipped as Hudi skips it,
    and the index still answers for every key (no refusal, no duplicate)."""
    base = tmp_path / "t"
    cfg = table_config("MERGE_ON_READ", **RI)
    write_arrow(str(base), batch(range(0, 1000), 1), "upsert", cfg)
    write_arrow(str(base), batch(range(1000, 1100), 2), "upsert", cfg)
    log = newest_log(base / ".hoodie" / "metadata" / "record_index")
    with open(log, "ab") as out:  # the magic, a size, and the first bytes of a block: nothing more
        out.write(b"#HUDI#" + (5000).to_bytes(8, "big") + b"\x00\x00\x00\x01" + b"\x00" * 20)
    result = write_arrow(str(base), batch(range(0, 1100), 3), "upsert", cfg)
    assert (result.inserts, result.updates) == (0, 1100)
    assert read_table(str(base)).num_rows == 1100
    assert not keys_twice(base)
