"""Combining a batch before it is written (preCombine): a batch without a repeated key is
passed through by a hash count, and any repeat still goes through the full combine."""

from __future__ import annotations

import pyarrow as pa

from airflow_hoodie.actions.write_records import dedupe
from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH, RECORD_KEY


def _batch(keys: list[str], parts: list[str], ts: list[int]) -> pa.Table:
    return pa.table({RECORD_KEY: keys, PARTITION_PATH: parts, "ts": ts, "v": list(range(len(keys)))})


def test_distinct_keys_come_back_in_their_order() -> None:
    b = _batch(["c", "a", "b"], ["p1", "p2", "p1"], [1, 2, 3])
    assert dedupe(b, ("ts",), False).equals(b)
    assert dedupe(b, ("ts",), True).equals(b)


def test_a_key_repeated_across_partitions_is_one_record_only_for_a_global_index() -> None:
    b = _batch(["a", "b", "a"], ["p1", "p1", "p2"], [5, 1, 3])
    assert dedupe(b, ("ts",), False).column("v").to_pylist() == [0, 1, 2]
    # a global index keeps the greatest ordering value of the key, wherever it is
    assert dedupe(b, ("ts",), True).column("v").to_pylist() == [0, 1]


def test_a_repeated_key_keeps_its_greatest_ordering_value_then_the_later_record() -> None:
    b = _batch(["a", "b", "a", "a"], ["p", "p", "p", "p"], [2, 1, 7, 7])
    assert dedupe(b, ("ts",), False).column("v").to_pylist() == [1, 3]
    assert dedupe(b, (), False).column("v").to_pylist() == [1, 3]
