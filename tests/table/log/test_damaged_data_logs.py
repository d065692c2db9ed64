"""A damaged data log is skipped as Hudi skips it, but never in silence (issue 35).

Hudi's log reader turns a block whose framing does not hold into a corrupt block and the
merged scan leaves it out; we do the same, and log one warning per read naming the file. When
the listing came from the metadata table, which records each file's size when its instant
commits, a file now smaller than that lost committed blocks: the warning says so, even for a
file cut exactly at a block boundary, where no block reads as corrupt."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.read import read_table
from tests.actions.services_fixtures import batch, table_config
from tests.actions.table_versions import table_version  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("table_version")

LOGGER = "airflow_hoodie.table.log.log_reader"


def mor_with_updates(tmp_path: Path) -> tuple[Path, Path]:
    """100 keys, then 10 of them updated (ts 2) into a log file; returns (base, that log)."""
    base = tmp_path / "t"
    cfg = table_config("MERGE_ON_READ")
    write_arrow(str(base), batch(range(0, 100), 1), "upsert", cfg)
    write_arrow(str(base), batch(range(0, 20, 2), 2), "upsert", cfg)  # k0000, k0002, ...: all in p0
    logs = [p for p in (base / "p0").iterdir() if ".log." in p.name]
    assert len(logs) == 1, logs
    return base, logs[0]


def warnings_naming(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno == logging.WARNING and name in r.getMessage()]


def updated(base: Path, **kw) -> int:
    rows = read_table(str(base), **kw)
    assert rows.num_rows == 100  # the damaged updates are lost; no row goes missing
    return sum(1 for t in rows.column("ts").to_pylist() if t == 2)


@pytest.mark.parametrize("metadata_enable", [True, False])
def test_a_truncated_data_log_block_is_skipped_with_one_warning_naming_the_file(tmp_path, caplog, metadata_enable):
    base, log = mor_with_updates(tmp_path)
    assert updated(base) == 10
    size = log.stat().st_size
    log.write_bytes(log.read_bytes()[:-9])
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert updated(base, metadata_enable=metadata_enable) == 0
    found = warnings_naming(caplog, log.name)
    assert len(found) == 1, found
    assert "corrupt or truncated block at byte 0" in found[0]
    # the metadata table recorded the file's size when the update committed: the mismatch is named
    assert (f"metadata table records {size}" in found[0]) is metadata_enable


def test_a_data_log_cut_at_a_block_boundary_is_reported_by_its_recorded_size(tmp_path, caplog):
    base, log = mor_with_updates(tmp_path)
    size = log.stat().st_size
    log.write_bytes(b"")  # no block left to read as corrupt: only the recorded size tells
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert updated(base) == 0
    found = warnings_naming(caplog, log.name)
    assert len(found) == 1, found
    assert f"the file is 0 bytes on storage but the metadata table records {size}" in found[0]


def test_an_intact_table_reads_without_a_warning(tmp_path, caplog):
    base, _log = mor_with_updates(tmp_path)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert updated(base) == 10
    assert not [r for r in caplog.records if r.name == LOGGER]
