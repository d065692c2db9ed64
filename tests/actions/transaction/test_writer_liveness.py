"""Writers stay live beside table services planned back to back (issue 20, item 5).

What Hudi does, read in 0.14 and 1.x (hudi-client-common):

- ``SimpleConcurrentFileWritesConflictResolutionStrategy.getCandidateInstants``: besides the
  commits completed since a writer started, every compaction or clustering plan scheduled
  after the writer's instant is a candidate, and ``resolveConflict`` aborts the writer on an
  overlapping file group unless the compaction's instant is older than the writer's. So a
  plan made while a write runs, over the write's file groups, kills the write.
- ``BaseHoodieCompactionPlanGenerator.generateCompactionPlan`` (and the clustering plan
  strategies) leave out file groups already in a pending compaction or clustering; Hudi 1.x
  goes further and leaves out the log files of writes still pending (completion-time file
  slicing puts them into the new slice), so a plan never takes what a running writer adds.

Table version 6 slices by instant time, not completion time, so here a plan leaves out the
file groups a live writer declared in its inflight workload profile (and is not made while a
live writer has not declared them yet). A writer's own retries then win: this test runs
three upserters beside a loop that schedules and executes compactions back to back, and
every upsert commits within three tries.
"""

from __future__ import annotations

import threading
import time

import pytest

from airflow_hoodie.actions.compaction import execute_pending_compactions, schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_client import WriteClient
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieError, HoodieWriteConflictError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.transaction.test_occ_writes import RunsMeanwhile
from tests.actions.write_model import to_arrow
from tests.table.normalize import hudi_rs_rows, normalize_table

CONF = {
    "hoodie.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
    "hoodie.compact.inline.max.delta.commits": "1",
}
WRITERS, TASKS, TRIES = 3, 8, 3


def rows(ids, ts, p):
    return [{"id": i, "ts": ts, "p": p, "v": f"{p}{i}@{ts}"} for i in ids]


def _services(base: str, stop: threading.Event, counts: dict) -> None:
    """Plan and run compactions back to back, as a service DAG looping on the table does."""
    cfg = HoodieConfig(dict(CONF))
    while not stop.is_set():
        try:
            planned = schedule_compaction(HoodieTable.load(base), cfg)
            counts["planned"] += planned.instant is not None
            execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), cfg)
        except HoodieError:
            counts["refused"] += 1


def _upserter(base: str, w: int, tries_used: list, failures: list) -> None:
    """TASKS upsert tasks, each retried up to TRIES times like an Airflow task's retries."""
    part = f"p{w}"
    for task in range(TASKS):
        for attempt in range(1, TRIES + 1):
            try:
                write_arrow(base, to_arrow(rows(range(10), 2 + task, part)), "upsert", dict(CONF))
                tries_used.append(attempt)
                break
            except HoodieWriteConflictError as exc:
                failures.append(str(exc))
        else:
            tries_used.append(None)


@pytest.mark.timeout(120)
def test_retried_upserts_commit_within_three_tries_beside_back_to_back_compaction(tmp_path):
    base = str(tmp_path / "t")
    seed = [r for w in range(WRITERS) for r in rows(range(10), 1, f"p{w}")]
    write_arrow(base, to_arrow(seed), "upsert", dict(CONF), table_name="t")
    write_arrow(base, to_arrow(seed), "upsert", dict(CONF))  # logs: the first plan has work
    started = time.monotonic()
    stop = threading.Event()
    counts = {"planned": 0, "refused": 0}
    services = threading.Thread(target=_services, args=(base, stop, counts))
    services.start()
    tries_used: list = []
    failures: list = []
    writers = [threading.Thread(target=_upserter, args=(base, w, tries_used, failures)) for w in range(WRITERS)]
    try:
        for t in writers:
            t.start()
        for t in writers:
            t.join(90)
    finally:
        stop.set()
        services.join(30)
    elapsed = time.monotonic() - started
    attempts = len([a for a in tries_used if a]) + len(failures)
    print(f"commits {len([a for a in tries_used if a])} of {attempts} attempts, tries {tries_used}, "
          f"{counts['planned']} compactions planned, {elapsed:.1f} s")
    assert counts["planned"] >= 2, counts  # the services did run back to back meanwhile
    assert None not in tries_used and len(tries_used) == WRITERS * TASKS, (tries_used, failures[:3])
    assert elapsed < 60
    execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(dict(CONF)))
    got = {(r["p"], r["id"]): r["v"] for r in read_table(base, columns=["p", "id", "v"]).to_pylist()}
    assert got == {(f"p{w}", i): f"p{w}{i}@{1 + TASKS}" for w in range(WRITERS) for i in range(10)}
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def _mor_with_logs(base: str) -> None:
    write_arrow(base, to_arrow(rows(range(10), 1, "p0")), "upsert", dict(CONF), table_name="t")
    write_arrow(base, to_arrow(rows(range(5), 2, "p0")), "upsert", dict(CONF))


def test_no_plan_while_a_live_writer_has_not_declared_its_file_groups(tmp_path):
    base = str(tmp_path / "t")
    _mor_with_logs(base)
    cfg = HoodieConfig(dict(CONF))
    client = WriteClient(base, cfg)
    client.load_table()
    ts = client.start(client.new_instant_time(), "deltacommit", "upsert")  # requested, no profile yet
    try:
        planned = schedule_compaction(HoodieTable.load(base), cfg, force=True)
        assert planned.instant is None and ts in planned.reason and "not declared" in planned.reason
    finally:
        client.abort(ts)
    assert schedule_compaction(HoodieTable.load(base), cfg, force=True).instant is not None


def test_a_compaction_planned_before_a_writer_may_complete_while_it_runs(tmp_path):
    """The writer saw the plan and wrote into the slice after it: the compaction's commit
    completing meanwhile is no conflict (Hudi's resolveConflict lets a compaction older than
    the writer pass). Before, the completed ``commit`` was not recognised as that plan."""
    base = str(tmp_path / "t")
    _mor_with_logs(base)
    cfg = HoodieConfig(dict(CONF))
    assert schedule_compaction(HoodieTable.load(base), cfg, force=True).instant is not None
    compact = lambda: execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), cfg)  # noqa: E731
    executor = RunsMeanwhile(compact)
    write_arrow(base, to_arrow(rows(range(3, 8), 3, "p0")), "upsert", dict(CONF), executor=executor)
    assert executor.raised is None
    got = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert got == {i: f"p0{i}@{2 if i < 3 else 3 if i < 8 else 1}" for i in range(10)}
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
