"""table_health returns exactly what the files say (issue 40, items 2 and 4)."""

from __future__ import annotations

import json
from pathlib import Path

from airflow_hoodie.actions.compaction import schedule_compaction
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_client import WriteClient
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.health.table_health import compact, table_health
from airflow_hoodie.operators.hoodie import HoodieCompactionPlanOperator
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.test_attack_lake_sequences import lake_rows
from tests.actions.test_noop_reasons import _cfg, _rows

MOR = _cfg("MERGE_ON_READ", **{"hoodie.parquet.small.file.limit": "0"})


def _mor_with_a_plan_and_a_dead_writer(tmp_path: Path) -> tuple[str, str, str]:
    base = str(tmp_path / "t")
    for ts in (1, 2, 3):
        write_arrow(base, lake_rows(_rows(3, ts)), "upsert", MOR)
    plan = schedule_compaction(HoodieTable.load(base), HoodieConfig(MOR), force=True).instant.timestamp
    dead = WriteClient(base, HoodieConfig(MOR))
    dead.load_table()
    ts = dead.start(dead.new_instant_time(), "deltacommit", "upsert")
    dead.txn.heartbeats.stop(ts)  # the writer died: its heartbeat is gone, its instant stays
    return base, plan, ts


def test_pending_plans_dead_writers_and_files(tmp_path: Path) -> None:
    base, plan, dead = _mor_with_a_plan_and_a_dead_writer(tmp_path)
    health = table_health(base, config={"hoodie.compact.inline.max.delta.commits": "2"})
    json.dumps(health)  # plain JSON
    assert health["table_type"] == "MERGE_ON_READ" and health["table_version"] == 6
    pending = {p["instant"]: p for p in health["pending"]}
    assert pending[plan]["action"] == "compaction" and pending[plan]["heartbeat_live"] is None
    assert pending[dead]["action"] == "deltacommit" and pending[dead]["heartbeat_live"] is False
    assert health["delta_commits_since_compaction"] == 3
    assert health["file_groups"] == 1 and health["log_files"] == 1 and health["small_file_groups"] == 1
    view = HoodieTable.load(base).file_system_view().latest_merged_file_slices()
    assert health["total_bytes"] == sum(s.base_file.size + sum(lf.size for lf in s.log_files) for s in view)
    assert health["partitions"]["top"] == [{"partition": "p0", "files": 2, "bytes": health["total_bytes"], "rows": 3}]
    assert health["metadata_table"]["enabled"] and health["metadata_table"]["lag_instants"] == 0
    due = {d["service"]: d for d in health["maintenance_due"]}
    assert due["compaction"] == {"service": "compaction", "due": False,
                                 "reason": "a compaction plan is pending: execute it"}
    assert f"STUCK: deltacommit {dead}" in health["summary"]
    assert compact(health)["pending"] == 2


def test_the_asset_event_carries_the_compact_health(tmp_path: Path) -> None:
    base, _, _ = _mor_with_a_plan_and_a_dead_writer(tmp_path)
    op = HoodieCompactionPlanOperator(task_id="p", base_path=base)
    op._hook = op.get_hook()
    short = op._compact_health(base)
    assert short["file_groups"] == 1 and short["pending"] == 2 and "STUCK" in short["summary"]
    assert op._compact_health(str(tmp_path / "none")) is None  # no table: left out, the task is not failed
