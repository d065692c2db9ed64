"""Lock leftovers (issue 35): what a killed task leaves of the file-system lock must not
block the next writer.

- a ``lock.break`` left by a waiter killed while breaking a dead holder's lock blocked the
  next writer for 61 s (the break file's own 60 s expiry);
- a lock file naming a pid that a live, unrelated process now has (pid reuse) blocked for
  the whole lock wait, then failed: the holder's identity is now its pid *and* the pid's
  start time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from airflow_hoodie.actions.transaction import lock_provider as lp
from airflow_hoodie.actions.transaction.local_process import owner_is_gone, process_start_ticks, this_process
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.read import read_table
from tests.actions.test_data_safety import OCC, _dead_pid, conf, rows

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pid start times come from /proc")


@pytest.fixture
def live_stranger():
    """A live process that is not the lock's holder (the one a reused pid now names)."""
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _table(tmp_path):
    base = tmp_path / "t"
    write_arrow(str(base), rows([1]), "upsert", conf(**OCC), table_name="t")
    return base


def _provider(base):
    return lp.lock_provider_for(LockSettings.from_config(HoodieConfig(conf(**OCC))), str(base))


def test_a_dead_breakers_lock_break_is_cleaned_at_once(tmp_path):
    base = _table(tmp_path)
    lock = base / ".hoodie" / "lock"
    brk = base / ".hoodie" / "lock.break"
    lock.write_text(json.dumps({**this_process(), "pid": _dead_pid(), "token": "killed-holder"}))
    # the waiter that was breaking it was killed in between: its break file names it
    brk.write_text(json.dumps({**this_process(), "pid": _dead_pid(), "token": "killed-breaker"}))
    started = time.monotonic()
    write_arrow(str(base), rows([2]), "upsert", conf(**OCC))
    assert time.monotonic() - started < 5
    assert not lock.exists() and not brk.exists()
    assert sorted(read_table(str(base)).column("id").to_pylist()) == [1, 2]


def test_a_live_breakers_lock_break_is_left_alone(tmp_path):
    """Only a dead breaker's file is taken over: a live one is breaking right now."""
    base = _table(tmp_path)
    lock = base / ".hoodie" / "lock"
    brk = base / ".hoodie" / "lock.break"
    lock.write_text(json.dumps({**this_process(), "pid": _dead_pid(), "token": "killed-holder"}))
    breaker = json.dumps({**this_process(), "token": "live-breaker"})
    brk.write_text(breaker)
    provider = _provider(base)
    assert not provider.try_lock(0.3)
    assert brk.read_text() == breaker
    assert json.loads(lock.read_text())["token"] == "killed-holder"


def test_a_lock_whose_pid_a_live_stranger_took_is_broken_at_once(tmp_path, live_stranger):
    base = _table(tmp_path)
    lock = base / ".hoodie" / "lock"
    start = process_start_ticks(live_stranger)
    assert start is not None
    # the holder had this pid before it died; the stranger started later
    lock.write_text(json.dumps({**this_process(), "pid": live_stranger, "pidStart": start - 100,
                                "token": "dead-holder"}))
    started = time.monotonic()
    write_arrow(str(base), rows([2]), "upsert", conf(**OCC))
    assert time.monotonic() - started < 5
    assert not lock.exists()
    assert sorted(read_table(str(base)).column("id").to_pylist()) == [1, 2]


def test_a_lock_without_a_start_time_is_broken_when_its_pid_started_after_it(tmp_path, live_stranger):
    """A lock file an earlier airflow-hoodie wrote (no ``pidStart``): a process that started
    after the file was written cannot be the one that wrote it."""
    base = _table(tmp_path)
    lock = base / ".hoodie" / "lock"
    lock.write_text(json.dumps({"host": this_process()["host"], "pidns": this_process()["pidns"],
                                "pid": live_stranger, "token": "old-writer"}))
    long_ago = time.time() - 3600
    os.utime(lock, (long_ago, long_ago))
    provider = _provider(base)
    started = time.monotonic()
    assert provider.try_lock(3)
    try:
        assert time.monotonic() - started < 3
        assert json.loads(lock.read_text())["pid"] == os.getpid()
    finally:
        provider.unlock()


def test_a_live_holder_with_its_own_start_time_keeps_the_lock(tmp_path, live_stranger):
    base = _table(tmp_path)
    lock = base / ".hoodie" / "lock"
    holder = {**this_process(), "pid": live_stranger, "pidStart": process_start_ticks(live_stranger), "token": "live"}
    lock.write_text(json.dumps(holder))
    assert not owner_is_gone(holder, written_at=time.time())
    assert not _provider(base).try_lock(0.3)
    assert json.loads(lock.read_text())["token"] == "live"


def test_our_lock_file_keeps_what_hudis_lock_info_has(tmp_path):
    """Hudi's FileSystemBasedLockProvider writes LockInfo (lockCreateTime, lockThreadName) and
    only logs it; our owner fields ride along."""
    base = _table(tmp_path)
    provider = _provider(base)
    assert provider.try_lock(1)
    try:
        info = json.loads((base / ".hoodie" / "lock").read_text())
    finally:
        provider.unlock()
    assert {"lockCreateTime", "lockThreadName", "pid", "pidStart", "host", "token"} <= set(info)
    assert info["pidStart"] == process_start_ticks(os.getpid())
