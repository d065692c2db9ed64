"""Sensors fail early when their wait cannot end (issue 36, item 3 and 4): a compaction the
latest planning run declined, and a path with no table (a typo waited for hours)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from airflow_hoodie.actions.compaction import schedule_compaction
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieWaitFutileError
from airflow_hoodie.sensors.hoodie import (
    HoodieInstantSensor,
    HoodiePendingServiceSensor,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.triggers import timeline_condition
from airflow_hoodie.triggers.hoodie import HoodieTimelineTrigger
from tests.actions.test_attack_lake_sequences import lake_rows
from tests.actions.test_noop_reasons import _cfg, _rows
from tests.airflow.test_sensors import ctx


def _young_mor(tmp_path: Path) -> tuple[str, dict[str, str]]:
    base = str(tmp_path / "t")
    cfg = _cfg()
    write_arrow(base, lake_rows(_rows(3, 1)), "upsert", cfg)
    return base, cfg


def test_a_compaction_the_planning_run_declined_fails_the_sensor_with_its_reason(tmp_path: Path) -> None:
    base, cfg = _young_mor(tmp_path)
    sensor = HoodieInstantSensor(task_id="s", base_path=base, actions=["compaction"])
    assert sensor.poke(ctx()) is False  # no planning run yet: a plan may still come
    assert schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg)).instant is None
    with pytest.raises(HoodieWaitFutileError, match=r"scheduled no compaction.*hoodie.compact.inline.max.delta.commits=5"):
        sensor.poke(ctx())
    patient = HoodieInstantSensor(task_id="p", base_path=base, actions=["compaction"], fail_if_nothing_planned=False)
    assert patient.poke(ctx()) is False
    # a later plan (ours or a Hudi writer's) makes the decision stale: the wait goes on
    write_arrow(base, lake_rows(_rows(3, 2)), "upsert", cfg)  # updates: log files
    assert schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True).instant is not None
    assert sensor.poke(ctx()) is False
    assert sensor.poke(ctx()) is False


def test_the_deferred_wait_ends_with_the_reason_too(tmp_path: Path) -> None:
    base, cfg = _young_mor(tmp_path)
    schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg))
    condition = timeline_condition.instant_condition(actions=["compaction"])
    trigger = HoodieTimelineTrigger(**HoodieTimelineTrigger(base, condition, poll_interval=0.01).serialize()[1])

    async def first_event():
        return await asyncio.wait_for(trigger.run().__anext__(), 5)

    event = asyncio.run(first_event())
    assert event.payload["status"] == "error"
    assert "scheduled no compaction" in event.payload["message"]


def test_a_path_with_no_table_fails_after_the_missing_timeout(tmp_path: Path) -> None:
    typo = str(tmp_path / "ordrs2")
    for sensor in (HoodieInstantSensor(task_id="s", base_path=typo, hoodie_table_missing_timeout=0.3),
                   HoodiePendingServiceSensor(task_id="p", base_path=typo, hoodie_table_missing_timeout=0.3)):
        assert sensor.poke(ctx()) is False  # an ingest task may create it
        time.sleep(0.35)
        with pytest.raises(HoodieWaitFutileError, match="No Hudi table at .*ordrs2.*hoodie_table_missing_timeout"):
            sensor.poke(ctx())


def test_the_trigger_ends_a_wait_for_a_missing_table_at_its_deadline(tmp_path: Path) -> None:
    typo = str(tmp_path / "ordrs2")
    condition = timeline_condition.instant_condition()
    waiting = HoodieTimelineTrigger(typo, condition, poll_interval=0.01, missing_deadline=time.time() + 30)
    over = HoodieTimelineTrigger(**HoodieTimelineTrigger(
        typo, condition, poll_interval=0.01, missing_deadline=time.time() - 1).serialize()[1])

    async def scenario():
        pending = asyncio.ensure_future(waiting.run().__anext__())
        await asyncio.sleep(0.2)
        assert not pending.done()
        pending.cancel()
        return await asyncio.wait_for(over.run().__anext__(), 5)

    event = asyncio.run(scenario())
    assert event.payload["status"] == "error" and "No Hudi table at" in event.payload["message"]


def test_in_reschedule_mode_the_missing_timeout_counts_from_the_first_poke(tmp_path: Path) -> None:
    """Each poke of a rescheduled sensor is a new task run with a new operator: the deadline
    must come from the task's first reschedule, not from this run's first poke, or a typo
    would be waited for until the sensor's own timeout after all."""
    from datetime import datetime, timedelta, timezone

    from tests.airflow.test_sensors import FakeTI

    class _Rescheduled(FakeTI):
        def __init__(self, first: datetime) -> None:
            super().__init__()
            self.first = first

        def get_first_reschedule_date(self, context):
            return self.first

    typo = str(tmp_path / "ordrs2")
    now = datetime.now(timezone.utc)
    sensor = HoodieInstantSensor(task_id="s", base_path=typo, mode="reschedule", hoodie_table_missing_timeout=600)
    assert sensor.poke({"ti": _Rescheduled(now - timedelta(seconds=30))}) is False
    fresh = HoodieInstantSensor(task_id="s", base_path=typo, mode="reschedule", hoodie_table_missing_timeout=600)
    with pytest.raises(HoodieWaitFutileError, match="No Hudi table at .*ordrs2"):
        fresh.poke({"ti": _Rescheduled(now - timedelta(seconds=601))})
