"""Maintenance: compaction plan -> execute -> clustering -> clean -> archive.

Waits (rescheduling, so no worker slot is held) for a write newer than the one the
previous run saw; skips the whole run when none arrives. Each service is idempotent
(the plan lives on the timeline), so retries simply finish the action. The pending
service sensor makes clustering wait for compactions to finish (clustering never plans
file groups under a pending compaction); it is deferrable, so the wait sits in the
triggerer.
"""

from __future__ import annotations

import os
import sys

from datetime import timedelta

import pendulum
from airflow.sdk import DAG

from airflow_hoodie.operators.hoodie import (
    HoodieArchiveOperator,
    HoodieCleanOperator,
    HoodieClusteringOperator,
    HoodieCompactionExecuteOperator,
    HoodieCompactionPlanOperator,
)
from airflow_hoodie.sensors.hoodie import HoodieInstantSensor, HoodiePendingServiceSensor
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the shared settings module
from hoodie_example_common import SERVICE_CONF, example_table_path

BASE_PATH = example_table_path()

with DAG(
    dag_id="hoodie_example_maintenance",
    schedule="0 3 * * *",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 3, "retry_delay": timedelta(minutes=2), "retry_exponential_backoff": 2.0,
                  "execution_timeout": timedelta(hours=1)},
    tags=["hudi", "example"],
    doc_md=__doc__,
) as dag:
    new_write = HoodieInstantSensor(
        task_id="wait_for_new_write",
        base_path=BASE_PATH,
        actions=["deltacommit", "commit"],
        state="completed",
        after="last_seen",
        mode="reschedule",
        poke_interval=300,
        timeout=6 * 3600,
        soft_fail=True,  # no new data today: skip maintenance instead of failing
        retries=0,
    )
    plan = HoodieCompactionPlanOperator(
        task_id="compaction_plan", base_path=BASE_PATH, hoodie_conf=SERVICE_CONF["compaction"],
    )
    compact = HoodieCompactionExecuteOperator(
        task_id="compaction_execute", base_path=BASE_PATH,  # instant: the plan task's XCom
    )
    no_pending = HoodiePendingServiceSensor(
        task_id="no_pending_compaction",
        base_path=BASE_PATH,
        services=["compaction"],
        deferrable=True,
        poke_interval=60,
        timeout=3600,
        retries=0,
    )
    cluster = HoodieClusteringOperator(
        task_id="clustering", base_path=BASE_PATH, mode="scheduleAndExecute",
        hoodie_conf=SERVICE_CONF["clustering"],
    )
    clean = HoodieCleanOperator(task_id="clean", base_path=BASE_PATH, hoodie_conf=SERVICE_CONF["clean"])
    archive = HoodieArchiveOperator(task_id="archive", base_path=BASE_PATH, hoodie_conf=SERVICE_CONF["archive"])

    new_write >> plan >> compact >> no_pending >> cluster >> clean >> archive
