"""A copy-on-write merge locates a batch of distinct keys by probing it with the stored keys
(the small side hashed), and must answer exactly as hashing every stored key did: the same
kept rows, winners, counts and new keys, with keys stored twice, null keys, deletes, ties
and null ordering values."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_hoodie.actions import file_group_write as fgw
from airflow_hoodie.actions.write_records import OP_COL
from airflow_hoodie.table.schema.meta_fields import RECORD_KEY


def _stored(rng: np.random.Generator, n: int) -> pa.Table:
    keys = [f"k{int(x)}" for x in rng.integers(0, n * 2, n)]  # some keys stored twice
    if n > 3:
        keys[3] = None
    ts = pa.array([None if x == 0 else int(x) for x in rng.integers(0, 5, n)], pa.int64())
    return pa.table({RECORD_KEY: pa.array(keys, pa.string()), "ts": ts, "v": pa.array(np.arange(n), pa.int64())})


def _incoming(rng: np.random.Generator, n: int, stored_range: int, distinct: bool) -> pa.Table:
    pool = rng.permutation(max(stored_range * 2, n))[:n] if distinct else rng.integers(0, stored_range * 2, n)
    keys: list[str | None] = [f"k{int(x)}" for x in pool]
    if n > 5 and rng.random() < 0.5:
        keys[5] = None
    ts = pa.array([None if x == 0 else int(x) for x in rng.integers(0, 5, n)], pa.int64())
    ops = pa.array(rng.choice(["I", "U", "D", "d"], n, p=[0.4, 0.4, 0.1, 0.1]).tolist(), pa.string())
    return pa.table({RECORD_KEY: pa.array(keys, pa.string()), OP_COL: ops, "ts": ts,
                     "v": pa.array(np.arange(n) + 10_000, pa.int64())})


def _hashing_stored_keys(old_keys: pa.ChunkedArray, incoming_keys: pa.Array) -> tuple[pa.Array, None]:
    """The lookup the merge made before: the stored keys as the value set."""
    return pc.index_in(incoming_keys, value_set=old_keys.combine_chunks()), None


@pytest.mark.parametrize("ordering", [("ts",), ()])
def test_probing_the_batch_merges_as_hashing_the_stored_keys(monkeypatch: pytest.MonkeyPatch,
                                                              ordering: tuple[str, ...]) -> None:
    rng = np.random.default_rng(7)
    positions = 0
    for case in range(120):
        n_old, n_inc = int(rng.integers(0, 60)), int(rng.integers(0, 40))
        old = _stored(rng, n_old)
        inc = _incoming(rng, n_inc, max(n_old, 1), distinct=case % 4 != 0)
        if case % 5 == 0 and n_old:
            old = pa.concat_tables([old.slice(0, n_old // 2), old.slice(n_old // 2)])  # chunked keys
        fast = fgw.merge_cow(old, inc, ordering)
        positions += fgw._stored_rows(old.column(RECORD_KEY), inc.column(RECORD_KEY).combine_chunks())[1] is not None
        with monkeypatch.context() as m:
            m.setattr(fgw, "_stored_rows", _hashing_stored_keys)
            slow = fgw.merge_cow(old, inc, ordering)
        assert fast[0].equals(slow[0]), f"case {case}: kept stored rows differ"
        assert fast[1].equals(slow[1]), f"case {case}: winning incoming rows differ"
        assert fast[2:4] == slow[2:4], f"case {case}: counts differ"
        assert fast[4].equals(slow[4]), f"case {case}: new keys differ"
    assert positions >= 80  # most cases took the probe, not the fallback


def test_a_key_stored_twice_is_replaced_in_both_rows() -> None:
    old = pa.table({RECORD_KEY: ["a", "b", "a"], "ts": [1, 1, 2], "v": [1, 2, 3]})
    inc = pa.table({RECORD_KEY: ["a", "c"], OP_COL: ["U", "I"], "ts": [1, 1], "v": [10, 20]})
    kept, upserts, n_upd, n_del, new_keys = fgw.merge_cow(old, inc, ("ts",))
    # compared with the first stored row (ts 1), the incoming record wins and both stored
    # rows of its key go
    assert kept.column(RECORD_KEY).to_pylist() == ["b"]
    assert upserts.column(RECORD_KEY).to_pylist() == ["a", "c"]
    assert (n_upd, n_del) == (1, 0)
    assert new_keys.to_pylist() == ["c"]
