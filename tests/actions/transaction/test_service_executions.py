"""One compaction or clustering plan executed by two tasks: never two commits, never an
output file of the loser left visible, and never the winner's files deleted by a loser
that stalled past its heartbeat expiry and was taken over."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import fastavro
import pytest

from airflow_hoodie.actions.clustering import run_clustering
from airflow_hoodie.actions.compaction import execute_compaction, schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.transaction.heartbeat import Heartbeats
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConcurrentWriterError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.storage.storage import Storage
from tests.actions.test_write import conf
from tests.actions.transaction.test_occ_writes import OCC, RunsMeanwhile, rows
from tests.actions.write_model import to_arrow
from tests.table.normalize import hudi_rs_rows, normalize_table
from tests.actions.services_fixtures import completed_file
from tests.actions.table_versions import current_version, table_version  # noqa: F401  (the fixture the module runs under)

pytestmark = pytest.mark.usefixtures("table_version")

EXPECTED = ["b0", "b1", "b2", "b3", "b4", "a5", "a6", "a7", "a8", "a9"]


def _mor_with_plan(tmp_path: Path) -> tuple[str, dict, str]:
    base = str(tmp_path / "t")
    c = conf("MERGE_ON_READ", **OCC)
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    write_arrow(base, to_arrow(rows(range(5), 2, "b")), "upsert", c)
    planned = schedule_compaction(HoodieTable.load(base), HoodieConfig(dict(c)), force=True)
    return base, c, planned.instant.timestamp


def _values(base: str) -> list[str]:
    got = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    return [got[i] for i in range(10)]


def _files_of_instant(base: str, ts: str) -> list[str]:
    return sorted(p.name for p in Path(base).rglob(f"*_{ts}.parquet") if ".hoodie" not in str(p))


def _committed_files(base: str, ts: str, action: str) -> list[str]:
    """The files the completed instant's metadata names: Jackson JSON in ``.hoodie/<ts>.<action>``
    on version 6, an Avro container in ``.hoodie/timeline/<ts>_<completion>.<action>`` on 8/9
    (read here with fastavro, not our timeline reader)."""
    data = Path(completed_file(base, ts, action)).read_bytes()
    if current_version() < 8:
        meta = json.loads(data)
    else:
        (meta,) = list(fastavro.reader(io.BytesIO(data)))
    return sorted(Path(s["path"]).name for stats in meta["partitionToWriteStats"].values() for s in stats)


def _expire_heartbeat(base: str, ts: str) -> None:
    """As if its executor stalled for longer than the tolerated misses."""
    beat = Path(base) / ".hoodie" / ".heartbeat" / ts
    old = time.time() - 3600
    os.utime(beat, (old, old))


def test_two_executions_of_one_compaction_plan_never_both_commit(tmp_path):
    base, c, ts = _mor_with_plan(tmp_path)
    second = lambda: execute_compaction(HoodieTable.load(base), ts, LocalExecutor(), HoodieConfig(dict(c)))  # noqa: E731
    executor = RunsMeanwhile(second)
    result = execute_compaction(HoodieTable.load(base), ts, executor, HoodieConfig(dict(c)))
    assert result["state"] == "completed" and result["operations"] > 0
    assert isinstance(executor.raised, HoodieConcurrentWriterError)
    assert "heartbeat is live" in str(executor.raised)
    assert _files_of_instant(base, ts) == _committed_files(base, ts, "commit")
    assert _values(base) == EXPECTED
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_a_stalled_executor_taken_over_never_deletes_the_committed_files(tmp_path):
    base, c, ts = _mor_with_plan(tmp_path)

    def take_over():  # A's heartbeat expired; B runs the whole plan and commits it
        _expire_heartbeat(base, ts)
        return execute_compaction(HoodieTable.load(base), ts, LocalExecutor(), HoodieConfig(dict(c)))

    executor = RunsMeanwhile(take_over)
    result = execute_compaction(HoodieTable.load(base), ts, executor, HoodieConfig(dict(c)))
    assert executor.raised is None
    assert result["reason"] == "completed by another task"
    committed = _committed_files(base, ts, "commit")
    assert committed and _files_of_instant(base, ts) == committed  # B's files all there, none of A's left
    assert _values(base) == EXPECTED
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_a_stalled_executor_never_commits_a_plan_another_task_now_owns(tmp_path):
    base, c, ts = _mor_with_plan(tmp_path)
    storage, path = Storage.for_uri(base)
    other = Heartbeats(storage, path, LockSettings.from_config(HoodieConfig(dict(c))))
    claimed = {}

    def take_over():  # B claims the expired plan and is still running when A wakes up
        _expire_heartbeat(base, ts)
        claimed["token"] = other.claim(ts)

    executor = RunsMeanwhile(take_over)
    with pytest.raises(HoodieConcurrentWriterError, match="taken over by another task"):
        execute_compaction(HoodieTable.load(base), ts, executor, HoodieConfig(dict(c)))
    assert claimed["token"] and other.owns(ts, claimed["token"])  # A left B's heartbeat alone
    assert HoodieTable.load(base).reload_timeline().get(ts, "compaction").is_completed is False
    assert _files_of_instant(base, ts) == []  # A's output is gone
    assert _values(base) == EXPECTED  # readers see the table as before the plan
    other.stop(ts)  # B dies; its plan is executed again from scratch
    execute_compaction(HoodieTable.load(base), ts, LocalExecutor(), HoodieConfig(dict(c)))
    assert _files_of_instant(base, ts) == _committed_files(base, ts, "commit")
    assert _values(base) == EXPECTED
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_a_stalled_clustering_taken_over_leaves_one_copy_of_every_row(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE", **OCC)
    for k in range(3):
        write_arrow(base, to_arrow(rows(range(k * 10, k * 10 + 10), 1, "a")), "insert", c, table_name="t")
    ts = run_clustering(HoodieTable.load(base), HoodieConfig(dict(c)), LocalExecutor(), mode="schedule")["instant"]

    def take_over():
        _expire_heartbeat(base, ts)
        return run_clustering(HoodieTable.load(base), HoodieConfig(dict(c)), LocalExecutor(), mode="execute",
                              instant_time=ts)

    executor = RunsMeanwhile(take_over)
    result = run_clustering(HoodieTable.load(base), HoodieConfig(dict(c)), executor, mode="execute",
                            instant_time=ts)
    assert executor.raised is None and result["reason"] == "completed by another task"
    assert _files_of_instant(base, ts) == _committed_files(base, ts, "replacecommit")
    assert sorted(read_table(base, columns=["id"]).column("id").to_pylist()) == list(range(30))
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
