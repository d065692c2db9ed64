"""kill -9 of one writer while others run: the others complete; its instant is rolled
back by clean only once its heartbeat is dead, never while the writer lives."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import pyarrow as pa

from airflow_hoodie.actions.clean import run_clean
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows, normalize_table

SETTINGS = {
    "hoodie.table.type": "MERGE_ON_READ",
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "hoodie.client.heartbeat.interval_in_ms": "500",
    "hoodie.client.heartbeat.tolerable.misses": "2",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "p",
}


def _batch(ids, p, tag):
    return pa.table({"id": list(ids), "ts": [1] * len(ids), "p": [p] * len(ids), "v": [tag] * len(ids)})


def _write(base: str, ids: list[int], p: str, tag: str, pause: str | None) -> None:
    if pause:
        os.environ["AIRFLOW_HOODIE_TEST_PAUSE_AFTER_FILE"] = pause
    write_arrow(base, _batch(ids, p, tag), "upsert", SETTINGS, table_name="k")


def _pending_writes(base: str) -> list[str]:
    tl = HoodieTable.load(base).timeline
    return [i.timestamp for i in tl.pending().instants if i.action == "deltacommit"]


def test_a_killed_writer_is_rolled_back_only_after_its_heartbeat_died(tmp_path):
    base = str(tmp_path / "t")
    write_arrow(base, _batch(range(10), "seed", "s"), "upsert", SETTINGS, table_name="k")
    ctx = multiprocessing.get_context("spawn")
    victim = ctx.Process(target=_write, args=(base, list(range(100, 110)), "victim", "dead", "600"))
    victim.start()
    deadline = time.monotonic() + 60
    while not _pending_writes(base) or not list(Path(base, "victim").glob("*")):
        assert time.monotonic() < deadline, "the victim never started writing"
        time.sleep(0.1)
    (victim_instant,) = _pending_writes(base)

    others = [ctx.Process(target=_write, args=(base, list(range(200 + 10 * k, 210 + 10 * k)), f"o{k}", "ok", None))
              for k in range(3)]
    for p in others:
        p.start()
    for p in others:
        p.join(120)
        assert p.exitcode == 0
    cfg = HoodieConfig(SETTINGS)
    # the victim still beats: clean must leave it alone
    time.sleep(1.5)
    assert run_clean(HoodieTable.load(base), cfg, LocalExecutor())["rolled_back_failed_writes"] == []
    assert _pending_writes(base) == [victim_instant]

    os.kill(victim.pid, signal.SIGKILL)
    victim.join(30)
    assert victim.exitcode == -signal.SIGKILL
    out = run_clean(HoodieTable.load(base), cfg, LocalExecutor())
    assert out["rolled_back_failed_writes"] == [victim_instant]
    assert _pending_writes(base) == []
    assert not (Path(base) / ".hoodie" / ".heartbeat" / victim_instant).exists()

    ids = sorted(read_table(base, columns=["id"]).column("id").to_pylist())
    assert ids == list(range(10)) + list(range(200, 230))
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
