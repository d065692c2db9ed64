"""HoodieMaintenanceDueSensor (issue 40, item 4): services wait for the table's own figures,
not cron. It fires when a write pushes the table over its condition, and not before."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.health.due_condition import due_condition, met
from airflow_hoodie.health.table_health import table_health
from airflow_hoodie.sensors.hoodie import HoodieMaintenanceDueSensor
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.test_attack_lake_sequences import lake_rows
from tests.actions.test_noop_reasons import _cfg, _rows
from tests.airflow.conftest import load_dag_file
from tests.airflow.test_operators import _states, _xcom
from tests.airflow.test_sensors import ctx

MOR = _cfg("MERGE_ON_READ", **{"hoodie.parquet.small.file.limit": "0"})  # updates go to logs


def _write(base: str, ts: int) -> str:
    return write_arrow(base, lake_rows(_rows(3, ts)), "upsert", MOR).instant


def test_the_sensor_pokes_until_the_delta_commits_arrive(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    _write(base, 1)
    _write(base, 2)
    sensor = HoodieMaintenanceDueSensor(task_id="due", base_path=base, delta_commits=3)
    assert sensor.poke(ctx()) is False
    third = _write(base, 3)
    fired = sensor.poke(ctx())
    assert fired and fired.xcom_value["met"] == ["3 delta commits since the last compaction (>= 3)"]
    assert fired.xcom_value["health"]["latest_commit"]["instant"] == third


def test_conditions_combine_and_bad_ones_fail_at_parse_time(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    for ts in (1, 2):
        _write(base, ts)
    health = table_health(base, config={"hoodie.compact.inline.max.delta.commits": "2"})
    assert health["log_bytes"] > 0 and health["delta_commits_since_compaction"] == 2
    assert met(due_condition(compaction_due=True), health) == [
        next(f"compaction due: {d['reason']}" for d in health["maintenance_due"] if d["service"] == "compaction")]
    both = due_condition(delta_commits=2, log_bytes=health["log_bytes"] + 1, match="all")
    assert met(both, health) is None
    assert met({**both, "match": "any"}, health) == ["2 delta commits since the last compaction (>= 2)"]
    with pytest.raises(HoodieConfigError, match="at least one threshold"):
        HoodieMaintenanceDueSensor(task_id="x", base_path=base)
    with pytest.raises(HoodieConfigError, match="not services"):
        HoodieMaintenanceDueSensor(task_id="x", base_path=base, services_due=["vacuum"])


def test_the_deferred_sensor_fires_in_the_triggerer_after_the_write(airflow_db, tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    _write(base, 1)
    _write(base, 2)
    dag = load_dag_file("maintenance_due_deferred", f"""
        import pendulum
        from airflow.sdk import DAG
        from airflow_hoodie.sensors.hoodie import HoodieMaintenanceDueSensor

        with DAG(dag_id="maintenance_due_deferred", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
            HoodieMaintenanceDueSensor(task_id="due", base_path={base!r}, delta_commits=3, deferrable=True,
                                       poke_interval=0.2, timeout=120)
        """)
    written: dict[str, str] = {}

    def third_write() -> None:
        time.sleep(3)  # the sensor has deferred by then: 2 delta commits are not enough
        written["instant"] = _write(base, 3)

    writer = threading.Thread(target=third_write)
    writer.start()
    started = time.monotonic()
    dr = dag.test()
    writer.join(30)
    assert _states(dr) == {"due": "success"}
    assert time.monotonic() - started >= 3
    out = _xcom(dr, "due")
    assert out["health"]["latest_commit"]["instant"] == written["instant"]
    assert out["health"]["delta_commits_since_compaction"] == 3
    assert HoodieTable.load(base).timeline.completed_commits().last().timestamp == written["instant"]
