"""Attack: a restore to a savepoint after archival. The restore leaves the savepointed commit as
the only commit on the active timeline; the files of the archived commits before it are still
the table's (completed, archived) data. Our view takes the first non-savepoint commit as the
start of the active timeline: with none left it took every archived commit's file for
uncommitted, so rows vanished from every read, and the next upsert of such a key inserted it
again (a duplicate hudi-rs reads too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.restore import restore_to
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import _one, _simple_config
from tests.table.normalize import hudi_rs_rows


def _values(base: str) -> list[tuple[str, str]]:
    return sorted((r["id"], r["v"]) for r in read_table(base).to_pylist())


def test_a_restore_to_the_only_commit_left_after_archival_keeps_the_archived_rows(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = {**_simple_config(6), "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
           "hoodie.cleaner.commits.retained": "1", "hoodie.metadata.compact.max.delta.commits": "1"}
    write_arrow(base, _one("a", 1, "a1", p="p0"), "upsert", cfg)
    write_arrow(base, _one("b", 1, "b1", p="p1"), "upsert", cfg)
    t3 = write_arrow(base, _one("b", 2, "b2", p="p1"), "upsert", cfg).instant
    create_savepoint(HoodieTable.load(base), t3, config=HoodieConfig(cfg))
    for ts in range(3):
        write_arrow(base, _one("c", ts, f"c{ts}", p="p2"), "upsert", cfg)
    assert len(run_archive(HoodieTable.load(base), HoodieConfig(cfg)).get("archived_instants", [])) == 2
    restore_to(HoodieTable.load(base), t3, HoodieConfig(cfg))
    assert sorted((r["id"], r["v"]) for r in hudi_rs_rows(base)) == [("a", "a1"), ("b", "b2")]
    assert _values(base) == [("a", "a1"), ("b", "b2")]  # read [b2]
    write_arrow(base, _one("a", 5, "a5", p="p0"), "upsert", cfg)
    assert _values(base) == [("a", "a5"), ("b", "b2")]  # a1 and a5
