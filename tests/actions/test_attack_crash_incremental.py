"""Attack: incremental reads that can no longer answer must refuse, not return less. A pipeline
pulls (start, end] windows and checkpoints ``end``: a window read short is never read again.

* A hollow commit (version 6): an older write still pending while a newer one completed. What
  the older one commits later lies before the consumer's checkpoint. Hudi 0.14's incremental
  relations (and Hudi 1.x's for version-6 tables) fail by default
  (hoodie.read.timeline.holes.resolution.policy=FAIL: "Found hollow commit").
* A window that ends before the clean horizon: the files its commits wrote are gone. Hudi
  raises HoodieIncrementalPathNotFoundException (time travel to the same instant is refused
  here since f4374a0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_client import WriteClient
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import _one, _simple_config

OCC = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
       "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
       "hoodie.cleaner.policy.failed.writes": "LAZY"}


def _window(base: str, start: str, end: str | None = None) -> list[tuple[str, str]]:
    got = read_table(base, query_type="incremental", start=start, end=end)
    return sorted((r["id"], r["v"]) for r in got.to_pylist())


def test_an_incremental_read_across_a_hollow_commit_is_refused_on_version_6(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = {**_simple_config(6), **OCC}
    t1 = write_arrow(base, _one("a", 1, "a1"), "upsert", cfg).instant
    slow = WriteClient(base, HoodieConfig(cfg))
    slow.load_table()
    t2 = slow.start(slow.new_instant_time(), "commit", "upsert")  # a live writer, still running
    try:
        t3 = write_arrow(base, _one("b", 1, "b1"), "upsert", cfg).instant
        assert t1 < t2 < t3
        with pytest.raises(HoodieError, match="hollow"):
            _window(base, t1)  # returned [b1]: a consumer checkpoints t3 and never reads t2's rows
    finally:
        slow.txn.heartbeats.stop(t2)


@pytest.mark.parametrize("version", [6, 9])
def test_an_incremental_window_whose_files_were_cleaned_is_refused_or_whole(tmp_path: Path, version: int) -> None:
    base = str(tmp_path / "t")
    cfg = _simple_config(version)
    writes = [write_arrow(base, _one(k, 1, f"{k}1"), "upsert", cfg).instant for k in ("a", "b")]
    writes += [write_arrow(base, _one("a", ts, f"a{ts}"), "upsert", cfg).instant for ts in (2, 3, 4)]
    # version 6 windows run on requested times, 8/9 on completion times
    bounds = HoodieTable.load(base).timeline.completion_times() if version >= 8 else {t: t for t in writes}
    start, end = bounds[writes[1]], bounds[writes[2]]  # (b1, a2]: the write of a2
    expected = _window(base, start, end)
    assert expected == [("a", "a2")]
    cl.run_clean(HoodieTable.load(base), HoodieConfig({**cfg, cl.POLICY: cl.KEEP_LATEST_COMMITS,
                                                       "hoodie.cleaner.commits.retained": "1"}), LocalExecutor())
    with pytest.raises(HoodieError, match="clean"):
        read_table(base, as_of=writes[2])  # refused since f4374a0
    try:
        assert _window(base, start, end) == expected  # read [] after the clean
    except HoodieError as refused:
        assert "clean" in str(refused)
