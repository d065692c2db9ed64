"""Attack: a write killed after its metadata-table delta commit completed, just before its own
instant completed, in a write whose metadata-table update also compacted the metadata table.
The next write rolls the dead one back; the metadata table must then forget it: no record-index
entry for a key only the dead write inserted (a later insert of that key would be taken for an
update of the file group the rollback deleted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_crash_steps import _rows, expire_heartbeats, run_killed
from tests.actions.test_attack_lake_sequences import assert_metadata_describes_storage, lake_config, rows_of
from tests.table.normalize import hudi_rs_rows, normalize_table


def _completing_the_data_write(name: str, path: str) -> bool:
    return name == "create_if_absent" and "/.hoodie/metadata/" not in path and path.endswith(".deltacommit")


def test_a_write_killed_after_its_metadata_commit_leaves_no_index_entry_once_rolled_back(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = {**lake_config(9, "MERGE_ON_READ", "EVENT_TIME_ORDERING", "RECORD_INDEX"),
           "hoodie.metadata.compact.max.delta.commits": "1"}  # every write's metadata update compacts first
    write_arrow(base, _rows(("a", "p0", 1, "a1", None), ("b", "p0", 1, "b1", None), ("c", "p1", 1, "c1", None)),
                "upsert", cfg)
    write_arrow(base, _rows(("a", "p0", 2, "a2", None)), "upsert", cfg)
    model = rows_of(read_table(base))
    batch = _rows(("a", "p0", 3, "a3", None), ("d", "p1", 1, "d1", None))  # d: a new file group in p1
    assert run_killed(lambda: write_arrow(base, batch, "upsert", cfg), _completing_the_data_write)
    expire_heartbeats(base)
    assert write_arrow(base, _rows(("b", "p0", 9, "b9", None)), "upsert", cfg).rolled_back
    model["b"] = ("p0", 9, "b9", None)
    assert rows_of(read_table(base)) == model
    assert_metadata_describes_storage(base, "the rollback of a write killed after its metadata commit")
    write_arrow(base, batch, "upsert", cfg)  # d is an insert again (it was tagged an update of the deleted group)
    ours = read_table(base)
    assert rows_of(ours) == {**model, "a": ("p0", 3, "a3", None), "d": ("p1", 1, "d1", None)}
    assert normalize_table(ours) == hudi_rs_rows(base)


def _completing_the_metadata_delta_commit(name: str, path: str) -> bool:
    return name == "create_if_absent" and "/.hoodie/metadata/" in path and path.endswith(".deltacommit")


def test_a_clustering_killed_after_its_metadata_compaction_is_finished_by_its_retry(tmp_path: Path) -> None:
    from airflow_hoodie.actions import clustering as cu
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.table.hoodie_table import HoodieTable
    from tests.actions.test_attack_crash_steps import _cluster_config, _three_writes, assert_readers_agree

    base = str(tmp_path / "t")
    cfg = {**_cluster_config(9, "COPY_ON_WRITE"), "hoodie.metadata.compact.max.delta.commits": "1"}
    _three_writes(base, cfg)
    write_arrow(base, _rows(("x", "p1", 1, "x1", None)), "upsert", cfg)  # so the clustering's update compacts
    model = rows_of(read_table(base))
    conf = HoodieConfig({**cfg, "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)})
    # the metadata update compacts first (at an instant time after the clustering's), then dies before
    # its own delta commit completes: the compaction holds nothing of the clustering
    assert run_killed(lambda: cu.run_clustering(HoodieTable.load(base), conf, LocalExecutor()),
                      _completing_the_metadata_delta_commit)
    expire_heartbeats(base)
    done = cu.run_clustering(HoodieTable.load(base), conf, LocalExecutor(), mode="execute")  # raised HoodieError
    assert done["state"] == "completed"
    assert_readers_agree(base, model, "the retry of a clustering killed after its metadata compaction")
