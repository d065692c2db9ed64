"""A compaction commit counts the log records it merged, as Hudi's does (issue 36, item 5):
ours said totalLogRecords 0 and totalUpdatedRecordsCompacted 0 beside totalLogFilesCompacted 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions.compaction import execute_compaction, schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.test_attack_lake_sequences import lake_config, lake_rows


def _rows(keys: range, ts: int) -> list[dict]:
    return [{"id": f"k{i}", "p": "p0", "ts": ts, "v": f"v{ts}", "d": None} for i in keys]


@pytest.mark.parametrize("version", [6, 9])
def test_compaction_commit_counts_log_records(tmp_path: Path, version: int) -> None:
    base = str(tmp_path / "t")
    cfg = lake_config(version, "MERGE_ON_READ", "EVENT_TIME_ORDERING", "SIMPLE")
    del cfg["hoodie.metadata.index.column.stats.enable"]
    write_arrow(base, lake_rows(_rows(range(10), 1)), "upsert", cfg)
    write_arrow(base, lake_rows(_rows(range(0, 4), 2)), "upsert", cfg)  # 4 log records
    write_arrow(base, lake_rows(_rows(range(2, 6), 3)), "upsert", cfg)  # 4 more, 2 keys again
    write_arrow(base, lake_rows(_rows(range(5, 6), 4)), "delete", cfg)  # 1 delete record
    plan = schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True)
    execute_compaction(HoodieTable.load(base), plan.instant.timestamp, LocalExecutor(), HoodieConfig(cfg))
    timeline = HoodieTable.load(base).timeline
    stats = timeline.commit_metadata(timeline.completed_commits().last()).write_stats
    assert len(stats) == 1
    stat = stats[0].to_dict()
    assert stat["totalLogFilesCompacted"] >= 1
    assert stat["totalLogRecords"] == 9  # every record of the valid log blocks, the delete included
    assert stat["totalUpdatedRecordsCompacted"] == 6  # distinct keys among them: k0..k5
