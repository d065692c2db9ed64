"""Ingest: every day, upsert that day's trips into a MERGE_ON_READ Hudi table.

``make_batch`` writes the day's batch as parquet (half updates of earlier trips, half new
ones); ``upsert`` spark-submits ``spark_jobs/upsert.py`` and, on success, emits the
table's Asset event that schedules ``hoodie_example_downstream``.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta

import pendulum
from airflow.sdk import DAG, task

from airflow_hoodie.operators.hoodie import HoodieUpsertOperator
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the shared settings module
from hoodie_example_common import TABLE_NAME, WRITE_CONF, example_table_path, incoming_dir

START = pendulum.datetime(2024, 1, 1, tz="UTC")
ROWS_PER_DAY = 200
CITIES = ("san_francisco", "sao_paulo", "chennai")

with DAG(
    dag_id="hoodie_example_ingest",
    schedule="@daily",
    start_date=START,
    catchup=False,
    max_active_runs=1,  # one writer at a time: Hudi's single-writer model
    default_args={"retries": 2, "retry_delay": timedelta(minutes=1)},
    tags=["hudi", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def make_batch(logical_date=None, run_id=None) -> str:
        """The day's trips: keys [100*d, 100*d + 200) update yesterday's second half."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        day = max((logical_date - START).days, 0) if logical_date else 0
        first = (day % 1000) * ROWS_PER_DAY // 2
        keys = list(range(first, first + ROWS_PER_DAY))
        millis = int((logical_date or pendulum.now("UTC")).timestamp() * 1000)
        batch = pa.table({
            "uuid": [f"trip-{k:06d}" for k in keys],
            "rider": [f"rider-{k % 37:03d}" for k in keys],
            "driver": [f"driver-{k % 11:03d}" for k in keys],
            "fare": [round(5.0 + (k * 7919 % 5000) / 100.0 + day, 2) for k in keys],
            "ts": [millis + i for i in range(len(keys))],
            "city": [CITIES[k % len(CITIES)] for k in keys],
        })
        os.makedirs(incoming_dir(), exist_ok=True)
        safe_run = "".join(c if c.isalnum() else "_" for c in str(run_id or day))
        path = os.path.join(incoming_dir(), f"trips_{safe_run}.parquet")
        pq.write_table(batch, path)
        return path

    upsert = HoodieUpsertOperator(
        task_id="upsert",
        base_path=example_table_path(),
        table_name=TABLE_NAME,
        source="{{ ti.xcom_pull(task_ids='make_batch') }}",
        source_format="parquet",
        operation="upsert",
        hoodie_conf=WRITE_CONF,
        execution_timeout=timedelta(minutes=30),
    )

    make_batch() >> upsert
