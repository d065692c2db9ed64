"""Each lock provider against its real backend: mutual exclusion across processes, waits
bounded by Hudi's retry settings, release on errors and on SIGTERM."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_hoodie.config_keys import locks as lock_keys
from airflow_hoodie.actions.transaction import lock_provider as lp
from airflow_hoodie.actions.transaction.transaction_manager import TransactionManager
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError, HoodieLockError
from airflow_hoodie.table.storage.storage import Storage

PROVIDERS = ["filesystem", "in_process", "zookeeper", "dynamodb"]


def _settings(kind: str, base: str, request: pytest.FixtureRequest) -> dict[str, str]:
    common = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL", "hoodie.table.name": "locked",
              lock_keys.WAIT_TIME_MS: "200", lock_keys.NUM_RETRIES: "0", lock_keys.CLIENT_NUM_RETRIES: "0"}
    if kind == "filesystem":
        return {**common, lp.PROVIDER: lp.FILESYSTEM}
    if kind == "in_process":
        return {**common, lp.PROVIDER: lp.IN_PROCESS}
    if kind == "zookeeper":
        zk = request.getfixturevalue("zookeeper")
        return {**common, lp.PROVIDER: lp.ZOOKEEPER, "hoodie.write.lock.zookeeper.url": zk,
                "hoodie.write.lock.zookeeper.base_path": "/hudi-locks"}
    endpoint = request.getfixturevalue("dynamodb")
    # Hudi makes the wait time the DynamoDB lease too: 200 ms would let a heartbeat delayed
    # on a loaded machine pass for a dead holder
    return {**common, lock_keys.WAIT_TIME_MS: "2000", lp.PROVIDER: lp.DYNAMODB,
            "hoodie.write.lock.dynamodb.table": "hudi_locks",
            "hoodie.write.lock.dynamodb.region": "us-east-1", "hoodie.write.lock.dynamodb.endpoint_url": endpoint}


def _manager(settings: dict[str, str], base: str) -> TransactionManager:
    storage, path = Storage.for_uri(base)
    return TransactionManager(LockSettings.from_config(HoodieConfig(settings)), base, storage, path)


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_held_lock_excludes_a_second_holder_until_released(kind, tmp_path, request):
    base = str(tmp_path / "t")
    os.makedirs(base + "/.hoodie")
    settings = _settings(kind, base, request)
    first = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(settings)), base)
    second = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(settings)), base)
    try:
        assert first.try_lock(1.0)
        started = time.monotonic()
        assert not second.try_lock(0.3)
        assert time.monotonic() - started >= 0.25  # it waited, as hoodie.write.lock.wait_time_ms asks
        first.unlock()
        assert second.try_lock(2.0)
        second.unlock()
    finally:
        first.close()
        second.close()


def _count_under_lock(settings: dict[str, str], base: str, counter: str, rounds: int) -> None:
    tm = _manager(settings, base)
    for _ in range(rounds):
        with tm.transaction("count"):
            value = json.loads(Path(counter).read_text())
            entered = time.time()
            time.sleep(0.02)  # widen the window a missing lock would lose updates in
            value["n"] += 1
            value["spans"].append([entered, time.time()])
            Path(counter).write_text(json.dumps(value))


@pytest.mark.parametrize("kind", ["filesystem", "zookeeper", "dynamodb"])
def test_processes_never_hold_the_lock_at_once(kind, tmp_path, request):
    base = str(tmp_path / "t")
    os.makedirs(base + "/.hoodie")
    settings = {**_settings(kind, base, request), lock_keys.WAIT_TIME_MS: "20000"}
    counter = tmp_path / "counter.json"
    counter.write_text(json.dumps({"n": 0, "spans": []}))
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_count_under_lock, args=(settings, base, str(counter), 5)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    value = json.loads(counter.read_text())
    assert value["n"] == 15
    spans = sorted(value["spans"])
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "two processes were inside the lock at once"


def test_in_process_lock_serializes_threads(tmp_path):
    import threading

    base = str(tmp_path / "t")
    settings = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL", lp.PROVIDER: lp.IN_PROCESS}
    inside = []
    overlap = []

    def work() -> None:
        tm = _manager(settings, base)
        for _ in range(5):
            with tm.transaction("count"):
                if inside:
                    overlap.append(1)
                inside.append(1)
                time.sleep(0.005)
                inside.pop()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlap == []


def test_waiting_is_bounded_by_hudis_retry_settings_and_names_the_holder(tmp_path):
    base = str(tmp_path / "t")
    os.makedirs(base + "/.hoodie")
    settings = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL", lp.PROVIDER: lp.FILESYSTEM,
                lock_keys.WAIT_TIME_MS: "100", lock_keys.NUM_RETRIES: "2", lock_keys.RETRY_WAIT_MS: "50", lock_keys.RETRY_MAX_WAIT_MS: "50",
                lock_keys.CLIENT_NUM_RETRIES: "1", lock_keys.CLIENT_RETRY_WAIT_MS: "100"}
    holder = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(settings)), base)
    assert holder.try_lock(1)
    try:
        started = time.monotonic()
        with pytest.raises(HoodieLockError, match="lockCreateTime"):
            with _manager(settings, base).transaction("commit"):
                pass
        waited = time.monotonic() - started
        # 2 client attempts x 3 provider tries x 100 ms + pauses
        assert 0.6 <= waited < 5
    finally:
        holder.close()


def test_the_lock_is_released_when_the_protected_work_fails(tmp_path):
    base = str(tmp_path / "t")
    os.makedirs(base + "/.hoodie")
    settings = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL", lp.PROVIDER: lp.FILESYSTEM}
    with pytest.raises(RuntimeError):
        with _manager(settings, base).transaction("commit"):
            assert (Path(base) / ".hoodie" / "lock").exists()
            raise RuntimeError("boom")
    assert not (Path(base) / ".hoodie" / "lock").exists()


def test_sigterm_releases_the_lock(tmp_path):
    """Airflow's on_kill sends SIGTERM to the job: the lock must not outlive it."""
    base = str(tmp_path / "t")
    os.makedirs(base + "/.hoodie")
    script = f"""
import sys, time
from airflow_hoodie.actions.transaction.transaction_manager import TransactionManager
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.spark.job import run_job
from airflow_hoodie.table.storage.storage import Storage

def main():
    storage, path = Storage.for_uri({base!r})
    tm = TransactionManager(LockSettings.from_config(HoodieConfig({{"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
        "hoodie.write.lock.provider": "{lp.FILESYSTEM}"}})), {base!r}, storage, path)
    with tm.transaction("commit"):
        print("LOCKED", flush=True)
        time.sleep(60)
    return {{}}

sys.exit(run_job(main, None))
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.stdout.readline().strip() == b"LOCKED"
    assert (Path(base) / ".hoodie" / "lock").exists()
    os.kill(proc.pid, signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert b"terminated (SIGTERM)" in err
    assert not (Path(base) / ".hoodie" / "lock").exists()


def test_file_system_lock_refuses_stores_without_atomic_create():
    settings = LockSettings.from_config(HoodieConfig({lp.PROVIDER: lp.FILESYSTEM,
                             "hoodie.write.lock.filesystem.path": "s3://bucket/table/.hoodie"}))
    with pytest.raises(HoodieLockError, match="atomic create"):
        lp.lock_provider_for(settings, "s3://bucket/table", {"region": "us-east-1", "anonymous": "true"})


def test_unknown_provider_and_incomplete_settings_are_config_errors(tmp_path):
    with pytest.raises(HoodieConfigError, match="not a lock provider"):
        lp.lock_provider_for(LockSettings.from_config(HoodieConfig({lp.PROVIDER: "com.example.MyLock"})), str(tmp_path))
    with pytest.raises(HoodieConfigError, match="zookeeper.url"):
        lp.lock_provider_for(LockSettings.from_config(HoodieConfig({lp.PROVIDER: lp.ZOOKEEPER})), str(tmp_path))
    with pytest.raises(HoodieConfigError, match="LAZY"):
        _manager({"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
                  "hoodie.cleaner.policy.failed.writes": "EAGER"}, str(tmp_path))


def test_an_expired_file_lock_is_broken_once_never_the_fresh_lock_taken_after_it(tmp_path):
    base = str(tmp_path)
    settings = LockSettings.from_config(HoodieConfig({lp.PROVIDER: lp.FILESYSTEM, "hoodie.write.lock.filesystem.expire": "1"}))
    lock = tmp_path / ".hoodie" / "lock"
    lock.parent.mkdir()
    lock.write_text("{}")  # left by a holder that died
    os.utime(lock, (time.time() - 120, time.time() - 120))
    first, second = lp.lock_provider_for(settings, base), lp.lock_provider_for(settings, base)
    assert first.try_lock(1)  # broke the expired lock and took it
    held = lock.read_bytes()
    # the second waiter saw the old lock expired just before the first replaced it
    real = second._expired
    seen = iter([True])
    second._expired = lambda: next(seen, None) or real()
    assert not second.try_lock(0.2)
    assert lock.read_bytes() == held  # the first still holds it
    assert not (tmp_path / ".hoodie" / "lock.break").exists()
    first.unlock()
    assert second.try_lock(1)
    second.unlock()


def test_a_dynamodb_item_of_our_previous_format_still_excludes_us(tmp_path, request):
    """During an upgrade a task of the previous version may hold the item as owner +
    leaseUntil; it is a holder (its renewals are its version), not an error, until it goes."""
    import boto3

    base = str(tmp_path / "t")
    settings = {**_settings("dynamodb", base, request), "hoodie.table.name": "upgrading"}
    ours = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(settings)), base)
    ddb = boto3.client("dynamodb", region_name="us-east-1",
                       endpoint_url=settings["hoodie.write.lock.dynamodb.endpoint_url"])
    key = {"key": {"S": "upgrading"}}
    ddb.put_item(TableName="hudi_locks", Item={**key, "owner": {"S": "old-task"},
                                               "leaseUntil": {"N": str(int(time.time() * 1000) + 60000)}})
    import threading

    # the old task releases it a little later; a waiter watches its 60 s lease meanwhile
    release = threading.Timer(1.0, lambda: ddb.delete_item(TableName="hudi_locks", Key=key))
    try:
        assert ours.holder() == "old-task"
        started = time.monotonic()
        release.start()
        assert ours.try_lock(5)
        assert time.monotonic() - started >= 1.0  # excluded until the old task's item went
    finally:
        release.cancel()
        ours.close()
