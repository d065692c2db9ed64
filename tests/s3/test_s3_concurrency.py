"""Three writer processes and the table services on one ``s3://`` table at once, locked by
StorageBasedLockProvider alone (no ZooKeeper, no DynamoDB): every acknowledged record is
present exactly once, and what failed is not visible. Bounded: 3 writers x 2 rounds of small
upserts, one service process looping clean / compaction / clustering, each capped in time."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

import pytest

from tests.s3.conftest import S3Place

WRITERS = 3
ROUNDS = 2
SETTINGS = {
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.cleaner.policy.failed.writes": "LAZY",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider",
    "hoodie.write.lock.storage.validity.timeout.secs": "20",
    "hoodie.write.lock.storage.heartbeat.poll.secs": "2",
    "hoodie.write.lock.wait_time_ms": "60000",
    "hoodie.client.heartbeat.interval_in_ms": "1000",
    "hoodie.client.heartbeat.tolerable.misses": "5",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.table.type": "MERGE_ON_READ",
    "hoodie.cleaner.commits.retained": "2",
}


def _writer(base: str, options: dict, writer: int, out: str) -> None:
    import pyarrow as pa

    from airflow_hoodie.actions.transaction import storage_based_lock
    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.errors import HoodieError

    storage_based_lock.RETRY_WAIT_S = 0.2  # keep the bounded test short; Hudi waits 1 s
    outcomes = []
    acknowledged: list[int] = []
    for rnd in range(ROUNDS):
        new = [writer * 10_000 + rnd * 100 + i for i in range(8)]
        ids = new + acknowledged[-4:]
        rows = {"id": ids, "ts": [rnd + 1] * len(ids), "v": [f"w{writer}r{rnd}"] * len(ids),
                "p": ["shared" if i % 2 else f"own{writer}" for i in ids]}
        try:
            result = write_arrow(base, pa.table(rows), "upsert", SETTINGS, table_name="s3stress",
                                 storage_options=options)
            outcomes.append({"round": rnd, "ok": True, "ids": ids, "instant": result.instant})
            acknowledged += new
        except HoodieError as exc:
            outcomes.append({"round": rnd, "ok": False, "ids": ids, "error": f"{type(exc).__name__}: {exc}"})
    Path(out).write_text(json.dumps(outcomes))


def _services(base: str, options: dict, stop: str, out: str) -> None:
    from airflow_hoodie.actions.clean import run_clean
    from airflow_hoodie.actions.clustering import run_clustering
    from airflow_hoodie.actions.compaction import execute_pending_compactions, schedule_compaction
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.actions.transaction import storage_based_lock
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.errors import HoodieError, HoodieTableNotFoundError
    from airflow_hoodie.table.hoodie_table import HoodieTable

    storage_based_lock.RETRY_WAIT_S = 0.2
    cfg = HoodieConfig(SETTINGS)
    done, refused = [], []
    deadline = time.time() + 150
    while time.time() < deadline and not Path(stop).exists():
        try:
            table = HoodieTable.load(base, storage_options=options)
        except HoodieTableNotFoundError:
            time.sleep(0.2)
            continue
        for step in (lambda: run_clean(table, cfg, LocalExecutor(), storage_options=options),
                     lambda: schedule_compaction(table, cfg, force=True),
                     lambda: execute_pending_compactions(table, LocalExecutor(), cfg, storage_options=options),
                     lambda: run_clustering(table, cfg, LocalExecutor(), storage_options=options)):
            try:
                step()
                done.append(1)
            except HoodieError as exc:
                refused.append(f"{type(exc).__name__}: {exc}")
        time.sleep(0.2)
    Path(out).write_text(json.dumps({"done": len(done), "refused": refused}))


@pytest.mark.timeout(300)
def test_writers_and_services_on_s3_with_the_storage_lock_lose_nothing(s3: S3Place, tmp_path: Path) -> None:
    from airflow_hoodie.actions.clean import run_clean
    from airflow_hoodie.actions.compaction import execute_pending_compactions
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.table.hoodie_table import HoodieTable
    from airflow_hoodie.table.read import read_table
    from tests.table.normalize import hudi_rs_rows, normalize_table

    base, opts = s3.uri("stress"), s3.storage_options
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(base, opts, w, str(tmp_path / f"w{w}.json"))) for w in range(WRITERS)]
    stop = tmp_path / "writers-done"
    services = ctx.Process(target=_services, args=(base, opts, str(stop), str(tmp_path / "svc.json")))
    for p in procs + [services]:
        p.start()
    for p in procs:
        p.join(200)
        assert p.exitcode == 0, "a writer process crashed or hung"
    stop.touch()
    services.join(200)
    assert services.exitcode == 0, "the services process crashed or hung"
    assert json.loads((tmp_path / "svc.json").read_text())["done"] > 0

    expected: dict[int, str] = {}
    succeeded = 0
    failed_new: set[int] = set()
    for w in range(WRITERS):
        for o in json.loads((tmp_path / f"w{w}.json").read_text()):
            if o["ok"]:
                succeeded += 1
                expected.update({i: f"w{w}r{o['round']}" for i in o["ids"]})
            else:
                # a clean refusal that says what to do: retry, or run the pending service first
                assert "retry" in o["error"] or o["error"].startswith("HoodieWriteConflictError"), o["error"]
                failed_new |= {i for i in o["ids"] if i // 100 % 100 == o["round"]}
    assert succeeded >= WRITERS

    cfg = HoodieConfig(SETTINGS)
    run_clean(HoodieTable.load(base, storage_options=opts), cfg, LocalExecutor(), storage_options=opts)
    execute_pending_compactions(HoodieTable.load(base, storage_options=opts), LocalExecutor(), cfg,
                                storage_options=opts)
    rows = read_table(base, storage_options=opts, columns=["id", "v"]).to_pylist()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "a record is visible twice"
    got = {r["id"]: r["v"] for r in rows}
    assert got == expected, "acknowledged records lost or a failed write visible"
    assert not (failed_new - set(expected)) & set(got)
    assert normalize_table(read_table(base, storage_options=opts)) == hudi_rs_rows(
        base, storage_options=s3.hudi_rs_options)
    lock = json.loads(s3.client().get_object(Bucket=s3.bucket, Key="stress/.hoodie/.locks/table_lock.json")["Body"]
                      .read())
    assert lock["expired"] is True  # every holder released it
