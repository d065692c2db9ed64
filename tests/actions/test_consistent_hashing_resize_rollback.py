"""A consistent-hashing resize rolled back while writes dual-wrote into its child groups
(duplicate update strategy), and a write that lands on a child between the clustering's
execution and its commit.

The child groups' logs duplicate records the old groups also hold. Once the clustering is
rolled back, nothing may read them: every row once, with its latest value (ours and hudi-rs),
and later writes and a new resize still work. A dual write between the clustering's tasks and
its commit still gets a base file under its child, or hudi-rs (which drops log-only groups)
would lose its keys."""

from __future__ import annotations

import glob
import os

import pytest

from airflow_hoodie.actions.clustering import run_clustering
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.consistent_hashing import plan_child_nodes
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.test_consistent_hashing import _batch, _check_rows_in_ring, _metas
from tests.actions.test_consistent_hashing_dual_write import DUAL, SPLIT, _expected, _ours, _rs, _schedule, _values


def _child_files(base: str, instant: str) -> list[str]:
    table = HoodieTable.load(base)
    plan = table.file_system_view(table.reload_timeline()).clustering_plan(instant)
    out = []
    for part, (_seq, nodes) in plan_child_nodes(plan).items():
        for n in nodes:
            out += glob.glob(f"{base}/{part}/{n.file_id}_*") + glob.glob(f"{base}/{part}/.{n.file_id}_*")
    return out


@pytest.mark.parametrize("version", ["6", "8"])
def test_rolled_back_resize_leaves_no_dual_written_rows(tmp_path, version: str) -> None:
    base = str(tmp_path / "t")
    conf = {**DUAL, "hoodie.write.table.version": version}
    first = _batch(40, 1)
    write_arrow(base, first, "upsert", conf)
    instant = _schedule(base, SPLIT)
    updates, inserts, deletes = _batch(16, 2, start=10), _batch(10, 3, start=40), _batch(3, 5, start=0)
    write_arrow(base, updates, "upsert", conf)
    write_arrow(base, inserts, "upsert", conf)
    write_arrow(base, deletes, "delete", conf)
    children = _child_files(base, instant)
    assert children and all(os.path.basename(f).startswith(".") for f in children), "dual writes made child logs"
    out = rollback_latest_or(HoodieTable.load(base), instant, HoodieConfig(conf))
    assert out["rolled_back"] == instant
    assert not [f for f in children if os.path.exists(f)], "the rollback deleted the child groups' logs"
    expected = _expected(first, updates, inserts, deleted={"k0", "k1", "k2"})
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected
    assert [m["seqNo"] for m in _metas(base, "a")] == [0]
    # a later write follows the old ring, and a new resize works on top of it
    later = _batch(6, 6, start=20)
    write_arrow(base, later, "upsert", conf)
    expected = _expected(first, updates, inserts, later, deleted={"k0", "k1", "k2"})
    assert _ours(base) == expected
    again = _schedule(base, SPLIT)
    done = run_clustering(HoodieTable.load(base), HoodieConfig({**conf, **SPLIT}), LocalExecutor(), mode="execute",
                          instant_time=again)
    assert done["state"] == "completed", done
    assert [m["seqNo"] for m in _metas(base, "a")] == [0, 1]
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected
    _check_rows_in_ring(base, set(expected))
