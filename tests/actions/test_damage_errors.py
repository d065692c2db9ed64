"""Errors about damage name the file that is damaged, and their advice works (issue 35).

- a truncated files-partition log used to be reported as a *data* log "missing", with advice
  to restore to a savepoint, though the data file was on storage: the metadata log is what is
  damaged. A read now lists storage instead (naming the damaged log in a warning); a write
  stops naming it, and the advice (one write with the metadata table disabled) works;
- the metadata table's hoodie.properties removed: the error advised an upsert, which failed
  the same way;
- garbage in an older commit file: the error named no file."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow.compute as pc
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieError, HoodieMetadataDamagedError
from airflow_hoodie.table.read import read_table
from tests.actions.services_fixtures import batch, table_config
from tests.actions.table_versions import table_version  # noqa: F401 - fixture
from tests.table.normalize import hudi_rs_rows

pytestmark = pytest.mark.usefixtures("table_version")


def mor_table(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    base = tmp_path / "t"
    cfg = table_config("MERGE_ON_READ")
    write_arrow(str(base), batch(range(0, 100), 1), "upsert", cfg)
    write_arrow(str(base), batch(range(0, 20, 2), 2), "upsert", cfg)  # a log file in p0
    write_arrow(str(base), batch(range(100, 110), 3), "upsert", cfg)
    return base, cfg


def newest_files_log(base: Path) -> Path:
    logs = [p for p in (base / ".hoodie" / "metadata" / "files").iterdir() if ".log." in p.name]
    return max(logs, key=lambda p: p.stat().st_mtime_ns)


def by_ts(base: Path) -> dict[int, int]:
    counts = pc.value_counts(read_table(str(base)).column("ts"))
    return {c["values"].as_py(): c["counts"].as_py() for c in counts}


def test_a_truncated_files_partition_log_is_named_and_reads_list_storage(tmp_path, caplog):
    base, cfg = mor_table(tmp_path)
    expected = by_ts(base)
    assert expected == {1: 90, 2: 10, 3: 10}
    torn = newest_files_log(base)
    torn.write_bytes(torn.read_bytes()[:-9])
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert by_ts(base) == expected  # from a storage listing, not "a data log is missing"
    named = [r.getMessage() for r in caplog.records if torn.name in r.getMessage()]
    assert len(named) == 1, named  # once per read
    assert "files partition is damaged" in named[0] and "hoodie.metadata.enable=false" in named[0]
    assert "lists storage instead" in named[0]
    # a write does not build on it: it stops naming the metadata log, not a data file
    with pytest.raises(HoodieMetadataDamagedError) as err:
        write_arrow(str(base), batch(range(0, 5), 4), "upsert", cfg)
    msg = str(err.value)
    assert torn.name in msg and ".hoodie/metadata/files" in msg
    assert "savepoint" not in msg and "missing" not in msg
    assert by_ts(base) == expected
    # the advice works: one write with the metadata table disabled, then writes with it enabled
    write_arrow(str(base), batch(range(0, 5), 4), "upsert", {**cfg, "hoodie.metadata.enable": "false"})
    write_arrow(str(base), batch(range(5, 10), 5), "upsert", cfg)
    assert (base / ".hoodie" / "metadata" / "files").exists()
    assert by_ts(base) == {1: 85, 2: 5, 3: 10, 4: 5, 5: 5}
    assert len(hudi_rs_rows(str(base))) == 110


def test_a_metadata_table_without_hoodie_properties_is_named_and_the_next_write_rebuilds_it(tmp_path, caplog):
    base = tmp_path / "t"
    cfg = table_config("MERGE_ON_READ", **{"hoodie.metadata.record.index.enable": "true",
                                           "hoodie.index.type": "RECORD_INDEX"})
    write_arrow(str(base), batch(range(0, 100), 1), "upsert", cfg)
    write_arrow(str(base), batch(range(0, 20, 2), 2), "upsert", cfg)
    props = base / ".hoodie" / "metadata" / ".hoodie" / "hoodie.properties"
    props.unlink()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert by_ts(base) == {1: 90, 2: 10}  # reads list storage, as Hudi's readers do
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "metadata/.hoodie/hoodie.properties is missing" in said
    assert "create one by running an upsert" not in said  # the advice that did not work
    assert "next write with hoodie.metadata.enable=true" in said
    # the advice works: the next write (metadata table enabled) removes it and builds it anew
    result = write_arrow(str(base), batch(range(0, 10), 3), "upsert", cfg)
    assert (result.inserts, result.updates) == (0, 10)
    assert props.exists()
    assert (base / ".hoodie" / "metadata" / "record_index").exists()
    result = write_arrow(str(base), batch(range(95, 105), 4), "upsert", cfg)  # tagged by the rebuilt index
    assert (result.inserts, result.updates) == (5, 5)
    assert by_ts(base) == {1: 80, 2: 5, 3: 10, 4: 10}
    assert len(hudi_rs_rows(str(base))) == 105


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("metadata", ["true", "false"])
def test_garbage_in_an_older_commit_file_is_named(tmp_path, table_type, metadata):
    base = tmp_path / "t"
    cfg = {**table_config(table_type), "hoodie.metadata.enable": metadata}
    for n, ids in enumerate([range(0, 100), range(0, 20, 2), range(0, 20, 3)], start=1):
        write_arrow(str(base), batch(ids, n), "upsert", cfg)
    timeline = base / ".hoodie" / "timeline" if (base / ".hoodie" / "timeline").exists() else base / ".hoodie"
    first = sorted(p for p in timeline.iterdir() if p.name.endswith(("commit", "deltacommit")))[0]
    good = first.read_bytes()
    first.write_bytes(b"\x00garbage{not json" * 10)
    calls = {"read": lambda: read_table(str(base)),
             "incremental read": lambda: read_table(str(base), query_type="incremental", start="000"),
             "write": lambda: write_arrow(str(base), batch(range(0, 5), 4), "upsert", cfg)}
    for what, call in calls.items():
        with pytest.raises(HoodieError) as err:
            call()
        assert str(first) in str(err.value), what
        assert "Restore this file from a backup" in str(err.value) and "Do not delete it" in str(err.value)
    # the advice works: the file put back, the table reads and writes again
    first.write_bytes(good)
    write_arrow(str(base), batch(range(0, 5), 4), "upsert", cfg)
    assert by_ts(base)[4] == 5
