"""Attack: an archival killed half way through deleting the active files of what it archived
(requested and inflight files first, completed files last, so nothing archived looks pending).
A completed clean whose .clean.requested is gone is then on the active timeline; the retry must
archive it, not fail on its missing plan for ever."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_crash_steps import expire_heartbeats, run_killed
from tests.actions.test_attack_lake_sequences import _one, _simple_config


@pytest.mark.parametrize("version", [8, 9])
def test_an_archival_killed_after_deleting_a_cleans_plan_is_finished_by_its_retry(tmp_path: Path, version: int) -> None:
    base = str(tmp_path / "t")
    cfg = {**_simple_config(version), "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
           "hoodie.cleaner.commits.retained": "1", "hoodie.metadata.compact.max.delta.commits": "1"}
    for ts in range(1, 4):
        write_arrow(base, _one("a", ts, f"a{ts}"), "upsert", cfg)
    assert cl.run_clean(HoodieTable.load(base), HoodieConfig(cfg), LocalExecutor())["instant"] is not None
    for ts in range(4, 7):
        write_arrow(base, _one("a", ts, f"a{ts}"), "upsert", cfg)
    assert run_killed(lambda: run_archive(HoodieTable.load(base), HoodieConfig(cfg)),
                      lambda name, path: name == "delete" and "/.hoodie/metadata/" not in path
                      and path.endswith(".clean"))  # the clean's requested and inflight files are gone already
    expire_heartbeats(base)
    run_archive(HoodieTable.load(base), HoodieConfig(cfg))  # raised: "Instant file <clean>.clean.requested is missing"
    assert not [i for i in HoodieTable.load(base).reload_timeline().instants if i.action == "clean"]
    assert [r["v"] for r in read_table(base).to_pylist()] == ["a6"]
