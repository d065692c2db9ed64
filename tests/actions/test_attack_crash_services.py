"""Attack: the Airflow retry of a table-service task killed half way. The retry runs the task's
own arguments again; what the killed try left must not stay behind as a plan nobody runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_crash_steps import _cluster_config, _rows, _three_writes, expire_heartbeats, run_killed
from tests.actions.test_attack_lake_sequences import assert_metadata_describes_storage, rows_of


def test_the_retry_of_a_killed_clustering_task_leaves_no_plan_pending(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _cluster_config(9, "MERGE_ON_READ")
    model = _three_writes(base, cfg)
    conf = HoodieConfig({**cfg, "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)})
    assert run_killed(lambda: cu.run_clustering(HoodieTable.load(base), conf, LocalExecutor()),
                      lambda name, path: name == "open_output" and path.endswith(".parquet"))  # writing its output
    expire_heartbeats(base)
    cu.run_clustering(HoodieTable.load(base), conf, LocalExecutor())  # the retry: same task, same mode
    assert cu.pending_clustering_instants(HoodieTable.load(base)) == []
    assert_metadata_describes_storage(base, "the retry of a killed clustering")
    write_arrow(base, _rows(("a", "p0", 9, "a9", None)), "upsert", cfg)  # refused: a pending plan holds a's group
    assert rows_of(read_table(base)) == {**model, "a": ("p0", 9, "a9", None)}
