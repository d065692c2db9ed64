"""Attack (issue 35, F5): a version 8/9 archival killed right after it published its LSM
snapshot (``manifest_<N>`` then ``_version_``), before it deleted the active files of what it
archived. Those instants are then both archived and on the active timeline; the retry (after
more writes, as Airflow's retry usually comes) must finish deleting them, not archive them a
second time into a new level-0 file (which left 6-7 instants twice in the LSM history)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.timeline.lsm_timeline import snapshot_files
from tests.actions.test_attack_crash_steps import expire_heartbeats, run_killed
from tests.actions.test_attack_lake_sequences import _one, _simple_config


def archived_instant_times(table: HoodieTable) -> list[str]:
    """Every instant time the LSM history's live snapshot lists, as many times as it is there
    (read with pyarrow from the manifest's files, not with our archived-timeline reader)."""
    folder = table.history_path
    out: list[str] = []
    for name in snapshot_files(table.storage, folder):
        out += pq.read_table(os.path.join(folder, name), columns=["instantTime"]).column(0).to_pylist()
    return out


def _after_version_published(history: str):
    """A kill step: the first storage change after ``history``'s ``_version_`` was written."""
    seen = {"published": False}

    def step(name: str, path: str) -> bool:
        if seen["published"]:
            return True
        if name == "write_bytes" and path == os.path.join(history, "_version_"):
            seen["published"] = True
        return False
    return step


@pytest.mark.parametrize("version", [8, 9])
def test_an_archival_killed_after_publishing_its_snapshot_archives_nothing_twice(tmp_path: Path,
                                                                                 version: int) -> None:
    base = str(tmp_path / "t")
    cfg = {**_simple_config(version), "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
           "hoodie.cleaner.commits.retained": "1", "hoodie.metadata.compact.max.delta.commits": "1"}
    for ts in range(1, 8):
        write_arrow(base, _one("a", ts, f"a{ts}"), "upsert", cfg)
    table = HoodieTable.load(base)
    assert run_killed(lambda: run_archive(HoodieTable.load(base), HoodieConfig(cfg)),
                      _after_version_published(table.history_path)), "the archival finished before the kill"
    killed_batch = archived_instant_times(HoodieTable.load(base))
    assert killed_batch, "the killed archival published nothing: nothing was tested"
    for ts in range(8, 11):  # the retry comes later: it would choose a larger batch
        write_arrow(base, _one("a", ts, f"a{ts}"), "upsert", cfg)
    expire_heartbeats(base)
    result = run_archive(HoodieTable.load(base), HoodieConfig(cfg))
    table = HoodieTable.load(base)
    archived = archived_instant_times(table)
    twice = sorted(t for t, n in Counter(archived).items() if n > 1)
    assert not twice, f"archived twice: {twice} (the retry archived {result.get('archived_instants')})"
    active = {i.timestamp for i in table.reload_timeline().all_instants}
    assert not active & set(archived), f"archived and still active: {sorted(active & set(archived))}"
    assert set(killed_batch) <= set(archived)
    assert [r["v"] for r in read_table(base).to_pylist()] == ["a10"]
    assert sorted(archived) == sorted(i.timestamp for i in table.archived_timeline().instants if i.is_completed)
