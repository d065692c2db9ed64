"""Failed writes are rolled back by the next write (or explicitly): files, log blocks, timeline."""

from __future__ import annotations

import multiprocessing
import os
import signal

import pytest

from airflow_hoodie.actions.rollback import rollback_instant, rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_write import conf
from tests.actions.write_model import actual, to_arrow
from tests.table.normalize import hudi_rs_rows, normalize_table
from tests.actions.services_fixtures import timeline_files
from tests.actions.table_versions import current_version, table_version  # noqa: F401  (the fixture the module runs under)

pytestmark = pytest.mark.usefixtures("table_version")


class Crash(Exception):
    pass


class FailsAfterFirst:
    """An executor whose second task fails after the first wrote its files."""

    def map(self, fn, items):
        items = list(items)
        fn(items[0])
        raise Crash("task failed")


class DiesAfterFirst:
    """An executor whose process is SIGKILLed after the first file-group write task wrote
    its files (other maps, such as the index lookup, run normally)."""

    def map(self, fn, items):
        items = list(items)
        if not (items and isinstance(items[0], tuple) and type(items[0][0]).__name__ == "FileGroupTask"):
            return [fn(i) for i in items]
        fn(items[0])
        os.kill(os.getpid(), signal.SIGKILL)


def _killed_write(base: str, table_type: str, batch: list[dict]) -> None:
    """Run a write in a child process that dies mid-write, as an Airflow worker can."""
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_write_and_die, args=(base, table_type, batch))
    proc.start()
    proc.join(120)
    assert proc.exitcode == -signal.SIGKILL


def _write_and_die(base: str, table_type: str, batch: list[dict]) -> None:
    write_arrow(base, to_arrow(batch), "upsert", conf(table_type), executor=DiesAfterFirst())


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_write_that_fails_rolls_itself_back(tmp_path, table_type):
    base = str(tmp_path / "t")
    c = conf(table_type)
    first = rows(0, 20, 1, "a")
    write_arrow(base, to_arrow(first), "upsert", c, table_name="t")
    with pytest.raises(Crash):
        write_arrow(base, to_arrow(rows(0, 30, 2, "bad")), "upsert", c, executor=FailsAfterFirst())
    table = HoodieTable.load(base)
    assert table.timeline.pending().filter(actions=["commit", "deltacommit"]).instants == []
    assert not list((tmp_path / "t" / ".hoodie" / ".heartbeat").glob("*"))
    assert actual(read_table(base)) == sorted((r["id"], r["p"], r["ts"], r["v"]) for r in first)
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def rows(n0, n1, ts, tag, p=("a", "b")):
    return [{"id": i, "ts": ts, "p": p[i % len(p)], "v": f"{tag}{i}"} for i in range(n0, n1)]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_killed_write_rolled_back_by_next_write(tmp_path, table_type):
    base = str(tmp_path / "t")
    c = conf(table_type)
    first = rows(0, 20, 1, "a")
    write_arrow(base, to_arrow(first), "upsert", c, table_name="t")
    failed = rows(0, 20, 2, "bad") + rows(20, 30, 2, "bad")
    _killed_write(base, table_type, failed)
    table = HoodieTable.load(base)
    pending = table.timeline.pending().instants
    assert len(pending) == 1
    failed_ts = pending[0].timestamp
    failed_logs = list((tmp_path / "t").rglob(f".*_{failed_ts}.log.*"))
    assert bool(failed_logs) == (current_version() >= 8 and table_type == "MERGE_ON_READ")
    # readers ignore the failed write already
    assert actual(read_table(base)) == sorted((r["id"], r["p"], r["ts"], r["v"]) for r in first)
    good = rows(5, 8, 3, "g")
    r = write_arrow(base, to_arrow(good), "upsert", c)
    assert r.rolled_back == [failed_ts]
    table = HoodieTable.load(base)
    rb = table.timeline.filter(actions="rollback").completed().instants
    assert len(rb) == 1
    md = avro_codec.deserialize(table.timeline.read_details(rb[0]), "HoodieRollbackMetadata")
    assert md["commitsRollback"] == [failed_ts]
    assert table.timeline.get(failed_ts) is None
    # no file of the failed instant remains; MOR logs carry a rollback block instead
    leftovers = [p for p in (tmp_path / "t").rglob("*.parquet") if failed_ts in p.name]
    assert leftovers == []
    assert not (tmp_path / "t" / ".hoodie" / ".temp" / failed_ts).exists()
    assert not [f for f in timeline_files(base) if f.startswith(failed_ts)]
    if current_version() >= 8:  # Hudi 1.x: the failed write's logs are its own, and deleted
        assert not [p for p in (tmp_path / "t").rglob(f".*_{failed_ts}.log.*")]
    want = {r["id"]: r for r in first}
    want.update({r["id"]: r for r in good})
    assert actual(read_table(base)) == sorted((r["id"], r["p"], r["ts"], r["v"]) for r in want.values())
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_rollback_latest_completed_write(tmp_path, table_type):
    base = str(tmp_path / "t")
    c = conf(table_type)
    first = rows(0, 10, 1, "a")
    write_arrow(base, to_arrow(first), "upsert", c, table_name="t")
    r2 = write_arrow(base, to_arrow(rows(5, 15, 2, "b")), "upsert", c)
    out = rollback_latest_or(HoodieTable.load(base), None)
    assert out["rolled_back"] == r2.instant
    assert actual(read_table(base)) == sorted((r["id"], r["p"], r["ts"], r["v"]) for r in first)
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
    # and writing goes on normally
    write_arrow(base, to_arrow(rows(0, 1, 3, "c")), "upsert", c)
    assert len(read_table(base)) == 10


def test_the_retry_of_a_rollback_that_completed_reports_it_and_rolls_back_nothing_more(tmp_path):
    """The operator names its target; a retry after the rollback completed (the task died
    before reporting) finds the rollback that removed it, instead of failing or choosing again."""
    base = str(tmp_path / "t")
    c = conf()
    write_arrow(base, to_arrow(rows(0, 3, 1, "a")), "upsert", c, table_name="t")
    r2 = write_arrow(base, to_arrow(rows(0, 3, 2, "b")), "upsert", c)
    first = rollback_latest_or(HoodieTable.load(base), r2.instant)
    again = rollback_latest_or(HoodieTable.load(base), r2.instant)
    assert again["instant"] == first["instant"] and again["already_rolled_back"] is True
    assert sorted(read_table(base).column("v").to_pylist()) == ["a0", "a1", "a2"]


def test_rollback_refuses_older_completed(tmp_path):
    base = str(tmp_path / "t")
    c = conf()
    r1 = write_arrow(base, to_arrow(rows(0, 3, 1, "a")), "upsert", c, table_name="t")
    write_arrow(base, to_arrow(rows(0, 3, 2, "b")), "upsert", c)
    with pytest.raises(Exception, match="not the latest"):
        rollback_instant(HoodieTable.load(base), r1.instant)


def test_rollback_refuses_a_savepointed_commit_and_keeps_its_data(tmp_path):
    """Hudi refuses too (validateSavepointRollbacks): the savepoint would be left naming a
    commit that is gone, and restoring to it would fail."""
    from airflow_hoodie.actions.restore import restore_to  # noqa: PLC0415
    from airflow_hoodie.actions.savepoint import create_savepoint, delete_savepoint  # noqa: PLC0415

    base = str(tmp_path / "t")
    c = conf()
    write_arrow(base, to_arrow(rows(0, 3, 1, "a")), "upsert", c, table_name="t")
    r2 = write_arrow(base, to_arrow(rows(0, 3, 2, "b")), "upsert", c)
    create_savepoint(HoodieTable.load(base), r2.instant)
    with pytest.raises(HoodieTimelineError, match="savepointed"):
        rollback_latest_or(HoodieTable.load(base), None)
    assert sorted(read_table(base).column("v").to_pylist()) == ["b0", "b1", "b2"]
    restore_to(HoodieTable.load(base), r2.instant)  # the savepoint still restores
    delete_savepoint(HoodieTable.load(base), r2.instant)
    assert rollback_latest_or(HoodieTable.load(base), None)["rolled_back"] == r2.instant


def test_rollback_writes_its_command_block_to_a_new_log_version(tmp_path):
    """Hudi 0.14 never rewrites a log file on rollback: the command block goes to the next
    version of the slice's log, and the failed write's own log file keeps its bytes. Hudi 1.x
    (versions 8/9) has no command block: the failed write's logs hold only its blocks (named
    by it), so its rollback deletes them and leaves every other log as it was."""
    import pathlib

    from airflow_hoodie.table.file_group.file_naming import parse_log_file_name
    from airflow_hoodie.table.log.log_reader import read_log_blocks_from_bytes

    base = str(tmp_path / "t")
    c = conf("MERGE_ON_READ")
    write_arrow(base, to_arrow(rows(0, 10, 1, "a")), "upsert", c, table_name="t")
    _killed_write(base, "MERGE_ON_READ", rows(0, 10, 2, "bad"))
    failed_ts = HoodieTable.load(base).timeline.pending().instants[0].timestamp
    def data_logs():
        return [p for p in pathlib.Path(base).rglob(".*.log.*") if ".hoodie" not in p.parts]

    logs_before = {p: p.read_bytes() for p in data_logs()}
    assert logs_before
    r = write_arrow(base, to_arrow(rows(0, 1, 3, "g")), "upsert", c)
    assert r.rolled_back == [failed_ts]
    if current_version() >= 8:
        failed_logs = [p for p in logs_before if parse_log_file_name(p.name).base_instant == failed_ts]
        assert failed_logs and len(failed_logs) == len(logs_before)  # the failed write's logs only
        assert not [p for p in failed_logs if p.exists()]
        assert not [p for p in data_logs() if any(b.is_rollback for b in read_log_blocks_from_bytes(p.read_bytes(), str(p)))]
        assert not [p for p in data_logs() if parse_log_file_name(p.name).base_instant == failed_ts]
        assert actual(read_table(base))[0][3] == "g0"
        assert normalize_table(read_table(base)) == hudi_rs_rows(base)
        return
    for path, data in logs_before.items():
        assert path.read_bytes() == data  # untouched
    rollback_logs = []
    for p in data_logs():
        blocks = read_log_blocks_from_bytes(p.read_bytes(), str(p))
        if any(b.is_rollback for b in blocks):
            rollback_logs.append(p)
            # the file starts with the command block (the next write may append after it)
            assert blocks[0].is_rollback and blocks[0].target_instant_time == failed_ts
    assert rollback_logs
    versions = {parse_log_file_name(p.name).version for p in logs_before}
    assert all(parse_log_file_name(p.name).version > min(versions) for p in rollback_logs)
    assert actual(read_table(base))[0][3] == "g0"
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
