"""Interleavings of writers found by attacking the concurrency model: two single writers
passing the liveness check together, and a live writer rolled back under its feet
(its heartbeat looked expired) whose tasks kept writing."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.clean import run_clean
from airflow_hoodie.actions.compaction import execute_pending_compactions, schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.restore import restore_to
from airflow_hoodie.actions.transaction.conflict_resolution import check_no_conflict
from airflow_hoodie.actions.rollback import rollback_instant, rollback_latest_or
from airflow_hoodie.actions.write import _run_bucket, write_arrow
from airflow_hoodie.actions.write_client import WriteClient
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConcurrentWriterError, HoodieTimelineError, HoodieWriteConflictError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.timeline.instant import Instant, State
from tests.actions.test_archive_table import NO_METADATA_TABLE
from tests.actions.test_write import conf
from tests.actions.transaction.test_occ_writes import OCC, RunsMeanwhile, rows
from tests.actions.write_model import to_arrow
from tests.table.normalize import hudi_rs_rows, normalize_table


def test_two_single_writers_that_pass_the_check_together_never_both_run(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE")
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    first, second = WriteClient(base, HoodieConfig(dict(c))), WriteClient(base, HoodieConfig(dict(c)))
    for client in (first, second):  # both look before either exists
        client.load_table()
        client.rollback_failed_writes()
    started = second.start(second.new_instant_time(), "commit", "upsert")
    time.sleep(0.002)
    with pytest.raises(HoodieConcurrentWriterError, match=started):
        first.start(first.new_instant_time(), "commit", "upsert")
    table = HoodieTable.load(base)
    assert [i.timestamp for i in table.timeline.pending().instants] == [started]  # the refused one left nothing
    assert sorted(p.name for p in (tmp_path / "t" / ".hoodie" / ".heartbeat").iterdir()) == [started]
    second.abort(started)


class RollsBackBetweenFiles(LocalExecutor):
    """Writes the first file group, then lets ``other`` run, then writes the rest."""

    def __init__(self, other):
        self.other = other

    def map(self, fn, items):
        if getattr(fn, "func", None) is not _run_bucket or len(items) < 2:
            return super().map(fn, items)
        out = [fn(items[0])]
        self.other()
        return out + [fn(item) for item in items[1:]]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_live_writer_rolled_back_meanwhile_leaves_nothing_even_after_archival(tmp_path, table_type):
    base = str(tmp_path / "t")
    c = conf(table_type, **OCC, **NO_METADATA_TABLE)
    write_arrow(base, to_arrow(rows(range(10), 1, "a", p="a") + rows(range(10, 20), 1, "a", p="b")), "upsert", c,
                table_name="t")
    before = normalize_table(read_table(base))

    def rolled_back_as_failed():  # the writer stalled past its heartbeat expiry; clean judged it failed
        beat = next((tmp_path / "t" / ".hoodie" / ".heartbeat").iterdir())
        os.utime(beat, (time.time() - 3600, time.time() - 3600))
        assert run_clean(HoodieTable.load(base), HoodieConfig(dict(c)), LocalExecutor())["rolled_back_failed_writes"]

    batch = rows(range(5), 2, "lost", p="a") + rows(range(10, 15), 2, "lost", p="b") + rows([30], 2, "lost", p="b")
    with pytest.raises(HoodieWriteConflictError, match="rolled back by another task"):
        write_arrow(base, to_arrow(batch), "upsert", c, executor=RollsBackBetweenFiles(rolled_back_as_failed))
    assert normalize_table(read_table(base)) == before
    # later writes elsewhere, then archival moves the timeline's start past the failed instant:
    # files it left would now count as archived, committed data
    for k in range(4):
        write_arrow(base, to_arrow(rows([100 + k], 3 + k, "later", p="c")), "upsert", c)
    if table_type == "MERGE_ON_READ":  # archival stops at the first uncompacted delta commit
        schedule_compaction(HoodieTable.load(base), HoodieConfig(dict(c)), force=True)
        execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(dict(c)))
    archived = run_archive(HoodieTable.load(base), HoodieConfig({**c, "hoodie.keep.min.commits": "2",
                                                                 "hoodie.keep.max.commits": "3",
                                                                 "hoodie.commits.archival.batch": "1",
                                                                 "hoodie.cleaner.commits.retained": "1"}))
    assert archived.get("archived")
    values = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert not [v for v in values.values() if v.startswith("lost")] and 30 not in values
    assert sorted(values) == list(range(20)) + [100, 101, 102, 103]
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
    assert not (Path(base) / ".hoodie" / ".temp").exists() or not any((Path(base) / ".hoodie" / ".temp").iterdir())


class HoldsBeforeWriting(LocalExecutor):
    """Signals once its write's instant exists, then waits for ``go`` before writing."""

    def __init__(self):
        self.started, self.go = threading.Event(), threading.Event()

    def map(self, fn, items):
        if getattr(fn, "func", None) is _run_bucket:
            self.started.set()
            assert self.go.wait(30)
        return super().map(fn, items)


def _conflict_then_archival(tmp_path, monkeypatch, force: bool) -> tuple[str, list[str]]:
    """A writer commits over our file group while ours runs, later writes land elsewhere,
    then archival runs with aggressive settings; ``force`` makes it take the conflicting
    commit as another archiver (older rules, another engine) could. Returns the conflicting
    instant and what was archived, after our commit attempt failed."""
    from airflow_hoodie.actions import archive as ar

    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE", **OCC, **NO_METADATA_TABLE)
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    held = HoldsBeforeWriting()
    first = threading.Thread(target=write_arrow, args=(base, to_arrow(rows(range(5), 2, "w0")), "upsert", c),
                             kwargs={"executor": held})
    first.start()
    assert held.started.wait(30)  # an earlier writer is pending when ours starts
    aggressive = HoodieConfig({**c, "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                               "hoodie.commits.archival.batch": "1", "hoodie.cleaner.commits.retained": "1"})
    seen: dict[str, object] = {}

    def meanwhile():
        held.go.set()
        first.join()
        seen["conflicting"] = HoodieTable.load(base).timeline.completed_commits().last().timestamp
        for k in range(3):
            write_arrow(base, to_arrow(rows([100 + k], 3, "later", p="c")), "upsert", c)
        if force:
            rule = ar.instants_to_archive
            monkeypatch.setattr(ar, "instants_to_archive", lambda instants, s, ctx, rules=None: [
                i for i in instants if i.is_completed and i.action == "commit"][:2] or rule(instants, s, ctx, rules))
        seen["archived"] = run_archive(HoodieTable.load(base), aggressive).get("archived_instants") or []

    match = "archived before this commit" if force else "conflict"
    with pytest.raises(HoodieWriteConflictError, match=match):
        write_arrow(base, to_arrow(rows(range(3, 8), 4, "w1")), "upsert", c, executor=RunsMeanwhile(meanwhile))
    values = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert [values[i] for i in range(10)] == ["w00", "w01", "w02", "w03", "w04", "a5", "a6", "a7", "a8", "a9"]
    write_arrow(base, to_arrow(rows(range(3, 8), 4, "w1")), "upsert", c)  # the retry
    values = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert [values[i] for i in range(10)] == ["w00", "w01", "w02", "w13", "w14", "w15", "w16", "w17", "a8", "a9"]
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
    return str(seen["conflicting"]), list(seen["archived"])  # type: ignore[arg-type]


def test_archival_keeps_a_commit_that_conflicts_with_a_running_writer(tmp_path, monkeypatch):
    """Hudi's archiver keeps the last commit before the oldest pending write (and what the
    cleaner still needs), so the commit our running writer conflicts with stays on the
    active timeline and the conflict is found as any other."""
    conflicting, archived = _conflict_then_archival(tmp_path, monkeypatch, force=False)
    assert conflicting not in archived
    assert conflicting in HoodieTable.load(str(tmp_path / "t")).timeline.timestamps


def test_a_conflicting_commit_archived_before_our_commit_is_still_a_conflict(tmp_path, monkeypatch):
    """Should another archiver take the conflicting commit away anyway, the check still fails."""
    conflicting, archived = _conflict_then_archival(tmp_path, monkeypatch, force=True)
    assert conflicting in archived


def test_restore_refuses_while_a_writer_it_would_undo_runs(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE", **OCC)
    first = write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")

    def restore_meanwhile():
        with pytest.raises(HoodieConcurrentWriterError, match="is pending and the task running it is alive"):
            restore_to(HoodieTable.load(base), first.instant, HoodieConfig(dict(c)))

    executor = RunsMeanwhile(restore_meanwhile)
    write_arrow(base, to_arrow(rows(range(5), 2, "b")), "upsert", c, executor=executor)
    assert executor.raised is None
    values = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert values[0] == "b0"
    assert restore_to(HoodieTable.load(base), first.instant, HoodieConfig(dict(c)))["state"] == "completed"
    values = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert values[0] == "a0" and not (Path(base) / ".hoodie" / "lock").exists()


def test_the_latest_commit_is_not_rolled_back_under_a_writer_that_built_on_it(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE", **OCC, **NO_METADATA_TABLE)
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    latest = write_arrow(base, to_arrow(rows(range(5), 2, "b")), "upsert", c)

    def rollback_meanwhile():
        with pytest.raises(HoodieConcurrentWriterError, match="started after it and is still running"):
            rollback_latest_or(HoodieTable.load(base), latest.instant, HoodieConfig(dict(c)))

    executor = RunsMeanwhile(rollback_meanwhile)
    write_arrow(base, to_arrow(rows(range(3, 8), 3, "c")), "upsert", c, executor=executor)
    assert executor.raised is None
    values = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert [values[i] for i in range(10)] == ["b0", "b1", "b2", "c3", "c4", "c5", "c6", "c7", "a8", "a9"]
    assert HoodieTable.load(base).timeline.get(latest.instant).is_completed


def test_a_failed_write_rollback_never_takes_a_write_that_completed_after_all(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE")
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    latest = write_arrow(base, to_arrow(rows(range(5), 2, "b")), "upsert", c)
    # judged failed a moment ago (no lock in SINGLE_WRITER), completed since
    with pytest.raises(HoodieTimelineError, match="completed meanwhile"):
        rollback_instant(HoodieTable.load(base), latest.instant, pending_only=True)
    table = HoodieTable.load(base)
    assert table.timeline.get(latest.instant).is_completed and not table.timeline.filter(actions="rollback").instants
    assert {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}[0] == "b0"


def test_a_write_pending_at_our_start_that_was_rolled_back_is_no_conflict(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE", **OCC, **NO_METADATA_TABLE)
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    other = WriteClient(base, HoodieConfig(dict(c)))
    other.load_table()
    pending = other.start(other.new_instant_time(), "commit", "upsert")
    ours = WriteClient(base, HoodieConfig(dict(c)))
    ours.load_table()
    own = ours.start(ours.new_instant_time(), "commit", "upsert")
    assert (pending, "commit") in ours._started.pending
    other.abort(pending)  # e.g. refused by the single-writer check, or failed: a rollback names it
    timeline = HoodieTable.load(base).timeline
    groups = {("a", "f")}
    check_no_conflict(timeline, Instant(own, "commit", State.INFLIGHT), groups, ours._started)
    ours.abort(own)
