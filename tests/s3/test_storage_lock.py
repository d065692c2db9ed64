"""StorageBasedLockProvider (Hudi's RFC-91 lock) on S3 (moto's server) and on a local path:
Hudi's lock-file path and JSON, conditional take and renew, the heartbeat, a lost lease
that stops its holder before it completes an instant."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.transaction import storage_based_lock as sbl
from airflow_hoodie.actions.transaction.lock_provider import lock_provider_for
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError, HoodieLockError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.s3.conftest import S3Place

STORAGE_LOCK = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"
SHORT = {"hoodie.write.lock.provider": STORAGE_LOCK, "hoodie.write.lock.storage.validity.timeout.secs": "10",
         "hoodie.write.lock.storage.heartbeat.poll.secs": "1"}


class Place:
    """Where a lock lives and how a test reads its file, on S3 or locally."""

    def __init__(self, base_uri: str, options: dict[str, str], read) -> None:  # noqa: ANN001
        self.base_uri, self.options, self.read = base_uri, options, read

    def provider(self, **extra: str) -> sbl.StorageBasedLockProvider:
        p = lock_provider_for(LockSettings.from_config(HoodieConfig({**SHORT, **extra})), self.base_uri, self.options)
        assert isinstance(p, sbl.StorageBasedLockProvider)
        return p

    def lock_json(self) -> dict:
        return json.loads(self.read(".hoodie/.locks/table_lock.json"))


@pytest.fixture(params=["s3", "local"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    if request.param == "local":
        return Place(str(tmp_path / "t"), {}, lambda rel: (tmp_path / "t" / rel).read_bytes())
    s3: S3Place = request.getfixturevalue("s3")
    client = s3.client()
    return Place(s3.uri("t"), s3.storage_options,
                 lambda rel: client.get_object(Bucket=s3.bucket, Key=f"t/{rel}")["Body"].read())


def test_lock_file_has_hudis_path_and_json_and_excludes_a_second_holder(place: Place) -> None:
    first, second = place.provider(), place.provider()
    try:
        started = int(time.time() * 1000)
        assert first.try_lock(1)
        lease = place.lock_json()
        assert list(lease) == ["expired", "validUntil", "owner"]
        assert lease["expired"] is False and lease["owner"] == first.owner
        assert started + 9_000 <= lease["validUntil"] <= int(time.time() * 1000) + 10_000
        assert second.holder() == first.owner
        assert not second.try_lock(0.3)
        first.unlock()
        assert place.lock_json()["expired"] is True
        assert second.holder() == "nobody"
        assert second.try_lock(1)
        assert place.lock_json()["owner"] == second.owner
    finally:
        first.close()
        second.close()


def test_heartbeat_renews_the_lease(place: Place) -> None:
    p = place.provider()
    try:
        assert p.try_lock(1)
        before = place.lock_json()["validUntil"]
        time.sleep(2.5)
        after = place.lock_json()
        assert after["validUntil"] > before and after["owner"] == p.owner
        p.ensure_held()
    finally:
        p.close()


def test_a_lease_that_ran_out_is_taken_over_and_its_holder_stops(place: Place) -> None:
    holder, taker = place.provider(), place.provider()
    try:
        assert holder.try_lock(1)
        holder._stop.set()  # the holder stalls: no more renewals (a GC pause, a frozen VM)
        holder._beater.join()
        # its lease runs out: pretend the clock moved past validUntil + Hudi's drift buffer
        lease = place.lock_json()
        wait_ms = lease["validUntil"] + sbl.CLOCK_DRIFT_BUFFER_MS - int(time.time() * 1000)
        assert not taker.try_lock(0.2)
        orig = sbl.now_ms
        sbl.now_ms = lambda: orig() + wait_ms + 1  # type: ignore[assignment]
        try:
            assert taker.try_lock(1)
        finally:
            sbl.now_ms = orig  # type: ignore[assignment]
        assert place.lock_json()["owner"] == taker.owner
        with pytest.raises(HoodieLockError, match="no longer ours"):
            holder.ensure_held()  # before completing anything, the stalled holder gives up
        holder.unlock()  # leaves the new holder's lease alone
        assert place.lock_json() == {**place.lock_json(), "owner": taker.owner, "expired": False}
        taker.ensure_held()
    finally:
        holder.close()
        taker.close()


def test_settings_are_checked_as_hudi_does(place: Place) -> None:
    with pytest.raises(HoodieConfigError, match="10 times"):
        place.provider(**{"hoodie.write.lock.storage.validity.timeout.secs": "20",
                          "hoodie.write.lock.storage.heartbeat.poll.secs": "5"})


def test_a_write_whose_lease_was_stolen_does_not_complete_and_the_next_run_does(
        s3: S3Place, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock is lost between taking it and completing the instant (a stall): the write
    fails cleanly, nothing of it is visible, and the next run lands."""
    uri = s3.uri("stolen")
    cfg = {**SHORT, "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
           "hoodie.cleaner.policy.failed.writes": "LAZY", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.time.generator.max_expected_clock_skew_ms": "0", "hoodie.table.name": "stolen"}
    first = pa.table({"id": ["a"], "p": ["x"], "ts": [1], "v": ["first"]})
    write_arrow(uri, first, "upsert", cfg, storage_options=s3.storage_options)

    real_ensure = sbl.StorageBasedLockProvider.ensure_held
    client = s3.client()

    def steal_then_check(self: sbl.StorageBasedLockProvider) -> None:
        # another writer took the lock over while we stalled; its lease ends in 1.5 s
        thief = sbl.LockData(False, int(time.time() * 1000) + 1500, "thief").to_bytes()
        client.put_object(Bucket=s3.bucket, Key="stolen/.hoodie/.locks/table_lock.json", Body=thief)
        real_ensure(self)

    monkeypatch.setattr(sbl.StorageBasedLockProvider, "ensure_held", steal_then_check)
    second = pa.table({"id": ["a", "b"], "p": ["x", "x"], "ts": [2, 2], "v": ["lost", "lost"]})
    with pytest.raises(HoodieLockError, match="retry the task"):
        write_arrow(uri, second, "upsert", cfg, storage_options=s3.storage_options)
    monkeypatch.setattr(sbl.StorageBasedLockProvider, "ensure_held", real_ensure)
    table = HoodieTable.load(uri, storage_options=s3.storage_options)
    assert len(table.timeline.completed_commits().instants) == 1
    assert read_table(uri, storage_options=s3.storage_options, columns=["id", "v"]).to_pylist() == [
        {"id": "a", "v": "first"}]
    time.sleep(2.1)  # the thief's lease runs out (plus Hudi's drift buffer)
    third = pa.table({"id": ["b"], "p": ["x"], "ts": [3], "v": ["third"]})
    write_arrow(uri, third, "upsert", cfg, storage_options=s3.storage_options)
    got = {r["id"]: r["v"] for r in read_table(uri, storage_options=s3.storage_options,
                                                columns=["id", "v"]).to_pylist()}
    assert got == {"a": "first", "b": "third"}
