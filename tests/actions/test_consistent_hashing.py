"""Hudi's consistent-hashing bucket index (issue 39, item 2): default rings as Hudi's Java makes
them, every row in the bucket xxhash32 picks, a split and a merge resize that keep every key
readable (hudi-rs and ours) with the new ring at seqNo + 1, and writes during a pending resize
refused as Hudi's default update strategy refuses them.

The expected nodes come from a transcription of Hudi's Java written here, apart from the module
under test."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import struct
import uuid

import pyarrow as pa
import pytest

from airflow_hoodie.actions.clustering import run_clustering, schedule_clustering
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieNotSupportedError, HoodieWriteConflictError
from airflow_hoodie.table.consistent_hashing import xxhash32
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows

INT_MAX = 2**31 - 1


def _java_default_nodes(partition: str, n: int) -> list[dict]:
    """HoodieConsistentHashingMetadata.constructDefaultHashingNodes + generateUUID, transcribed."""
    step = (INT_MAX + n - 1) // n
    start, out = 0, []
    for idx in range(1, n + 1):
        end = min(step * idx, INT_MAX)
        md5 = bytearray(hashlib.md5(struct.pack(">q", start) + struct.pack(">q", end) + partition.encode()).digest())
        md5[6] = (md5[6] & 0x0F) | 0x30  # UUID.nameUUIDFromBytes: version 3
        md5[8] = (md5[8] & 0x3F) | 0x80  # IETF variant
        out.append({"value": end, "fileIdPrefix": str(uuid.UUID(bytes=bytes(md5))), "tag": "NORMAL"})
        start = end
    return out


CONF = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.table.type": "MERGE_ON_READ", "hoodie.index.type": "BUCKET",
        "hoodie.index.bucket.engine": "CONSISTENT_HASHING", "hoodie.bucket.index.num.buckets": "4",
        "hoodie.time.generator.max_expected_clock_skew_ms": "0"}


def _batch(n: int, ts: int, start: int = 0) -> pa.Table:
    ids = [f"k{i}" for i in range(start, start + n)]
    return pa.table({"id": ids, "ts": pa.array([ts] * n, pa.int64()), "v": [f"{i}@{ts}" for i in ids],
                     "p": ["a" if i % 2 else "b" for i in range(start, start + n)]})


def _metas(base: str, part: str) -> list[dict]:
    files = sorted(glob.glob(f"{base}/.hoodie/.bucket_index/consistent_hashing_metadata/{part}/*.hashing_meta"))
    return [json.load(open(f)) for f in files]


def _ring_of_row(nodes: list[dict], key: str) -> str:
    h = xxhash32(key.encode()) & INT_MAX
    for n in sorted(nodes, key=lambda n: n["value"]):
        if n["value"] >= h:
            return n["fileIdPrefix"]
    return min(nodes, key=lambda n: n["value"])["fileIdPrefix"]


def _check_rows_in_ring(base: str, expected_keys: set[str]) -> None:
    t = read_table(base)
    keys = t.column("_hoodie_record_key").to_pylist()
    assert sorted(keys) == sorted(expected_keys)  # no duplicate, none lost
    for key, part, name in zip(keys, t.column("_hoodie_partition_path").to_pylist(),
                               t.column("_hoodie_file_name").to_pylist()):
        fid = name.split("_", 1)[0] if name.endswith(".parquet") else name.lstrip(".").split("_", 1)[0]
        assert fid == _ring_of_row(_metas(base, part)[-1]["nodes"], key) + "-0", (key, part)
    assert sorted(r["_hoodie_record_key"] for r in _rs(base)) == sorted(expected_keys)


def _rs(base: str) -> list[dict]:
    """hudi-rs's snapshot read (normalized rows)."""
    return hudi_rs_rows(base)


def test_xxhash32_known_vectors() -> None:
    assert xxhash32(b"") == 0x02CC5D05
    assert xxhash32(b"a") == 0x550D7456
    assert xxhash32(b"abc") == 0x32D153FF
    assert xxhash32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_numpy_xxhash32_and_ring_lookup_equal_the_scalar_ones() -> None:
    """20k random keys of 0..69 characters (ASCII, Latin-1, BMP and astral code points, so 1..4
    UTF-8 bytes each and every stripe/word/byte tail length), plus complex keys of both parsers."""
    import random

    import numpy as np

    from airflow_hoodie.table.consistent_hashing import HashingMetadata, Ring, key_hash, key_hashes, xxhash32_batch

    rnd = random.Random(39)
    alphabet = "abcXYZ019-_ é\u20ac\u4e2d\U0001F600"
    keys = ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 70))) for _ in range(20_000)]
    arr = pa.array(keys)
    assert xxhash32_batch(arr).tolist() == [xxhash32(k.encode()) for k in keys]
    assert xxhash32_batch(arr.slice(7, 100)).tolist() == [xxhash32(k.encode()) for k in keys[7:107]]
    mixed = keys[:500] + [f"id:{k},p:x{i}" for i, k in enumerate(keys[:500])] + ["id:__null__,p:a", "a,b", "x:y"]
    ring = Ring(HashingMetadata.default("p", 7))
    for parser in ("split", "scan"):
        hashes = key_hashes(pa.array(mixed), ("id",), parser)
        assert hashes.tolist() == [key_hash(k, ("id",), parser) for k in mixed]
        assert ring.positions(hashes).tolist() == [ring.index_of_hash(h) for h in hashes.tolist()]
    edge = np.array([0, ring.nodes[0].value, ring.nodes[0].value + 1, INT_MAX], np.int64)
    assert ring.positions(edge).tolist() == [ring.index_of_hash(int(h)) for h in edge]


def test_default_ring_and_rows_in_their_nodes(tmp_path) -> None:
    base = str(tmp_path / "t")
    write_arrow(base, _batch(40, 1), "upsert", CONF)
    write_arrow(base, _batch(20, 2, start=30), "upsert", CONF)
    for part in ("a", "b"):
        (meta,) = _metas(base, part)
        assert meta == {"version": 0, "partitionPath": part, "instant": "00000000000000", "numBuckets": 4,
                        "seqNo": 0, "nodes": _java_default_nodes(part, 4)}
        raw = open(glob.glob(f"{base}/.hoodie/.bucket_index/consistent_hashing_metadata/{part}/*")[0]).read()
        assert raw.startswith('{\n  "version" : 0,\n  "partitionPath" : ') and '"nodes" : [ {' in raw
    _check_rows_in_ring(base, {f"k{i}" for i in range(50)})
    assert {r["v"] for r in _rs(base) if r["id"] == "k35"} == {"k35@2"}


def _resize(base: str, **conf: str) -> dict:
    return run_clustering(HoodieTable.load(base), HoodieConfig({**CONF, **conf}), LocalExecutor())


def test_split_then_merge_keep_every_key(tmp_path) -> None:
    base = str(tmp_path / "t")
    keys = {f"k{i}" for i in range(60)}
    write_arrow(base, _batch(60, 1), "upsert", CONF)
    # split: every slice is larger than 1000 bytes x 2.0; at most 6 buckets per partition
    out = _resize(base, **{"hoodie.parquet.max.file.size": "1000", "hoodie.bucket.index.max.num.buckets": "6"})
    assert out["state"] == "completed"
    for part in ("a", "b"):
        old, new = _metas(base, part)
        assert new["seqNo"] == old["seqNo"] + 1 and new["instant"] == out["instant"]
        assert len(new["nodes"]) == 6 and all(n["tag"] == "NORMAL" for n in new["nodes"])
        old_values = [n["value"] for n in old["nodes"]]
        assert set(old_values) <= {n["value"] for n in new["nodes"]}  # splits keep each range's end
        assert os.path.exists(f"{base}/.hoodie/.bucket_index/consistent_hashing_metadata/{part}/{out['instant']}.commit")
    _check_rows_in_ring(base, keys)
    write_arrow(base, _batch(10, 2, start=55), "upsert", CONF)  # writes follow the new ring
    keys |= {f"k{i}" for i in range(55, 65)}
    _check_rows_in_ring(base, keys)
    # merge: every slice is below 1 GB x 0.2; at least 2 buckets per partition
    out = _resize(base, **{"hoodie.parquet.max.file.size": str(1 << 30), "hoodie.bucket.index.min.num.buckets": "2"})
    for part in ("a", "b"):
        metas = _metas(base, part)
        assert [m["seqNo"] for m in metas] == [0, 1, 2]
        # all six are small and adjacent (a merged range may wrap past MAX_INT): merged down to the minimum
        assert len(metas[-1]["nodes"]) == 2
        assert {n["value"] for n in metas[-1]["nodes"]} <= {n["value"] for n in metas[-2]["nodes"]}
    _check_rows_in_ring(base, keys)
    assert {r["v"] for r in _rs(base) if r["id"] == "k56"} == {"k56@2"}


def test_writes_during_a_pending_resize_are_refused_as_hudi_does(tmp_path) -> None:
    base = str(tmp_path / "t")
    write_arrow(base, _batch(20, 1), "upsert", CONF)
    conf = {**CONF, "hoodie.parquet.max.file.size": "1000", "hoodie.bucket.index.max.num.buckets": "8"}
    sched = schedule_clustering(HoodieTable.load(base), HoodieConfig(conf))
    assert sched["instant"] is not None
    with pytest.raises(HoodieWriteConflictError, match="pending clustering"):
        write_arrow(base, _batch(5, 2), "upsert", CONF)
    with pytest.raises(HoodieNotSupportedError, match="SparkAllowUpdateStrategy"):
        write_arrow(base, _batch(5, 2), "upsert", {**CONF, "hoodie.clustering.updates.strategy":
                    "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"})
    assert [m["seqNo"] for m in _metas(base, "a")] == [0]  # the pending resize's ring is not the partition's yet
    run_clustering(HoodieTable.load(base), HoodieConfig(conf), LocalExecutor(), mode="execute")
    write_arrow(base, _batch(5, 2), "upsert", CONF)
    _check_rows_in_ring(base, {f"k{i}" for i in range(20)})


def test_refusals(tmp_path) -> None:
    with pytest.raises(HoodieNotSupportedError, match="MERGE_ON_READ"):
        write_arrow(str(tmp_path / "cow"), _batch(4, 1), "upsert", {**CONF, "hoodie.table.type": "COPY_ON_WRITE"})
    base = str(tmp_path / "t")
    write_arrow(base, _batch(4, 1), "upsert", CONF)
    with pytest.raises(HoodieNotSupportedError, match="consistent-hashing"):
        write_arrow(base, _batch(4, 2), "upsert", {**CONF, "hoodie.index.type": "SIMPLE"})
    with pytest.raises(HoodieNotSupportedError, match="consistent-hashing"):
        write_arrow(base, _batch(4, 2), "upsert", {**CONF, "hoodie.index.bucket.engine": "SIMPLE"})
