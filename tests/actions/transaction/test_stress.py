"""Several writer processes and the table services on one table at once, with optimistic
concurrency and the file-system lock: no acknowledged record is ever lost or doubled.

Bounded: 4 writers x 3 rounds of small upserts per table type, one service process
looping clean / compaction / clustering meanwhile, each process capped in time.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

import pytest

from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows, normalize_table

WRITERS = 4
ROUNDS = 3
SETTINGS = {
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "hoodie.write.lock.wait_time_ms": "30000",
    "hoodie.client.heartbeat.interval_in_ms": "1000",
    "hoodie.client.heartbeat.tolerable.misses": "3",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.copyonwrite.record.size.estimate": "64",
    "hoodie.parquet.max.file.size": str(64 * 60),
    "hoodie.parquet.small.file.limit": str(64 * 30),
    "hoodie.cleaner.commits.retained": "2",
    "hoodie.clustering.plan.strategy.small.file.limit": str(64 * 40),
}


def _writer(base: str, table_type: str, writer: int, out: str) -> None:
    import pyarrow as pa

    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.errors import HoodieError

    outcomes = []
    acknowledged: list[int] = []
    for rnd in range(ROUNDS):
        new = [writer * 10_000 + rnd * 100 + i for i in range(12)]
        ids = new + acknowledged[-6:]  # updates of our own earlier records land in shared file groups
        rows = {"id": ids, "ts": [rnd + 1] * len(ids), "v": [f"w{writer}r{rnd}"] * len(ids),
                "p": ["shared" if i % 2 else f"own{writer}" for i in ids]}
        try:
            result = write_arrow(base, pa.table(rows), "upsert", {**SETTINGS, "hoodie.table.type": table_type},
                                 table_name="stress")
            outcomes.append({"round": rnd, "ok": True, "ids": ids, "instant": result.instant})
            acknowledged += new
        except HoodieError as exc:
            outcomes.append({"round": rnd, "ok": False, "ids": ids, "error": f"{type(exc).__name__}: {exc}"})
    Path(out).write_text(json.dumps(outcomes))


def _services(base: str, table_type: str, stop: str, out: str) -> None:
    from airflow_hoodie.actions.clean import run_clean
    from airflow_hoodie.actions.clustering import run_clustering
    from airflow_hoodie.actions.compaction import execute_pending_compactions, schedule_compaction
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.errors import HoodieError, HoodieTableNotFoundError
    from airflow_hoodie.table.hoodie_table import HoodieTable

    cfg = HoodieConfig({**SETTINGS, "hoodie.table.type": table_type})
    done, refused = [], []
    deadline = time.time() + 180
    while time.time() < deadline and not Path(stop).exists():
        try:
            table = HoodieTable.load(base)
        except HoodieTableNotFoundError:
            time.sleep(0.1)
            continue
        steps = [lambda: run_clean(table, cfg, LocalExecutor()),
                 lambda: run_clustering(table, cfg, LocalExecutor())]
        if table_type == "MERGE_ON_READ":
            steps += [lambda: schedule_compaction(table, cfg, force=True),
                      lambda: execute_pending_compactions(table, LocalExecutor(), cfg)]
        for step in steps:
            try:
                step()
                done.append(1)
            except HoodieError as exc:
                refused.append(f"{type(exc).__name__}: {exc}")
        time.sleep(0.2)
    Path(out).write_text(json.dumps({"done": len(done), "refused": refused}))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_concurrent_writers_and_services_lose_nothing(tmp_path, table_type):
    base = str(tmp_path / "t")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(base, table_type, w, str(tmp_path / f"w{w}.json")))
             for w in range(WRITERS)]
    stop = tmp_path / "writers-done"
    services = ctx.Process(target=_services, args=(base, table_type, str(stop), str(tmp_path / "svc.json")))
    for p in procs + [services]:
        p.start()
    for p in procs:
        p.join(240)
        assert p.exitcode == 0, "a writer process crashed or hung"
    stop.touch()
    services.join(240)
    assert services.exitcode == 0, "the services process crashed or hung"
    assert json.loads((tmp_path / "svc.json").read_text())["done"] > 0  # services really ran meanwhile

    # what every write reported
    expected: dict[int, str] = {}
    failed_new: set[int] = set()
    succeeded = failed = 0
    for w in range(WRITERS):
        for o in json.loads((tmp_path / f"w{w}.json").read_text()):
            if o["ok"]:
                succeeded += 1
                for i in o["ids"]:
                    expected[i] = f"w{w}r{o['round']}"
            else:
                failed += 1
                assert "retry" in o["error"], o["error"]  # a clear message saying what to do
                failed_new |= {i for i in o["ids"] if i // 100 % 100 == o["round"]}
    assert succeeded >= WRITERS  # the test is not vacuous: writes did land

    # a final clean rolls back whatever failed; no dead pending write may remain
    from airflow_hoodie.actions.clean import run_clean
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.actions.transaction.failed_writes import failed_writes
    from airflow_hoodie.actions.transaction.service_transaction import transaction_manager_for
    from airflow_hoodie.settings.lock import LockSettings
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.table.hoodie_table import HoodieTable

    cfg = HoodieConfig({**SETTINGS, "hoodie.table.type": table_type})
    table = HoodieTable.load(base)
    run_clean(table, cfg, LocalExecutor())
    assert failed_writes(HoodieTable.load(base), transaction_manager_for(table, LockSettings.from_config(cfg))) == []

    rows = read_table(base, columns=["id", "v"]).to_pylist()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "a record is visible twice"
    got = {r["id"]: r["v"] for r in rows}
    assert got == expected, "acknowledged records lost or a failed write visible"
    assert not (failed_new - set(expected)) & set(got)
    # hudi-rs 0.5 reads only the newest slice of a file group under a pending compaction
    # (Hudi merges both, as we do above): a plan the services left pending runs first
    from airflow_hoodie.actions.compaction import execute_pending_compactions

    if table_type == "MERGE_ON_READ":
        execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), cfg)
        assert {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()} == expected
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
