"""Downstream: runs whenever the trips table's Asset gets an event, reads only what is new.

The upsert (and compaction/clustering) tasks emit the table's Asset event with the
instant they completed and its ``checkpoint``. This DAG reads the table incrementally over
``(previous end, newest checkpoint]`` with our reader (no Spark) and reports what arrived.
A checkpoint is where an incremental read goes on: the completion time on Hudi 1.x tables
(versions 8 and 9, where commits may complete out of order), the instant time on version 6;
checkpointing it reads each commit exactly once.

``apply_changes`` then consumes the same window as a change stream: Hudi's CDC query
(``query_type="cdc"``: one row per insert, update and delete, with before and after images)
applied in commit order to a downstream copy of the table (a JSON file of the latest row per
record key), which therefore follows the table, deletes included, as an incremental read alone
cannot (it never sees a deleted row). The copy remembers the last window it applied, so a
retried task applies nothing twice.
"""

from __future__ import annotations

import os
import sys

import pendulum
from airflow.sdk import DAG, task

from airflow_hoodie.assets import hoodie_table_asset, table_uri_from_asset
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the shared settings module
from hoodie_example_common import RECORD_KEY_FIELD, downstream_mirror_path, example_table_path

TRIPS = hoodie_table_asset(example_table_path())

with DAG(
    dag_id="hoodie_example_downstream",
    schedule=[TRIPS],
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["hudi", "example"],
    doc_md=__doc__,
) as dag:

    @task
    def read_new_commits(triggering_asset_events=None, ti=None) -> dict:
        from airflow_hoodie.table import read as hoodie_read
        from airflow_hoodie.triggers.timeline_condition import load_views

        base_path = table_uri_from_asset(TRIPS)
        instants = sorted(
            str(event.extra.get("checkpoint") or event.extra["instant"])
            for events in (triggering_asset_events or {}).values()
            for event in events
            if event.extra and event.extra.get("instant")
        )
        # data writes only: compaction and clustering rewrite files but keep commit times
        writes = sorted(v.checkpoint for v in (load_views(base_path) or [])
                        if v.state == "COMPLETED" and v.action in ("commit", "deltacommit", "replacecommit")
                        and v.kind not in ("compaction", "logcompaction", "clustering"))
        end = instants[-1] if instants else (writes[-1] if writes else None)
        previous = ti.xcom_pull(task_ids="read_new_commits", include_prior_dates=True) if ti else None
        if isinstance(previous, dict) and previous.get("end"):
            start = previous["end"]  # resume exactly where the previous run stopped
        else:
            first = instants[0] if instants else end
            before = [w for w in writes if first is not None and w < first]
            start = before[-1] if before else None
        if end is None:
            return {"start": start, "end": None, "rows": 0}
        new_rows = hoodie_read.read_table(base_path, query_type="incremental", start=start, end=end)
        commit_times = sorted(set(new_rows.column("_hoodie_commit_time").to_pylist())) if new_rows.num_rows else []
        print(f"{new_rows.num_rows} new or changed rows in ({start}, {end}], commits {commit_times}")
        return {"start": start, "end": end, "rows": new_rows.num_rows, "commits": commit_times}

    @task
    def apply_changes(window: dict) -> dict:
        import json

        from airflow.sdk.exceptions import AirflowSkipException

        from airflow_hoodie.table import read as hoodie_read
        from airflow_hoodie.table.hoodie_table import HoodieTable

        base_path = table_uri_from_asset(TRIPS)
        start, end = window.get("start"), window.get("end")
        summary = {"start": start, "end": end, "inserts": 0, "updates": 0, "deletes": 0}
        if end is None:
            return summary
        if not HoodieTable.load(base_path).config.cdc_enabled:
            raise AirflowSkipException(f"{base_path} is not a CDC table (hoodie.table.cdc.enabled is a table property "
                                       "fixed at creation); it logs no changes to apply.")
        path = downstream_mirror_path()
        mirror = {"applied_through": None, "rows": {}}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                mirror = json.load(f)
        if mirror["applied_through"] is not None and mirror["applied_through"] >= end:
            return {**summary, "skipped": f"applied through {mirror['applied_through']} already"}
        changes = hoodie_read.read_table(base_path, query_type="cdc", start=start, end=end)
        rows = mirror["rows"]
        # commits in timeline order, one change per key within a commit
        for change in changes.to_pylist():
            image = json.loads(change["after"] or change["before"])
            key = str(image[RECORD_KEY_FIELD])
            if change["op"] == "d":
                rows.pop(key, None)
                summary["deletes"] += 1
            else:
                rows[key] = json.loads(change["after"])
                summary["inserts" if change["op"] == "i" else "updates"] += 1
        mirror["applied_through"] = end
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(f"{path}.tmp", "w", encoding="utf-8") as f:
            json.dump(mirror, f)
        os.replace(f"{path}.tmp", path)  # the copy and its checkpoint change together
        print(f"applied {summary} to {path}: {len(rows)} rows")
        return {**summary, "rows": len(rows)}

    apply_changes(read_new_commits())
