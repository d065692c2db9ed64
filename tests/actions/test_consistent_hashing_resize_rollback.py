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

import pyarrow as pa
import pytest

from airflow_hoodie.actions import planned_service
from airflow_hoodie.actions.clustering import run_clustering
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.consistent_hashing import HashingMetadata, Ring, plan_child_nodes, xxhash32
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.test_consistent_hashing import INT_MAX, _batch, _check_rows_in_ring, _metas
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


def _keys_in_quarter(node_ranges: list[tuple[int, int]], lower: bool, n: int) -> list[str]:
    """``n`` keys whose hash lies in the lowest (``lower``) or highest quarter of one of the ranges."""
    out = []
    for i in range(100_000):
        h = xxhash32(f"q{i}".encode()) & INT_MAX
        for lo, hi in node_ranges:
            q = (hi - lo) // 4
            if lo < h <= hi and ((h <= lo + q) if lower else (h > hi - q)):
                out.append(f"q{i}")
        if len(out) == n:
            return out
    raise AssertionError("not enough keys")


def _rows(keys: list[str], ts: int) -> pa.Table:
    return pa.table({"id": keys, "ts": pa.array([ts] * len(keys), pa.int64()), "v": [f"{k}@{ts}" for k in keys],
                     "p": ["a"] * len(keys)})


@pytest.mark.parametrize("version", ["6", "8"])
def test_dual_write_between_clustering_tasks_and_commit_gets_a_base_file(tmp_path, monkeypatch, version: str) -> None:
    """Every old group's rows hash into the lower half of its range, so each upper child gets
    no rows from the clustering; a dual write of upper-half keys lands after the tasks ran and
    before the replacecommit completes. Its keys must stay readable by hudi-rs."""
    base = str(tmp_path / "t")
    conf = {**DUAL, "hoodie.write.table.version": version}
    nodes = Ring(HashingMetadata.default("a", 4)).nodes
    ranges = [(nodes[i - 1].value if i else -1, n.value) for i, n in enumerate(nodes)]
    first = _rows(_keys_in_quarter(ranges, True, 40), 1)
    write_arrow(base, first, "upsert", conf)
    instant = _schedule(base, SPLIT)
    late = _rows(_keys_in_quarter(ranges, False, 8), 2)
    real = planned_service.crash_point

    def write_in_between(name: str) -> None:
        if name == "clustering.before_commit":
            write_arrow(base, late, "upsert", conf)
        real(name)

    monkeypatch.setattr(planned_service, "crash_point", write_in_between)
    out = run_clustering(HoodieTable.load(base), HoodieConfig({**conf, **SPLIT}), LocalExecutor(), mode="execute",
                         instant_time=instant)
    assert out["state"] == "completed", out
    expected = _expected(first, late)
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected
    _check_rows_in_ring(base, set(expected))
