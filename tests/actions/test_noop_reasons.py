"""Services that do nothing say why, with the rule and its numbers (issue 36, item 3).

A new user's compaction planned nothing on a young table and an archival archived nothing
beside a metadata table that had not compacted; both said only "nothing to do"."""

from __future__ import annotations

import re
from pathlib import Path

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.clustering import schedule_clustering
from airflow_hoodie.actions.compaction import schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_client import WriteClient
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.test_attack_lake_sequences import lake_config, lake_rows


def _rows(n: int, ts: int, start: int = 0) -> list[dict]:
    return [{"id": f"k{i}", "p": "p0", "ts": ts, "v": f"v{ts}", "d": None} for i in range(start, start + n)]


def _cfg(table_type: str = "MERGE_ON_READ", **extra: str) -> dict[str, str]:
    cfg = lake_config(6, table_type, "EVENT_TIME_ORDERING", "SIMPLE")
    del cfg["hoodie.metadata.index.column.stats.enable"]
    cfg.pop("hoodie.parquet.small.file.limit", None)  # Hudi's default: small files take the updates
    return {**cfg, **extra}


def test_compaction_on_a_young_table_names_the_small_file_rule(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _cfg()
    write_arrow(base, lake_rows(_rows(5, 1)), "upsert", cfg)
    write_arrow(base, lake_rows(_rows(5, 2, start=5)), "upsert", cfg)  # inserts: into a new, larger base file
    not_due = schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg))
    assert not_due.instant is None
    assert "2 delta commits" in not_due.reason and "hoodie.compact.inline.max.delta.commits=5" in not_due.reason
    forced = schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True)
    assert forced.instant is None
    assert "1 latest file slices, 0 with log files" in forced.reason
    assert "2 of the 2 delta commits since the last compaction wrote base files only" in forced.reason
    assert "hoodie.parquet.small.file.limit=104857600" in forced.reason


def test_archival_names_the_metadata_table_that_has_not_compacted(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _cfg("COPY_ON_WRITE", **{"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                                   "hoodie.cleaner.commits.retained": "1"})
    for ts in range(1, 7):
        write_arrow(base, lake_rows(_rows(2, ts, start=ts * 10)), "upsert", cfg)
    out = run_archive(HoodieTable.load(base), HoodieConfig(cfg))
    assert out["instant"] is None
    reason = out["reason"]
    assert "6 completed commits (over hoodie.keep.max.commits=3)" in reason
    assert "the metadata table has not compacted yet" in reason
    assert re.search(r"\(7 delta commits since it last compacted; it compacts after "
                     r"hoodie.metadata.compact.max.delta.commits=10\)", reason), reason


def test_archival_on_a_young_table_and_behind_a_pending_write(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _cfg("COPY_ON_WRITE", **{"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                                   "hoodie.cleaner.commits.retained": "1", "hoodie.metadata.enable": "false"})
    for ts in range(1, 3):
        write_arrow(base, lake_rows(_rows(2, ts, start=ts * 10)), "upsert", cfg)
    young = run_archive(HoodieTable.load(base), HoodieConfig(cfg))["reason"]
    assert "2 completed commits on the active timeline; archival starts above hoodie.keep.max.commits=3" in young
    slow = WriteClient(base, HoodieConfig(cfg))
    slow.load_table()
    pending = slow.start(slow.new_instant_time(), "commit", "upsert")
    try:
        for ts in range(3, 7):
            write_arrow(base, lake_rows(_rows(2, ts, start=ts * 10)), "upsert",
                        {**cfg, "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
                         "hoodie.write.lock.provider":
                             "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
                         "hoodie.cleaner.policy.failed.writes": "LAZY"})
        held = run_archive(HoodieTable.load(base), HoodieConfig(cfg))
        assert held["instant"] is None
        assert "6 completed commits" in held["reason"]
        assert f"commit {pending} is pending (requested)" in held["reason"]
    finally:
        slow.txn.heartbeats.stop(pending)


def test_clean_names_its_retention(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _cfg("COPY_ON_WRITE", **{"hoodie.cleaner.commits.retained": "3"})
    write_arrow(base, lake_rows(_rows(2, 1)), "upsert", cfg)
    out = cl.run_clean(HoodieTable.load(base), HoodieConfig(cfg), LocalExecutor())
    assert out["instant"] is None
    assert "1 completed commits, all within the retention (hoodie.cleaner.commits.retained=3)" in out["reason"]


def test_clustering_names_what_exists_against_the_strategy(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _cfg("COPY_ON_WRITE", **{"hoodie.clustering.plan.strategy.small.file.limit": "100"})
    write_arrow(base, lake_rows(_rows(2, 1)), "upsert", cfg)
    out = schedule_clustering(HoodieTable.load(base), HoodieConfig(cfg))
    assert out["instant"] is None
    assert ("1 file slices in 1 partitions; 0 with a base file under "
            "hoodie.clustering.plan.strategy.small.file.limit=100 bytes") in out["reason"]


# ---------------------------------------------------------------- archival's other blockers
#: small retention, no metadata table: only the blocker under test holds the oldest commit
_KEEP = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1",
         "hoodie.metadata.enable": "false"}


def test_archival_names_the_savepoint_that_holds_the_oldest_commit(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _cfg("COPY_ON_WRITE", **_KEEP)
    first = write_arrow(base, lake_rows(_rows(2, 1, start=10)), "upsert", cfg).instant
    create_savepoint(HoodieTable.load(base), first)
    for ts in range(2, 7):
        write_arrow(base, lake_rows(_rows(2, ts, start=ts * 10)), "upsert", cfg)
    out = run_archive(HoodieTable.load(base), HoodieConfig(cfg))
    assert out["instant"] is None
    assert f"6 completed commits (over hoodie.keep.max.commits=3), but the oldest, {first}, must stay" in out["reason"]
    assert f"savepoint {first}: commits from it on stay (hoodie.archive.beyond.savepoint=false)" in out["reason"]


def test_archival_names_a_pending_compaction(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _cfg("MERGE_ON_READ", **_KEEP, **{"hoodie.parquet.small.file.limit": "0"})
    write_arrow(base, lake_rows(_rows(3, 1)), "upsert", cfg)
    write_arrow(base, lake_rows(_rows(3, 2)), "upsert", cfg)  # updates: log files
    planned = schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True).instant
    assert planned is not None
    for ts in range(3, 9):
        write_arrow(base, lake_rows(_rows(3, ts)), "upsert", cfg)
    run_archive(HoodieTable.load(base), HoodieConfig(cfg))  # what lies before the plan's start may go
    out = run_archive(HoodieTable.load(base), HoodieConfig(cfg))
    assert out["instant"] is None
    assert f"compaction {planned.timestamp} is pending (requested)" in out["reason"]


def test_archival_names_the_cleaners_retention_that_raised_its_bounds(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _cfg("COPY_ON_WRITE", **{**_KEEP, "hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS",
                                   "hoodie.cleaner.hours.retained": "24"})
    for ts in range(1, 8):
        write_arrow(base, lake_rows(_rows(2, ts)), "upsert", cfg)
    out = run_archive(HoodieTable.load(base), HoodieConfig(cfg))
    assert out["instant"] is None
    assert ("7 completed commits on the active timeline; archival starts above hoodie.keep.max.commits=3, "
            "raised to 9 by the cleaner's retention") in out["reason"]


def test_archival_on_version_9_names_the_metadata_tables_completion_fence(tmp_path: Path) -> None:
    """Hudi 1.x keeps every commit that *completed* after the metadata table's latest
    compaction: the oldest held commit may have been requested before it. The reason said
    "commits after it stay", beside an oldest commit older than the compaction."""
    base = str(tmp_path / "t")
    cfg = {**lake_config(9, "COPY_ON_WRITE", "EVENT_TIME_ORDERING", "SIMPLE"),
           "hoodie.time.generator.max_expected_clock_skew_ms": "0", "hoodie.keep.min.commits": "2",
           "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1",
           "hoodie.metadata.compact.max.delta.commits": "2"}
    del cfg["hoodie.metadata.index.column.stats.enable"]
    for ts in range(1, 4):  # the metadata table compacts
        write_arrow(base, lake_rows(_rows(2, ts, start=ts * 10)), "upsert", cfg)
    cfg["hoodie.metadata.compact.max.delta.commits"] = "100"
    for ts in range(4, 9):  # ... and then not again
        write_arrow(base, lake_rows(_rows(2, ts, start=ts * 10)), "upsert", cfg)
    run_archive(HoodieTable.load(base), HoodieConfig(cfg))  # what completed before the fence may go
    out = run_archive(HoodieTable.load(base), HoodieConfig(cfg))
    assert out["instant"] is None
    assert re.search(r"must stay: the metadata table's latest compaction is \d+; commits that completed after "
                     r"it stay \(\d+ delta commits since it last compacted; it compacts after "
                     r"hoodie.metadata.compact.max.delta.commits=100\)", out["reason"]), out["reason"]
