"""A write that dual-wrote into a pending resize's child groups (duplicate update strategy)
while that resize was rolled back, before the write committed.

The rollback deleted the child groups' files it found, but the write may put more there after
it, and its commit metadata names child logs of a clustering that no longer exists: table
version 8+ slices those logs into a visible log-only group (rows read twice), and the ring
loader's recommit check would take the dead ring for committed. The write must fail its commit
as a conflict and leave nothing in the dead child groups; a retry then writes on the old ring."""

from __future__ import annotations

import glob
import os

import pytest

from airflow_hoodie.actions import write_client
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieWriteConflictError
from airflow_hoodie.table.consistent_hashing import plan_child_nodes
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.test_consistent_hashing import _batch, _check_rows_in_ring, _metas
from tests.actions.test_consistent_hashing_dual_write import DUAL, SPLIT, _expected, _ours, _rs, _schedule, _values


def _child_ids(base: str, instant: str) -> set[str]:
    table = HoodieTable.load(base)
    plan = table.file_system_view(table.reload_timeline()).clustering_plan(instant)
    return {n.file_id for _seq, nodes in plan_child_nodes(plan).values() for n in nodes}


def _data_files(base: str) -> set[str]:
    return {f for f in glob.glob(f"{base}/*/*") + glob.glob(f"{base}/*/.*") if ".hoodie_partition_metadata" not in f}


@pytest.mark.parametrize("version", ["6", "8"])
@pytest.mark.parametrize("when", ["after_inflight", "before_commit"])
def test_dual_write_racing_the_resize_rollback_fails_its_commit(tmp_path, monkeypatch, version: str,
                                                                when: str) -> None:
    """start write -> roll back the resize -> commit the write: ``after_inflight`` rolls the
    resize back before the write's tasks run (they write into the dead child groups),
    ``before_commit`` after them (the rollback deleted what they wrote there)."""
    base = str(tmp_path / "t")
    conf = {**DUAL, "hoodie.write.table.version": version}
    first = _batch(40, 1)
    write_arrow(base, first, "upsert", conf)
    instant = _schedule(base, SPLIT)
    children = _child_ids(base, instant)
    assert len(children) == 16  # 2 partitions x 4 buckets, each split in 2
    before = _data_files(base)
    real_inflight, real_commit = write_client.WriteClient.inflight, write_client.WriteClient.commit
    rolled: list[str] = []

    def roll_back_resize() -> None:
        if not rolled:
            out = rollback_latest_or(HoodieTable.load(base), instant, HoodieConfig(conf))
            rolled.append(out["rolled_back"])

    def inflight(self, *args, **kwargs):  # noqa: ANN001, ANN202 - the patched method's own signature
        real_inflight(self, *args, **kwargs)
        if when == "after_inflight":
            roll_back_resize()

    def commit(self, *args, **kwargs):  # noqa: ANN001, ANN202
        if when == "before_commit":
            roll_back_resize()
        return real_commit(self, *args, **kwargs)

    monkeypatch.setattr(write_client.WriteClient, "inflight", inflight)
    monkeypatch.setattr(write_client.WriteClient, "commit", commit)
    updates = _batch(16, 2, start=10)
    with pytest.raises(HoodieWriteConflictError, match=instant):
        write_arrow(base, updates, "upsert", conf)
    assert rolled == [instant]
    monkeypatch.undo()
    expected = _expected(first)
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected
    left = _data_files(base) - before
    stray = sorted(f for f in _data_files(base) if os.path.basename(f).lstrip(".").split("_", 1)[0] in children)
    assert not stray, f"files left in the rolled-back resize's child groups: {stray}"
    assert not [f for f in left if not f.endswith(".log") and ".log." not in f], left
    assert [m["seqNo"] for m in _metas(base, "a")] == [0]
    # the retry writes on the old ring: every key once with its latest value
    write_arrow(base, updates, "upsert", conf)
    expected = _expected(first, updates)
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected
    _check_rows_in_ring(base, set(expected))
