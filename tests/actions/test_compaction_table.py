"""Compaction on real MOR tables written by our write path (LocalExecutor)."""

import os

import pytest

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieError

from tests.actions.services_fixtures import (HUDI_RS_V6_PENDING_COMPACTION_GAP, Model, batch, data_files, load, snapshot,
                                             table_config, timeline_files, write)
from tests.actions.table_versions import current_version, table_version  # noqa: F401  (the fixture the module runs under)

pytestmark = pytest.mark.usefixtures("table_version")


@pytest.fixture
def mor(tmp_path):
    base = str(tmp_path / "t")
    cfg = table_config()
    model = Model()
    for t in range(1, 7):
        b = batch(range(t * 3, t * 3 + 12), t)
        write(base, b, cfg)
        model.upsert(b)
    return base, cfg, model


def test_schedule_and_execute_compaction(mor):
    base, cfg, model = mor
    sched = c.schedule_compaction(load(base), HoodieConfig({}))
    ops = sched.figures["operations"]
    assert sched.instant is not None and ops >= 2
    assert f"{sched.instant.timestamp}.compaction.requested" in timeline_files(base)
    res = c.execute_pending_compactions(load(base), LocalExecutor())
    assert res["state"] == "completed" and 0 < res["records_written"] <= len(model.rows)
    assert f"{sched.instant.timestamp}.commit" in timeline_files(base)
    assert snapshot(base) == model.table()
    assert snapshot(base, query_type="read_optimized") == model.table()
    meta = load(base).timeline.read_details(load(base).timeline.get(sched.instant.timestamp))
    assert b'"compacted" : true' in meta or b'"compacted": true' in meta
    new_bases = [f for f in data_files(base) if f.endswith(f"_{sched.instant.timestamp}.parquet")]
    assert len(new_bases) == ops
    # rerun: nothing pending; executing again the same instant is a no-op
    assert c.execute_pending_compactions(load(base), LocalExecutor())["instant"] is None
    assert c.execute_compaction(load(base), sched.instant.timestamp, LocalExecutor())["reason"] == "already completed"


def test_trigger_not_met_and_nothing_to_compact(tmp_path, mor):
    base, cfg, model = mor
    res = c.schedule_compaction(load(base), HoodieConfig({c.MAX_DELTA_COMMITS: "10"}))
    assert res.instant is None and "not met" in res.reason
    c.schedule_compaction(load(base), HoodieConfig({}))
    c.execute_pending_compactions(load(base), LocalExecutor())
    res = c.schedule_compaction(load(base), HoodieConfig({}), force=True)
    assert res.instant is None and "log files" in res.reason
    cow = str(tmp_path / "cow")
    write(cow, batch(range(3), 1), table_config("COPY_ON_WRITE"))
    assert c.schedule_compaction(load(cow), HoodieConfig({})).instant is None


def test_logs_after_plan_go_to_new_slice_and_survive(mor):
    base, cfg, model = mor
    ts = c.schedule_compaction(load(base), HoodieConfig({})).instant.timestamp
    # a second plan must not pick the same file groups
    assert c.schedule_compaction(load(base), HoodieConfig({}), force=True).instant is None
    b = batch(range(0, 40, 3), 50)
    delta_ts = write(base, b, cfg)
    model.upsert(b)
    if current_version() < 8:
        logs_new = [f for f in data_files(base) if ".log." in f and f"_{ts}.log" in f]
        assert logs_new, "log files written after the plan must carry the compaction instant as base instant"
    else:
        # Hudi 1.x names a log by the delta commit writing it; its slice is the one the
        # compaction opens because that delta commit completed after the plan
        logs_new = [f for f in data_files(base) if ".log." in f and f"_{delta_ts}.log" in f]
        assert logs_new and not [f for f in data_files(base) if f"_{ts}.log" in f]
        view = load(base).file_system_view()
        in_plan = view.pending_compaction_operations()
        new_slices = {(s.partition_path, s.file_id): s for s in view.latest_file_slices()}
        planned_logs = [f for f in logs_new if (f.split("/")[0], f.split("/")[1][1:].split("_")[0]) in in_plan]
        assert planned_logs, "the write after the plan must update file groups under compaction"
        for f in planned_logs:
            part, name = f.split("/")
            sl = new_slices[(part, name[1:].split("_")[0])]
            assert sl.base_instant == ts and sl.base_file is None and [lf.file_name for lf in sl.log_files] == [name]
    assert snapshot(base, hudi_rs_gap=HUDI_RS_V6_PENDING_COMPACTION_GAP) == model.table()
    c.execute_pending_compactions(load(base), LocalExecutor())
    assert snapshot(base) == model.table()
    # the next compaction folds the new logs in
    c.schedule_compaction(load(base), HoodieConfig({}), force=True)
    c.execute_pending_compactions(load(base), LocalExecutor())
    assert snapshot(base) == model.table()
    assert snapshot(base, query_type="read_optimized") == model.table()


class Boom(Exception):
    pass


class CrashAfter:
    """Executor that dies after ``n`` operations (simulating a killed job mid-write)."""

    def __init__(self, n):
        self.n = n

    def map(self, fn, items):
        out = []
        for i, item in enumerate(items):
            if i == self.n:
                raise Boom()
            out.append(fn(item))
        return out


def test_crash_mid_execute_then_rerun(mor):
    base, cfg, model = mor
    sched = c.schedule_compaction(load(base), HoodieConfig({}))
    ts, ops = sched.instant.timestamp, sched.figures["operations"]
    with pytest.raises(Boom):
        c.execute_compaction(load(base), ts, CrashAfter(1))
    assert f"{ts}.compaction.inflight" in timeline_files(base)
    assert os.listdir(os.path.join(base, ".hoodie", ".temp", ts))  # the dead attempt's markers
    assert any(f.endswith(f"_{ts}.parquet") for f in data_files(base))  # partial output exists...
    assert snapshot(base) == model.table()  # ...but readers do not see it
    res = c.execute_pending_compactions(load(base), LocalExecutor())
    assert res["rolled_back_files"] == 1
    assert len([f for f in data_files(base) if f.endswith(f"_{ts}.parquet")]) == ops
    assert snapshot(base) == model.table()
    assert not os.path.exists(os.path.join(base, ".hoodie", ".temp", ts))


def test_unknown_instant_is_a_clear_error(mor):
    base, _, _ = mor
    with pytest.raises(HoodieError, match="schedule one"):
        c.execute_compaction(load(base), "20200101000000000", LocalExecutor())


def test_pending_write_blocks_scheduling(mor):
    from airflow_hoodie.errors import HoodieWriteConflictError
    from airflow_hoodie.table.timeline.instant import Action, Instant, State
    from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter

    base, _, _ = mor
    t = load(base)
    TimelineWriter(t.storage, t.base_path, layout=2 if current_version() >= 8 else 1).create_requested(Instant("20990101000000000", Action.DELTA_COMMIT,
                                                                    State.REQUESTED))
    with pytest.raises(HoodieWriteConflictError, match="still pending"):
        c.schedule_compaction(load(base), HoodieConfig({}))
