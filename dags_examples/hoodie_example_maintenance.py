"""Maintenance: compaction plan -> execute -> clustering -> clean -> archive, when due.

No cron: the DAG runs continuously, one run at a time, and each run first waits (deferred,
in the triggerer, so no worker slot is held) until the table's own figures say a service is
due: compaction's trigger under the settings it runs with, a clean or an archival, or an
instant stuck pending for an hour. The sensor's XCom is the table's health. Each service is idempotent
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
from airflow_hoodie.sensors.hoodie import HoodieMaintenanceDueSensor, HoodiePendingServiceSensor
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the shared settings module
from hoodie_example_common import SERVICE_CONF, example_table_path

BASE_PATH = example_table_path()

with DAG(
    dag_id="hoodie_example_maintenance",
    schedule="@continuous",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 3, "retry_delay": timedelta(minutes=2), "retry_exponential_backoff": 2.0,
                  "execution_timeout": timedelta(hours=1)},
    tags=["hudi", "example"],
    doc_md=__doc__,
) as dag:
    due = HoodieMaintenanceDueSensor(
        task_id="maintenance_due",
        base_path=BASE_PATH,
        services_due=["compaction", "clean", "archival"],
        pending_older_than=3600,  # a writer or service that died mid-way
        hoodie_conf={**SERVICE_CONF["compaction"], **SERVICE_CONF["clean"], **SERVICE_CONF["archive"]},
        deferrable=True,
        poke_interval=300,
        timeout=24 * 3600,
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

    due >> plan >> compact >> no_pending >> cluster >> clean >> archive
