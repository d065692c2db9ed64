"""Sensors on tables written by Hudi 1.0/1.1 (timeline layout 2 under .hoodie/timeline):
a downstream DAG waiting on someone else's Hudi 1.x table must see its commits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from airflow_hoodie.sensors.hoodie import (
    HoodieInstantSensor,
    HoodiePendingServiceSensor,
)
from airflow_hoodie.triggers.hoodie import HoodieTimelineTrigger
from tests.airflow.test_sensors import ctx
from tests.table.table_files import copy_conformance_table

TABLES = ["mor/v9_txns_simple_meta", "cow/v8_simplekeygen_hivestyle_no_metafields", "mor/v9_nonpartitioned_rollback"]


def _last_commit(base: Path) -> tuple[str, str]:
    """(requested time, file name) of the newest completed write in .hoodie/timeline."""
    done = sorted(p.name for p in (base / ".hoodie" / "timeline").iterdir()
                  if "_" in p.name.split(".")[0] and p.name.split(".")[-1] in ("commit", "deltacommit"))
    return done[-1].split("_")[0], done[-1]


@pytest.mark.parametrize("name", TABLES)
def test_instant_sensor_fires_on_a_hudi_1x_commit(conformance_next, tmp_path, name):
    base = copy_conformance_table(conformance_next, name, tmp_path)
    last, _ = _last_commit(base)
    action = "deltacommit" if name.startswith("mor") else "commit"
    sensor = HoodieInstantSensor(task_id="s", base_path=str(base), actions=[action])
    result = sensor.poke(ctx())
    assert result and result.xcom_value["instant"] == last and result.xcom_value["state"] == "COMPLETED"
    newer = HoodieInstantSensor(task_id="s", base_path=str(base), actions=[action], after=last)
    assert newer.poke(ctx()) is False
    # a new commit in layout 2: requested, inflight, then <requested>_<completion>.<action>
    ts, completion = "20991231000000000", "20991231000000500"
    timeline = base / ".hoodie" / "timeline"
    (timeline / f"{ts}.{action}.requested").write_bytes(b"")
    assert newer.poke(ctx()) is False
    (timeline / f"{ts}_{completion}.{action}").write_bytes(b"")
    assert newer.poke(ctx()).xcom_value["instant"] == ts


def test_pending_services_and_clustering_on_a_hudi_1x_table(conformance_next, tmp_path):
    base = copy_conformance_table(conformance_next, "mor/v9_txns_simple_meta", tmp_path)
    timeline = base / ".hoodie" / "timeline"
    drained = HoodiePendingServiceSensor(task_id="s", base_path=str(base), services=["compaction", "clustering"])
    assert drained.poke(ctx())
    (timeline / "20991231000000000.clustering.requested").write_bytes(b"Obj\x01 plan")
    assert drained.poke(ctx()) is False
    (timeline / "20991231000000000_20991231000001000.replacecommit").write_bytes(b"")
    assert drained.poke(ctx())
    done = HoodieInstantSensor(task_id="s", base_path=str(base), actions=["clustering"], after="20991230000000000")
    assert done.poke(ctx()).xcom_value["instant"] == "20991231000000000"


def test_deferrable_sensor_on_a_hudi_1x_table(conformance_next, tmp_path):
    from airflow.sdk.exceptions import TaskDeferred

    base = copy_conformance_table(conformance_next, "mor/v9_txns_simple_meta", tmp_path)
    last, _ = _last_commit(base)
    sensor = HoodieInstantSensor(task_id="s", base_path=str(base), actions=["deltacommit"], after=last,
                                 deferrable=True, poke_interval=0.05, timeout=60)
    with pytest.raises(TaskDeferred) as info:
        sensor.execute(ctx())
    trigger = HoodieTimelineTrigger(**info.value.trigger.serialize()[1])
    timeline = base / ".hoodie" / "timeline"

    async def scenario():
        events = trigger.run()
        first = asyncio.ensure_future(events.__anext__())
        await asyncio.sleep(0.2)
        assert not first.done()
        await asyncio.to_thread(
            (timeline / "20991231000000000_20991231000000500.deltacommit").write_bytes, b"")
        return await asyncio.wait_for(first, 5)

    event = asyncio.run(scenario())
    assert event.payload["status"] == "success" and event.payload["instant"] == "20991231000000000"


def test_sensor_fires_on_a_completed_compaction_and_clustering_of_a_hudi_1x_table(conformance_next, tmp_path):
    """Hudi 1.1 completes a compaction as <requested>_<completion>.commit and a clustering
    (action `clustering` while pending) as a replacecommit; 20260307162614221 is an insert
    overwrite replacecommit, no clustering."""
    base = copy_conformance_table(conformance_next, "mor/v9_txns_simple_meta", tmp_path)
    compaction = HoodieInstantSensor(task_id="s", base_path=str(base), actions=["compaction"])
    assert compaction.poke(ctx()).xcom_value["instant"] == "20260307162618152"
    clustering = HoodieInstantSensor(task_id="s", base_path=str(base), actions=["clustering"],
                                     after="20260307162610000")
    assert clustering.poke(ctx()).xcom_value["instant"] == "20260307162619269"
    timeline = base / ".hoodie" / "timeline"
    for f in timeline.glob("20260307162619269*"):
        f.unlink()
    assert clustering.poke(ctx()) is False  # the insert overwrite alone does not fire it


@pytest.mark.parametrize("name", ["cow/v8_simplekeygen_hivestyle_no_metafields", "mor/v9_txns_simple_meta"])
def test_reschedule_sensor_on_a_hudi_1x_table(conformance_next, tmp_path, name):
    from datetime import datetime, timezone

    from airflow.sdk.exceptions import AirflowRescheduleException

    base = copy_conformance_table(conformance_next, name, tmp_path)
    last, _ = _last_commit(base)
    action = "deltacommit" if name.startswith("mor") else "commit"
    sensor = HoodieInstantSensor(task_id="s", base_path=str(base), actions=[action], after=last,
                                 mode="reschedule", poke_interval=30, timeout=600)
    with pytest.raises(AirflowRescheduleException) as info:
        sensor.execute(ctx())
    assert info.value.reschedule_date > datetime.now(timezone.utc)
    (base / ".hoodie" / "timeline" / f"20991231000000000_20991231000000500.{action}").write_bytes(b"")
    assert sensor.execute(ctx())["instant"] == "20991231000000000"
