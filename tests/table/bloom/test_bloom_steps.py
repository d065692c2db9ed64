"""Keys are added to a filter a slice at a time (to bound a writer's memory): the filter
must come out bit for bit as if they were added at once, and one by one."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieKeyError
from airflow_hoodie.table.bloom import bloom_filter as bf


@pytest.mark.parametrize("type_code", [bf.SIMPLE, bf.DYNAMIC_V0])
def test_added_in_slices_equals_added_at_once_and_one_by_one(monkeypatch, type_code):
    # 50 entries a row, at most 120: rows fill, then keys go round-robin, across slice edges
    keys = pa.array([f"key-{i:05d}" for i in range(997)] + [f"k{i}" for i in range(303)])
    at_once = bf.create_bloom_filter(50, 0.0001, type_code, 120)
    at_once.add_many(keys)
    one_by_one = bf.create_bloom_filter(50, 0.0001, type_code, 120)
    for k in keys.to_pylist():
        one_by_one.add(k)
    monkeypatch.setattr(bf, "KEYS_PER_STEP", 64)
    sliced = bf.create_bloom_filter(50, 0.0001, type_code, 120)
    sliced.add_many(keys)
    assert sliced.to_bytes() == at_once.to_bytes() == one_by_one.to_bytes()
    assert sliced.might_contain_many(keys).all()


def test_an_empty_key_is_refused_before_any_slice_is_added(monkeypatch):
    monkeypatch.setattr(bf, "KEYS_PER_STEP", 4)
    f = bf.create_bloom_filter(50, 0.0001, bf.SIMPLE)
    empty = f.to_bytes()
    with pytest.raises(HoodieKeyError, match="2 record key"):
        f.add_many(pa.array(["a", "b", "c", "d", "e", "", "g", ""]))
    assert f.to_bytes() == empty
