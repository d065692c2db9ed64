"""Non-blocking concurrency control (NBCC) on MERGE_ON_READ simple-bucket tables: the
refusals, the lock Flink's writers share with us, logs-only writes under the fixed NBCC file
ids, completion-time slicing of interleaved logs (reader, compaction planner, file-system
view) and LAZY clean beside a live writer. The multi-process run is in
``tests/actions/transaction/test_nbcc_stress.py``."""

from __future__ import annotations

import datetime as dt
import json
import os
import re

import pyarrow as pa
import pytest

from airflow_hoodie.actions.clean import run_clean
from airflow_hoodie.actions.compaction import execute_pending_compactions, schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.transaction import lock_provider as lp
from airflow_hoodie.actions.transaction.nbcc import needs_conflict_check
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError, HoodieLockError, HoodieNotSupportedError
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata.plans import CompactionPlan
from airflow_hoodie.table.read import read_table
from tests.actions.nbcc_fixtures import NBCC, FlinkLikeWriter, nbcc_settings
from tests.table.normalize import hudi_rs_rows, normalize_table

NBCC_FILE_ID = re.compile(r"^\d{8}-0000-0000-0000-000000000000-0$")


def _rows(ids: list[int], ts: int, tag: str, part: str = "a") -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "ts": pa.array([ts] * len(ids), pa.int64()),
                     "p": [part] * len(ids), "v": [f"{tag}{i}" for i in ids]})


def _read(base: str) -> dict[str, str]:
    rows = read_table(base, columns=["id", "v"]).to_pylist()
    assert len(rows) == len({r["id"] for r in rows}), "a key is visible twice"
    return {r["id"]: r["v"] for r in rows}


def _data_files(base: str) -> list[str]:
    return [name for root, _d, names in os.walk(base) if "/.hoodie" not in root + "/"
            for name in names if not name.startswith(".hoodie_partition")]


# ------------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("extra, error, says", [
    ({"hoodie.table.type": "COPY_ON_WRITE"}, HoodieNotSupportedError, "needs a MERGE_ON_READ table"),
    ({"hoodie.index.type": "SIMPLE"}, HoodieConfigError, "needs the simple bucket index"),
    ({"hoodie.index.type": "BLOOM"}, HoodieConfigError, "hoodie.index.type=BUCKET"),
    ({"hoodie.write.table.version": "6"}, HoodieNotSupportedError, "table version 6"),
    ({"hoodie.cleaner.policy.failed.writes": "EAGER"}, HoodieConfigError, "=LAZY"),
    ({"hoodie.clean.failed.writes.policy": "EAGER"}, HoodieConfigError, "=LAZY"),
])
def test_nbcc_is_refused_by_name_where_it_cannot_hold(tmp_path, extra, error, says) -> None:
    base = str(tmp_path / "t")
    with pytest.raises(error, match=says) as info:
        write_arrow(base, _rows([1, 2], 1, "x"), "upsert", {**nbcc_settings(), **extra})
    assert "NON_BLOCKING_CONCURRENCY_CONTROL" in str(info.value) or "LAZY" in str(info.value)
    assert not os.path.exists(os.path.join(base, ".hoodie", "hoodie.properties")), "a refused write left a table"


def test_nbcc_is_refused_on_an_existing_cow_table(tmp_path) -> None:
    base = str(tmp_path / "t")
    cow = {**nbcc_settings(), "hoodie.table.type": "COPY_ON_WRITE"}
    del cow["hoodie.write.concurrency.mode"]
    write_arrow(base, _rows([1], 1, "x"), "upsert", cow)
    with pytest.raises(HoodieNotSupportedError, match="MERGE_ON_READ"):
        write_arrow(base, _rows([2], 1, "x"), "upsert", {**cow, "hoodie.write.concurrency.mode": NBCC})
    assert _read(base) == {"k1": "x1"}


def test_nbcc_settings_are_lazy_and_multi_writer() -> None:
    s = LockSettings.from_config(HoodieConfig({"hoodie.write.concurrency.mode": NBCC.lower()}))
    assert s.is_nbcc and s.is_multi_writer and not s.is_occ and s.failed_writes_policy == "LAZY"
    assert needs_conflict_check(s, "upsert") is False and needs_conflict_check(s, "bulk_insert") is True
    occ = LockSettings.from_config(HoodieConfig({"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
                                                 "hoodie.write.lock.provider": "x.InProcessLockProvider"}))
    assert needs_conflict_check(occ, "upsert") and occ.is_multi_writer
    with pytest.raises(HoodieConfigError, match="not supported; use SINGLE_WRITER"):
        LockSettings.from_config(HoodieConfig({"hoodie.write.concurrency.mode": "PESSIMISTIC"}))


# ------------------------------------------------------------------------------- the lock

def test_the_default_lock_is_hudis_file_system_lock_under_aux(tmp_path) -> None:
    """No provider named: Hudi's ``FileSystemBasedLockProvider.getLockConfig(base)``, which Flink
    takes (``<base>/.hoodie/.aux/lock``, expiring after 1 minute, 2 s per try, 30 client retries)."""
    base = str(tmp_path / "t")
    s = LockSettings.from_config(HoodieConfig(nbcc_settings()))
    assert s.provider == "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
    assert (s.wait_s, s.client_retries) == (2.0, 30)
    provider = lp.lock_provider_for(s, base)
    assert provider.path == os.path.join(base, ".hoodie", ".aux", "lock")
    assert provider.expire_s == 60
    assert provider.try_lock(1)
    try:
        info = json.loads(open(provider.path).read())
        # Hudi's LockInfo fields; lockCreateTime as its SimpleDateFormat("yyyy-MM-dd HH:mm:ss.SSS")
        dt.datetime.strptime(info["lockCreateTime"], "%Y-%m-%d %H:%M:%S.%f")
        assert info["lockThreadName"]
        # a writer configured as Flink's is (the provider and the path named) is excluded by it
        flink = LockSettings.from_config(HoodieConfig({
            "hoodie.write.concurrency.mode": NBCC,
            "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
            "hoodie.write.lock.filesystem.path": os.path.join(base, ".hoodie", ".aux"),
            "hoodie.write.lock.filesystem.expire": "1"}))
        other = lp.lock_provider_for(flink, base)
        assert other.path == provider.path and not other.try_lock(0.2)
    finally:
        provider.unlock()
    assert not os.path.exists(provider.path)
    # the provider named without a path: Hudi's constructor default, the table's .hoodie
    named = LockSettings.from_config(HoodieConfig({
        "hoodie.write.concurrency.mode": NBCC,
        "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"}))
    assert lp.lock_provider_for(named, base).path == os.path.join(base, ".hoodie", "lock")


def test_a_write_waits_for_a_lock_file_a_java_writer_holds(tmp_path) -> None:
    """A lock file as Hudi's provider writes it (its LockInfo text) stops our NBCC write at the
    timeline step; once deleted (Hudi's unlock), the write goes through."""
    base = str(tmp_path / "t")
    conf = nbcc_settings()
    write_arrow(base, _rows([1], 1, "x"), "upsert", conf)
    lock = os.path.join(base, ".hoodie", ".aux", "lock")
    with open(lock, "w") as f:
        f.write('{"lockCreateTime":"2025-01-01 00:00:00.000","lockThreadName":"pool-1-thread-1",'
                '"lockStacksInfo":[]}')
    quick = {**conf, "hoodie.write.lock.wait_time_ms": "100", "hoodie.write.lock.num_retries": "0",
             "hoodie.write.lock.client.num_retries": "0"}
    with pytest.raises(HoodieLockError, match="lock"):
        write_arrow(base, _rows([2], 1, "y"), "upsert", quick)
    os.remove(lock)
    write_arrow(base, _rows([2], 1, "y"), "upsert", quick)
    assert _read(base) == {"k1": "x1", "k2": "y2"}


# ------------------------------------------------------------------------------- the writes

@pytest.mark.parametrize("version", [8, 9])
def test_writers_write_logs_only_under_fixed_ids_and_never_conflict(tmp_path, version: int) -> None:
    base = str(tmp_path / "t")
    conf = nbcc_settings(version)
    write_arrow(base, _rows(range(12), 1, "a"), "upsert", conf)
    flink = FlinkLikeWriter(base, conf)
    pending = flink.begin(_rows(range(6, 18), 2, "f"))  # started before ours, over the same buckets
    ours = write_arrow(base, _rows(range(0, 9), 3, "o"), "upsert", conf)
    assert ours.state == "COMPLETED"
    flink.complete(pending)  # completes after ours: no conflict check fails it
    files = _data_files(base)
    assert files and all(".log." in name for name in files), files  # no base file
    assert all(NBCC_FILE_ID.match(name[1:].split("_", 1)[0]) for name in files), files
    want = {f"k{i}": f"a{i}" for i in range(12)}
    want.update({f"k{i}": f"f{i}" for i in range(6, 18)})
    want.update({f"k{i}": f"o{i}" for i in range(9)})  # ts 3 beats the Flink-like ts 2 on k6..k8
    assert _read(base) == want
    # hudi-rs 0.5 builds file groups from base files: a log-only group (every NBCC group before
    # its first compaction) is invisible to it, so it reads the table once compacted
    assert hudi_rs_rows(base) == []
    schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True)
    assert execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(conf))["state"] == "completed"
    assert _read(base) == want
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


@pytest.mark.parametrize("version", [8, 9])
def test_a_log_completed_after_a_compaction_was_planned_lands_in_its_slice(tmp_path, version: int) -> None:
    """Delta commit D starts before compaction C is planned and completes after it: C's plan
    leaves D's logs out (only logs completed before C), the view puts them in C's slice (the
    greatest base instant <= D's completion time), and reads see D's records before and after
    C runs."""
    base = str(tmp_path / "t")
    conf = nbcc_settings(version)
    cfg = HoodieConfig(conf)
    write_arrow(base, _rows(range(10), 1, "a"), "upsert", conf)
    flink = FlinkLikeWriter(base, conf)
    late = flink.begin(_rows(range(5, 15), 2, "late"))
    sched = schedule_compaction(HoodieTable.load(base), cfg, force=True)
    assert sched.instant is not None, sched.reason
    c_time = sched.instant.timestamp
    assert late.instant < c_time
    plan = CompactionPlan.from_avro(sched.plan)
    planned = {p for op in sched.plan["operations"] for p in op["deltaFilePaths"]}
    late_logs = {st["path"].rsplit("/", 1)[-1] for st in late.stats}
    assert planned and not planned & late_logs and plan is not None
    done = flink.complete(late)
    assert done.completion_time > c_time

    table = HoodieTable.load(base)
    view = table.file_system_view(table.timeline)
    for fg in view.all_file_groups():
        for sl in fg.slices:
            names = {lf.file_name for lf in sl.log_files}
            if names & late_logs:
                assert sl.base_instant == c_time, (sl.base_instant, names)
            if sl.base_instant != c_time:
                assert not names & late_logs
    want = {f"k{i}": f"a{i}" for i in range(10)} | {f"k{i}": f"late{i}" for i in range(5, 15)}
    assert _read(base) == want  # C pending: the slice before it and C's logs, merged

    res = execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), cfg)
    assert res["state"] == "completed"
    assert _read(base) == want
    table = HoodieTable.load(base)
    for sl in table.file_system_view(table.timeline).latest_file_slices():
        assert sl.base_instant == c_time and sl.base_file is not None
        assert {lf.file_name for lf in sl.log_files} <= late_logs
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_lazy_clean_leaves_a_live_writer_and_rolls_back_a_dead_one(tmp_path) -> None:
    base = str(tmp_path / "t")
    conf = nbcc_settings()
    cfg = HoodieConfig(conf)
    write_arrow(base, _rows(range(4), 1, "a"), "upsert", conf)
    flink = FlinkLikeWriter(base, conf)
    live = flink.begin(_rows([1, 2], 2, "live"))
    out = run_clean(HoodieTable.load(base), cfg, LocalExecutor())
    assert live.instant not in out.get("rolled_back_failed_writes", [])
    assert HoodieTable.load(base).timeline.get(live.instant) is not None  # still pending, untouched
    flink.complete(live)
    assert _read(base)["k1"] == "live1"

    dead = flink.begin(_rows([3], 3, "dead"))
    from airflow_hoodie.actions.transaction.service_transaction import transaction_manager_for

    table = HoodieTable.load(base)
    transaction_manager_for(table, LockSettings.from_config(cfg)).heartbeats.stop(dead.instant)
    flink_heartbeats_gone = not os.path.exists(os.path.join(base, ".hoodie", ".heartbeat", dead.instant))
    assert flink_heartbeats_gone
    out = run_clean(HoodieTable.load(base), cfg, LocalExecutor())
    assert dead.instant in out["rolled_back_failed_writes"]
    assert HoodieTable.load(base).timeline.get(dead.instant, "deltacommit") is None or \
        not HoodieTable.load(base).timeline.get(dead.instant, "deltacommit").is_completed
    assert _read(base) == {"k0": "a0", "k1": "live1", "k2": "live2", "k3": "a3"}


def test_records_into_a_new_log_only_group_count_as_inserts(tmp_path) -> None:
    """Hudi's HoodieAppendHandle counts a record without a current location (a new NBCC
    bucket's group) as an insert: numInserts, not numUpdateWrites. A later write into that
    group, now located by the bucket index, counts updates."""
    base = str(tmp_path / "t")
    conf = nbcc_settings(9)
    first = write_arrow(base, _rows(range(12), 1, "a"), "upsert", conf)
    table = HoodieTable.load(base)

    def counts(instant: str) -> tuple[int, int]:
        stats = [st for _p, st in table.reload_timeline().commit_metadata(instant).iter_write_stats()]
        return sum(st.num_inserts for st in stats), sum(st.num_update_writes for st in stats)

    assert counts(first.instant) == (12, 0)
    assert (first.inserts, first.updates) == (12, 0)
    second = write_arrow(base, _rows(range(6), 2, "b"), "upsert", conf)
    assert counts(second.instant) == (0, 6)
