"""What the Spark executor ships: each operation's own rows, not the batch it was sliced from."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa

from airflow_hoodie.spark.executor import compact


def _batch(n: int) -> pa.Table:
    return pa.table({"k": pa.array([f"key-{i}" for i in range(n)]), "v": np.arange(n),
                     "l": pa.array([[i, i] for i in range(n)])})


def test_a_slice_ships_its_own_rows_only():
    batch = _batch(200_000)
    whole = len(pickle.dumps(batch))
    items = [(i, batch.slice(i * 10, 10), batch.column("k").slice(i, 3), [batch.column("v").chunk(0).slice(i, 2)])
             for i in range(5)]
    assert len(pickle.dumps(items[0])) >= whole  # the bug: each slice pickled the whole batch
    shipped = [compact(item) for item in items]
    assert len(pickle.dumps(shipped)) < whole / 100
    for item, copy in zip(items, shipped):
        assert copy[0] == item[0] and copy[1].equals(item[1]) and copy[1].schema == item[1].schema
        assert isinstance(copy[2], pa.ChunkedArray) and copy[2].equals(item[2])
        assert copy[3][0].equals(item[3][0])


def test_empty_and_plain_values_pass_through():
    batch = _batch(10)
    assert compact(batch.slice(0, 0)).num_rows == 0
    assert compact(batch.column("l").slice(0, 0)).type == batch.column("l").type
    assert compact({"a": 1}) == {"a": 1} and compact("x") == "x"
