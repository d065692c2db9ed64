"""A *completed* consistent-hashing resize undone: rolled back (it is the latest write) or
restored away (to a savepoint before it).

The rollback deletes the clustering's files and its child groups, and the old groups are
visible again; the resize's ``.hashing_meta`` (seqNo + 1) and its ``.commit`` marker must go
with it, or the ring loader keeps routing keys to the empty children while the old groups hold
them (duplicates, lost updates). Later writes then follow the previous ring: every key once,
with its latest value (ours and hudi-rs)."""

from __future__ import annotations

import glob

import pytest

from airflow_hoodie.actions.clustering import run_clustering
from airflow_hoodie.actions.consistent_bucket_write import ring_loader
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.restore import restore_to
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.test_consistent_hashing import CONF, _batch, _check_rows_in_ring, _metas
from tests.actions.test_consistent_hashing_dual_write import SPLIT, _expected, _ours, _rs, _schedule, _values


def _markers(base: str, part: str) -> list[str]:
    return sorted(p.rsplit("/", 1)[-1] for p in
                  glob.glob(f"{base}/.hoodie/.bucket_index/consistent_hashing_metadata/{part}/*.commit"))


@pytest.mark.parametrize("version", ["6", "8"])
@pytest.mark.parametrize("undo", ["rollback", "restore"])
def test_undone_resize_takes_its_ring_with_it(tmp_path, version: str, undo: str) -> None:
    base = str(tmp_path / "t")
    conf = {**CONF, "hoodie.write.table.version": version}
    first = _batch(40, 1)
    write_arrow(base, first, "upsert", conf)
    saved = HoodieTable.load(base).reload_timeline().last().timestamp
    if undo == "restore":
        create_savepoint(HoodieTable.load(base), saved)
    instant = _schedule(base, SPLIT)
    done = run_clustering(HoodieTable.load(base), HoodieConfig({**conf, **SPLIT}), LocalExecutor(), mode="execute",
                          instant_time=instant)
    assert done["state"] == "completed", done
    assert [m["seqNo"] for m in _metas(base, "a")] == [0, 1] and _markers(base, "a") == [f"{instant}.commit"]
    expected = _expected(first)
    if undo == "restore":
        after = _batch(12, 2, start=10)  # written on the new ring, then restored away
        write_arrow(base, after, "upsert", conf)
        out = restore_to(HoodieTable.load(base), saved, HoodieConfig(conf))
        assert instant in out["rolled_back"]
    else:
        out = rollback_latest_or(HoodieTable.load(base), instant, HoodieConfig(conf))
        assert out["rolled_back"] == instant
    assert [m["seqNo"] for m in _metas(base, "a")] == [0], "the resize's ring went with it"
    assert _markers(base, "a") == [] and _markers(base, "b") == []
    ring = ring_loader(HoodieTable.load(base))("a")
    assert ring is not None and ring.seq_no == 0 and len(ring.nodes) == 4
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected
    # updates to keys across every old bucket, and new keys: each once, with its latest value
    updates = _batch(30, 3, start=5)
    write_arrow(base, updates, "upsert", conf)
    again = _batch(10, 4, start=20)
    write_arrow(base, again, "upsert", conf)
    expected = _expected(first, updates, again)
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected
    _check_rows_in_ring(base, set(expected))
    # and a new resize works on the previous ring
    redo = _schedule(base, SPLIT)
    done = run_clustering(HoodieTable.load(base), HoodieConfig({**conf, **SPLIT}), LocalExecutor(), mode="execute",
                          instant_time=redo)
    assert done["state"] == "completed", done
    assert [m["seqNo"] for m in _metas(base, "a")] == [0, 1]
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected
    _check_rows_in_ring(base, set(expected))
