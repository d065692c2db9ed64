"""Routing a driver-side batch to its buckets: which rows each file group gets, in which order."""

from __future__ import annotations

import pyarrow as pa

from airflow_hoodie.actions.file_group_write import FileGroupTask
from airflow_hoodie.actions.index import LOC_FILE, LOC_PART
from airflow_hoodie.actions.write import route_rows
from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH, RECORD_KEY


def _batch() -> pa.Table:
    rows = [  # key, partition, located (partition, file) or None
        ("k9", "p1", None), ("k1", "p0", ("p0", "f0")), ("k5", "p1", None), ("k3", "p1", ("p1", "f1")),
        ("k2", "p0", None), ("k8", "p0", ("p0", "f0")), ("k0", "p1", None), ("k7", "p0", None),
        ("k4", "p1", ("p1", "f0")),  # the same file id in another partition is another group
    ]
    return pa.table({RECORD_KEY: [r[0] for r in rows], PARTITION_PATH: [r[1] for r in rows],
                     LOC_PART: [r[2][0] if r[2] else None for r in rows],
                     LOC_FILE: [r[2][1] if r[2] else None for r in rows]})


def _tasks() -> list[FileGroupTask]:
    return [FileGroupTask(0, "UPDATE", "p0", "f0"), FileGroupTask(1, "UPDATE", "p1", "f1"),
            FileGroupTask(2, "UPDATE", "p1", "f0"), FileGroupTask(3, "INSERT", "p1", "new1"),
            FileGroupTask(4, "INSERT", "p0", "new0")]


def _keys_by_bucket(batch: pa.Table, order, bucket) -> dict[int, list[str]]:
    keys = batch.column(RECORD_KEY).take(pa.array(order)).to_pylist()
    out: dict[int, list[str]] = {}
    for k, b in zip(keys, bucket.tolist()):
        out.setdefault(b, []).append(k)
    return out


def test_a_bucket_gets_its_updates_in_batch_order_then_its_share_of_inserts():
    batch = _batch()
    # p1's three inserts: one to the small file f1 (bucket 1), two to a new group; p0's two to bucket 0 and 4
    plan = {"p1": [(1, 1), (3, 2)], "p0": [(0, 1), (4, 1)]}
    order, bucket = route_rows(batch, _tasks(), plan, sort_inserts=False)
    assert list(bucket) == sorted(bucket)
    assert _keys_by_bucket(batch, order, bucket) == {
        0: ["k1", "k8", "k2"], 1: ["k3", "k9"], 2: ["k4"], 3: ["k5", "k0"], 4: ["k7"]}


def test_a_bulk_insert_fills_its_buckets_in_key_order():
    batch = _batch()
    plan = {"p1": [(3, 2), (1, 1)], "p0": [(4, 2)]}
    order, bucket = route_rows(batch, _tasks(), plan, sort_inserts=True)
    got = _keys_by_bucket(batch, order, bucket)
    assert got[3] == ["k0", "k5"] and got[1] == ["k3", "k9"] and got[4] == ["k2", "k7"]


def test_partition_key_order_is_the_two_column_sort():
    """Keys sorted alone, then grouped by partition rank: the order Arrow's sort on
    (partition, key) gives, ties (duplicate keys, null keys) in row order, all rows or some."""
    import numpy as np
    import pyarrow.compute as pc

    from airflow_hoodie.actions.write import partition_key_order

    rng = np.random.default_rng(5)
    n = 2000
    keys = pa.array([None if i % 97 == 0 else f"k{v}" for i, v in enumerate(rng.integers(0, 300, n))])
    parts = pa.array([f"p{v}" for v in rng.choice([3, 1, 10, 2, 0], n)])
    batch = pa.table({RECORD_KEY: keys, PARTITION_PATH: parts})
    for rows in (np.arange(n), np.flatnonzero(rng.random(n) < 0.4)):
        sub = batch.take(pa.array(rows))
        want = pc.sort_indices(sub, [(PARTITION_PATH, "ascending"), (RECORD_KEY, "ascending")]).to_numpy()
        assert np.array_equal(partition_key_order(batch, rows), want)
