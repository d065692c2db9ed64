"""Writes while a consistent-hashing resize is pending, with Hudi's
SparkConsistentBucketDuplicateUpdateStrategy: each record located in a group the resize
rewrites goes to that group and to the child group the plan's child nodes give its key (new
keys and deletes too), in a log of the slice based at the clustering instant. Readers see the
old groups until the replacecommit completes, then the clustering's base files followed by those
logs: every acknowledged row once, with its latest value (ours and hudi-rs), on both log-file
layouts (table version 6 names a log by its slice, 8+ by its delta commit)."""

from __future__ import annotations

import glob

import pyarrow as pa
import pytest

from airflow_hoodie.actions.clustering import run_clustering, schedule_clustering
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.clustering import DUPLICATE_UPDATE_STRATEGY, UPDATES_STRATEGY
from airflow_hoodie.errors import HoodieWriteConflictError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_consistent_hashing import CONF, _batch, _check_rows_in_ring, _metas, _rs

DUAL = {**CONF, UPDATES_STRATEGY: DUPLICATE_UPDATE_STRATEGY}
SPLIT = {"hoodie.parquet.max.file.size": "1000", "hoodie.bucket.index.max.num.buckets": "8"}
MERGE = {"hoodie.parquet.max.file.size": str(1 << 30), "hoodie.bucket.index.min.num.buckets": "2"}


def _values(rows: list[dict]) -> dict[str, str]:
    out: dict[str, str] = {}
    for r in rows:
        assert r["id"] not in out, f"{r['id']} read twice"
        out[r["id"]] = r["v"]
    return out


def _ours(base: str) -> dict[str, str]:
    return _values(read_table(base).select(["id", "v"]).to_pylist())


def _expected(*batches: pa.Table, deleted: set[str] = frozenset()) -> dict[str, str]:
    out: dict[str, str] = {}
    for b in batches:
        out.update(zip(b.column("id").to_pylist(), b.column("v").to_pylist()))
    return {k: v for k, v in out.items() if k not in deleted}


def _schedule(base: str, conf: dict[str, str]) -> str:
    out = schedule_clustering(HoodieTable.load(base), HoodieConfig({**CONF, **conf}))
    assert out["instant"] is not None, out
    return out["instant"]


@pytest.mark.parametrize("version", ["6", "8"])
@pytest.mark.parametrize("resize", ["split", "merge"])
def test_writes_while_a_resize_is_pending_survive_it(tmp_path, version: str, resize: str) -> None:
    base = str(tmp_path / "t")
    conf = {**DUAL, "hoodie.write.table.version": version}
    first = _batch(40, 1)
    write_arrow(base, first, "upsert", conf)
    instant = _schedule(base, SPLIT if resize == "split" else MERGE)
    updates = _batch(16, 2, start=10)       # k10..k25 updated, k40..k49 absent so far: no
    inserts = _batch(10, 3, start=40)       # new keys during the pending resize
    again = _batch(6, 4, start=12)          # a second write to the same keys, still pending
    deletes = _batch(3, 5, start=0)
    for data in (updates, inserts, again):
        write_arrow(base, data, "upsert", conf)
    write_arrow(base, deletes, "delete", conf)
    expected = _expected(first, updates, inserts, again, deleted={"k0", "k1", "k2"})
    # pending: the child groups' logs are not visible yet, the old groups carry every write
    assert _ours(base) == expected
    assert [m["seqNo"] for m in _metas(base, "a")] == [0]
    children = glob.glob(f"{base}/*/.*_{instant}.log.*") if version == "6" else []
    if version == "6":
        assert children, "dual writes append to logs of the child slices based at the clustering instant"
    out = run_clustering(HoodieTable.load(base), HoodieConfig({**conf, **(SPLIT if resize == "split" else MERGE)}),
                         LocalExecutor(), mode="execute", instant_time=instant)
    assert out["state"] == "completed", out
    assert [m["seqNo"] for m in _metas(base, "a")] == [0, 1]
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected
    _check_rows_in_ring(base, set(expected))
    # later writes follow the new ring, and the dual-written logs stay under the new base files
    later = _batch(5, 6, start=20)
    write_arrow(base, later, "upsert", conf)
    expected = _expected(first, updates, inserts, again, later, deleted={"k0", "k1", "k2"})
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected


def test_reject_strategy_stays_the_default(tmp_path) -> None:
    base = str(tmp_path / "t")
    write_arrow(base, _batch(20, 1), "upsert", CONF)
    _schedule(base, SPLIT)
    with pytest.raises(HoodieWriteConflictError, match="pending clustering"):
        write_arrow(base, _batch(5, 2), "upsert", CONF)
    assert _ours(base) == _expected(_batch(20, 1))
