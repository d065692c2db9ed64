"""Heartbeats decide which pending instants failed."""

from __future__ import annotations

import json
import os
import time

from airflow_hoodie.actions.transaction.heartbeat import Heartbeats
from airflow_hoodie.actions.transaction.local_process import PID_NAMESPACE
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import new_instant_time


def _beats(tmp_path, interval_ms: int = 100, misses: int = 2) -> Heartbeats:
    storage, path = Storage.for_uri(str(tmp_path))
    return Heartbeats(storage, path, LockSettings.from_config(HoodieConfig({"hoodie.client.heartbeat.interval_in_ms": str(interval_ms),
                                                   "hoodie.client.heartbeat.tolerable.misses": str(misses)})))


def test_a_running_heartbeat_stays_fresh_and_goes_on_stop(tmp_path):
    hb = _beats(tmp_path)
    ts = new_instant_time()
    hb.start(ts)
    path = tmp_path / ".hoodie" / ".heartbeat" / ts
    first = path.stat().st_mtime
    time.sleep(0.5)  # several intervals, longer than the 200 ms expiry window
    assert path.stat().st_mtime > first
    assert not hb.is_expired(ts)
    hb.stop(ts)
    assert not path.exists()


def test_a_heartbeat_that_stops_beating_expires_after_the_tolerated_misses(tmp_path):
    hb = _beats(tmp_path)
    ts = new_instant_time()
    (tmp_path / ".hoodie" / ".heartbeat").mkdir(parents=True)
    beat = tmp_path / ".hoodie" / ".heartbeat" / ts
    beat.write_text(json.dumps({"host": "another-host", "pid": 1}))
    assert not hb.is_expired(ts)
    old = time.time() - 0.3
    os.utime(beat, (old, old))
    assert hb.is_expired(ts)


def test_no_heartbeat_fails_an_instant_at_once(tmp_path):
    """Hudi's rule (HoodieHeartbeatUtils: a missing heartbeat's last beat is 0): writers beat
    before their instant exists, so a pending write without a heartbeat has a dead writer.
    Counting it live for the expiry window refused the next write for about 120 s after a
    fault whose cleanup failed."""
    hb = _beats(tmp_path, interval_ms=60000)
    assert hb.is_expired(new_instant_time())
    assert hb.is_expired("20200101000000000")


def test_a_heartbeat_of_a_dead_process_on_this_host_is_expired_at_once(tmp_path):
    import multiprocessing

    proc = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
    proc.start()
    proc.join()
    hb = _beats(tmp_path, interval_ms=60000)
    ts = new_instant_time()
    (tmp_path / ".hoodie" / ".heartbeat").mkdir(parents=True)
    beat = tmp_path / ".hoodie" / ".heartbeat" / ts
    beat.write_text(json.dumps({"host": os.uname().nodename, "pidns": PID_NAMESPACE, "pid": proc.pid}))
    assert hb.is_expired(ts)
    # the same host name but another container's pid space (host networking): its pids mean nothing here
    beat.write_text(json.dumps({"host": os.uname().nodename, "pidns": "pid:[1]", "pid": proc.pid}))
    assert not hb.is_expired(ts)


def test_only_one_task_can_claim_a_plan(tmp_path):
    first, second = _beats(tmp_path, interval_ms=60000), _beats(tmp_path, interval_ms=60000)
    ts = new_instant_time()
    assert first.claim(ts)
    assert not second.claim(ts)
    first.stop(ts)
    assert second.claim(ts)
    second.stop(ts)
