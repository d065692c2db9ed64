"""Sensors and the timeline trigger, against tables whose timeline files we write by hand."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from airflow_hoodie.sensors.hoodie import HoodieInstantSensor, HoodiePendingServiceSensor
from airflow_hoodie.triggers import timeline_condition
from airflow_hoodie.triggers.hoodie import HoodieTimelineTrigger
from tests.airflow.conftest import write_timeline

T1, T2, T3, T4 = "20240101000000000", "20240102000000000", "20240103000000000", "20240104000000000"
PLAN = b"Obj\x01 avro compaction plan"  # a compaction's plan content is not read by the probe


def _clustering_requested() -> bytes:
    """A replacecommit's requested metadata saying CLUSTER (the probe reads this one)."""
    from airflow_hoodie.table.metadata import avro_codec

    return avro_codec.serialize("HoodieRequestedReplaceMetadata", {
        "operationType": "CLUSTER", "clusteringPlan": None, "extraMetadata": {}, "version": 1})


CLUSTERING_PLAN = _clustering_requested()


class FakeTI:
    """What the sensors use of a task instance: prior XComs and reschedule bookkeeping."""

    def __init__(self, previous=None):
        self.previous = previous
        self.pushed = {}

    def xcom_pull(self, task_ids=None, key="return_value", include_prior_dates=False, **_):
        return self.previous if include_prior_dates else None

    def xcom_push(self, key, value):
        self.pushed[key] = value

    def get_first_reschedule_date(self, context):
        return None


def ctx(previous=None):
    return {"ti": FakeTI(previous)}


@pytest.fixture
def mor_table(tmp_path):
    return write_timeline(tmp_path / "t", [
        f"{T1}.deltacommit.requested", f"{T1}.deltacommit.inflight", f"{T1}.deltacommit",
        f"{T2}.deltacommit.requested", f"{T2}.deltacommit.inflight",
    ])


# ------------------------------------------------------------------ probe semantics
def test_views_tell_compaction_from_commit_and_clustering_from_overwrite(tmp_path):
    base = write_timeline(tmp_path / "t", {
        f"{T1}.compaction.requested": PLAN, f"{T1}.compaction.inflight": b"", f"{T1}.commit": b"{}",
        f"{T2}.replacecommit.requested": CLUSTERING_PLAN, f"{T2}.replacecommit.inflight": b"",
        f"{T3}.replacecommit.requested": b"", f"{T3}.replacecommit.inflight": b"", f"{T3}.replacecommit": b"{}",
        f"{T4}.inflight": b"",
    })
    views = {v.timestamp: v for v in timeline_condition.load_views(str(base))}
    assert (views[T1].action, views[T1].kind, views[T1].state) == ("commit", "compaction", "COMPLETED")
    assert (views[T2].kind, views[T2].state) == ("clustering", "INFLIGHT")
    assert (views[T3].kind, views[T3].state) == ("replacecommit", "COMPLETED")
    assert (views[T4].action, views[T4].state) == ("commit", "INFLIGHT")


def test_no_table_means_wait_not_fail(tmp_path):
    cond = timeline_condition.instant_condition(actions=["deltacommit"])
    assert timeline_condition.check(str(tmp_path / "missing"), None, cond) is None


# ------------------------------------------------------------------ poke mode
def test_instant_sensor_poke_waits_for_completion(mor_table):
    sensor = HoodieInstantSensor(task_id="s", base_path=str(mor_table), actions=["deltacommit"],
                                 instant_time=T2, poke_interval=0.1, timeout=5)
    assert sensor.poke(ctx()) is False
    (mor_table / ".hoodie" / f"{T2}.deltacommit").write_bytes(b"{}")
    result = sensor.poke(ctx())
    assert result and result.xcom_value["instant"] == T2
    assert result.xcom_value["state"] == "COMPLETED"


def test_instant_sensor_after_and_last_seen(mor_table):
    newer = HoodieInstantSensor(task_id="s", base_path=str(mor_table), actions=["deltacommit"], after=T1)
    assert newer.poke(ctx()) is False
    last_seen = HoodieInstantSensor(task_id="s", base_path=str(mor_table), actions=["deltacommit"],
                                    after="last_seen")
    # first run: nothing seen before, the completed T1 matches
    assert last_seen.poke(ctx()).xcom_value["instant"] == T1
    # next run: T1 was seen, wait for something newer
    assert last_seen.poke(ctx({"instant": T1})) is False
    (mor_table / ".hoodie" / f"{T2}.deltacommit").write_bytes(b"{}")
    assert last_seen.poke(ctx({"instant": T1})).xcom_value["instant"] == T2


def test_instant_sensor_state_is_at_least(mor_table):
    sensor = HoodieInstantSensor(task_id="s", base_path=str(mor_table), actions=["deltacommit"],
                                 state="inflight", after=T1)
    assert sensor.poke(ctx()).xcom_value["instant"] == T2


def test_completed_compaction_is_not_an_ingest_commit(tmp_path):
    base = write_timeline(tmp_path / "t", {f"{T1}.compaction.requested": PLAN})
    compaction = HoodieInstantSensor(task_id="s", base_path=str(base), actions=["compaction"])
    assert compaction.poke(ctx()) is False
    (base / ".hoodie" / f"{T1}.compaction.inflight").write_bytes(b"")
    (base / ".hoodie" / f"{T1}.commit").write_bytes(b"{}")
    assert compaction.poke(ctx()).xcom_value["kind"] == "compaction"
    ingest = HoodieInstantSensor(task_id="s2", base_path=str(base), actions=["deltacommit"])
    assert ingest.poke(ctx()) is False


def test_poke_mode_execute_returns_match(mor_table):
    threading.Timer(0.3, lambda: (mor_table / ".hoodie" / f"{T2}.deltacommit").write_bytes(b"{}")).start()
    sensor = HoodieInstantSensor(task_id="s", base_path=str(mor_table), actions=["deltacommit"],
                                 after=T1, poke_interval=0.1, timeout=10)
    assert sensor.execute(ctx())["instant"] == T2


def test_pending_service_sensor_poke(tmp_path):
    base = write_timeline(tmp_path / "t", {
        f"{T1}.deltacommit": b"{}", f"{T2}.compaction.requested": PLAN,
        f"{T3}.replacecommit.requested": CLUSTERING_PLAN,
    })
    both = HoodiePendingServiceSensor(task_id="p", base_path=str(base))
    only_compaction = HoodiePendingServiceSensor(task_id="p2", base_path=str(base), services=["compaction"])
    assert both.poke(ctx()) is False
    (base / ".hoodie" / f"{T2}.commit").write_bytes(b"{}")
    assert only_compaction.poke(ctx()).xcom_value["pending"] == []
    assert both.poke(ctx()) is False  # clustering still pending
    (base / ".hoodie" / f"{T3}.replacecommit").write_bytes(b"{}")
    assert both.poke(ctx()).xcom_value == {"pending": [], "services": ["clustering", "compaction"], "instant": T3,
                                              "completion_time": None, "checkpoint": T3}


def test_pending_service_sensor_rejects_unknown_service():
    with pytest.raises(ValueError, match="Unknown table services"):
        HoodiePendingServiceSensor(task_id="p", base_path="/x", services=["compation"])


# ------------------------------------------------------------------ reschedule mode
def test_reschedule_mode_gives_the_slot_back(mor_table):
    from airflow.sdk.exceptions import AirflowRescheduleException

    sensor = HoodieInstantSensor(task_id="s", base_path=str(mor_table), actions=["deltacommit"],
                                 after=T1, mode="reschedule", poke_interval=30, timeout=600)
    with pytest.raises(AirflowRescheduleException) as info:
        sensor.execute(ctx())
    assert info.value.reschedule_date > datetime.now(timezone.utc)
    (mor_table / ".hoodie" / f"{T2}.deltacommit").write_bytes(b"{}")
    assert sensor.execute(ctx())["instant"] == T2


# ------------------------------------------------------------------ deferrable mode
def test_deferrable_sensor_defers_then_trigger_fires(mor_table):
    from airflow.sdk.exceptions import TaskDeferred

    sensor = HoodieInstantSensor(task_id="s", base_path=str(mor_table), actions=["deltacommit"],
                                 after=T1, deferrable=True, poke_interval=0.05, timeout=60)
    with pytest.raises(TaskDeferred) as info:
        sensor.execute(ctx())
    trigger = info.value.trigger
    assert isinstance(trigger, HoodieTimelineTrigger)
    assert info.value.method_name == "execute_complete"
    # the trigger survives the round trip through the triggerer's table
    path, kwargs = trigger.serialize()
    assert path == "airflow_hoodie.triggers.hoodie.HoodieTimelineTrigger"
    rebuilt = HoodieTimelineTrigger(**kwargs)

    async def scenario():
        events = rebuilt.run()
        first = asyncio.ensure_future(events.__anext__())
        await asyncio.sleep(0.2)
        assert not first.done()  # still polling: nothing newer than T1 is complete
        await asyncio.to_thread((mor_table / ".hoodie" / f"{T2}.deltacommit").write_bytes, b"{}")
        return await asyncio.wait_for(first, 5)

    event = asyncio.run(scenario())
    assert event.payload["status"] == "success"
    assert event.payload["instant"] == T2
    assert sensor.execute_complete(ctx(), event.payload)["instant"] == T2


def test_deferrable_sensor_returns_at_once_when_already_true(mor_table):
    sensor = HoodieInstantSensor(task_id="s", base_path=str(mor_table), actions=["deltacommit"],
                                 deferrable=True)
    assert sensor.execute(ctx())["instant"] == T1


def test_deferrable_pending_service_sensor(tmp_path):
    from airflow.sdk.exceptions import TaskDeferred

    base = write_timeline(tmp_path / "t", {f"{T2}.compaction.requested": PLAN})
    sensor = HoodiePendingServiceSensor(task_id="p", base_path=str(base), deferrable=True, poke_interval=0.05)
    with pytest.raises(TaskDeferred) as info:
        sensor.execute(ctx())
    (base / ".hoodie" / f"{T2}.commit").write_bytes(b"{}")
    event = asyncio.run(asyncio.wait_for(info.value.trigger.run().__anext__(), 5))
    assert event.payload == {"status": "success", "pending": [], "services": ["clustering", "compaction"], "instant": T2,
                             "completion_time": None, "checkpoint": T2}


def test_trigger_never_blocks_the_event_loop(monkeypatch, tmp_path):
    """A slow listing (an object store) runs in a thread: other triggers keep running."""
    def slow_check(*args):
        time.sleep(0.5)
        return {"instant": T1}

    monkeypatch.setattr(timeline_condition, "check", slow_check)
    trigger = HoodieTimelineTrigger(str(tmp_path), timeline_condition.instant_condition(), poll_interval=0.01)
    ticks = []

    async def ticker():
        for _ in range(20):
            ticks.append(time.monotonic())
            await asyncio.sleep(0.02)

    async def scenario():
        tick_task = asyncio.ensure_future(ticker())
        event = await trigger.run().__anext__()
        await tick_task
        return event

    event = asyncio.run(scenario())
    assert event.payload == {"status": "success", "instant": T1}
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert len(ticks) == 20 and max(gaps) < 0.25  # a blocked loop would show a 0.5 s gap


def test_trigger_reports_persistent_errors(monkeypatch, tmp_path):
    def broken(*args):
        raise OSError("access denied")

    monkeypatch.setattr(timeline_condition, "check", broken)
    trigger = HoodieTimelineTrigger(str(tmp_path), timeline_condition.instant_condition(), poll_interval=0.01,
                                    max_consecutive_errors=2)
    event = asyncio.run(trigger.run().__anext__())
    assert event.payload["status"] == "error" and "access denied" in event.payload["message"]
    sensor = HoodieInstantSensor(task_id="s", base_path=str(tmp_path))
    from airflow.sdk.exceptions import AirflowException

    with pytest.raises(AirflowException, match="access denied"):
        sensor.execute_complete(ctx(), event.payload)


def test_an_insert_overwrite_is_not_a_clustering(tmp_path):
    """Regression: the probe used to call any replacecommit with a non-empty .requested a
    clustering; insert_overwrite writes one too (operationType INSERT_OVERWRITE)."""
    import pyarrow as pa

    from airflow_hoodie.actions.clustering import run_clustering
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.table.hoodie_table import HoodieTable

    base = str(tmp_path / "t")
    conf = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.parquet.small.file.limit": "0"}
    for k in range(3):
        write_arrow(base, pa.table({"id": [k], "ts": [1], "p": ["a"]}), "insert", conf, table_name="t")
    overwrite = write_arrow(base, pa.table({"id": [7], "ts": [2], "p": ["a"]}), "insert_overwrite", conf)
    assert overwrite.action == "replacecommit"
    clustering = HoodieInstantSensor(task_id="s", base_path=base, actions=["clustering"])
    assert clustering.poke(ctx()) is False
    replace = HoodieInstantSensor(task_id="s", base_path=base, actions=["replacecommit"])
    assert replace.poke(ctx()).xcom_value["instant"] == overwrite.instant
    for k in range(3):
        write_arrow(base, pa.table({"id": [10 + k], "ts": [3], "p": ["a"]}), "insert", conf)
    done = run_clustering(HoodieTable.load(base), HoodieConfig({**conf, "hoodie.clustering.plan.strategy.small.file.limit": "1000000"}),
                          LocalExecutor())
    assert done["state"] == "completed"
    assert clustering.poke(ctx()).xcom_value["instant"] == done["instant"]
