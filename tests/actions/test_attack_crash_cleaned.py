"""Attack: a clean whose delete fails (an I/O error, not a missing file) must not complete as if
it had deleted. The files of file groups a clustering replaced are hidden only by that
replacecommit; once archival moves it out of the active timeline, a replaced file the clean
failed to delete is a live file group again and its rows are read twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieError, HoodieIOError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.storage.storage import Storage
from tests.actions.test_attack_lake_sequences import _one, _simple_config


def test_a_clean_that_failed_to_delete_a_replaced_file_leaves_no_duplicate_after_archival(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = str(tmp_path / "t")
    cfg = {**_simple_config(6), "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
           "hoodie.cleaner.commits.retained": "1", "hoodie.metadata.compact.max.delta.commits": "1"}
    write_arrow(base, _one("a", 1, "a1"), "upsert", cfg)
    write_arrow(base, _one("b", 1, "b1"), "upsert", cfg)  # a second small file group in p0
    small = {"hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)}
    assert cu.run_clustering(HoodieTable.load(base), HoodieConfig({**cfg, **small}), LocalExecutor())["state"] == \
        "completed"
    for key in ("x", "y"):
        write_arrow(base, _one(key, 1, f"{key}1", p="p1"), "upsert", cfg)
    real_delete = Storage.delete
    failed: list[str] = []

    def throttled_once(self: Storage, path: str, *args: object, **kwargs: object) -> bool:
        if "/p0/" in path and path.endswith(".parquet") and not failed:
            failed.append(path)
            raise HoodieIOError(f"Cannot delete {path!r}: 503 Slow Down")
        return real_delete(self, path, *args, **kwargs)

    monkeypatch.setattr(Storage, "delete", throttled_once)
    try:
        cl.run_clean(HoodieTable.load(base), HoodieConfig(cfg), LocalExecutor())
    except HoodieError:  # failing (Hudi: an IOException fails the clean) is fine: the retry finishes the plan
        cl.run_clean(HoodieTable.load(base), HoodieConfig(cfg), LocalExecutor())
    monkeypatch.setattr(Storage, "delete", real_delete)
    for key in ("u", "v"):
        write_arrow(base, _one(key, 1, f"{key}1", p="p1"), "upsert", cfg)
    archived = run_archive(HoodieTable.load(base), HoodieConfig(cfg)).get("archived_instants", [])
    assert len(archived) >= 3  # the replacecommit among them
    ids = sorted(r["id"] for r in read_table(base).to_pylist())
    assert ids == sorted(set(ids)), f"a key read twice: {ids}"  # ['a', 'b', 'b', ...]
