"""The SIMPLE / BLOOM / global index lookups, on Arrow data."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.actions.index import (
    KEYS_SCHEMA,
    LOC_FILE,
    LOC_PART,
    bloom_candidates,
    is_global,
    lookup,
    validate_index_type,
)
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.bloom.bloom_footer import new_bloom_filter
from airflow_hoodie.settings.base_file import BloomSettings
from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH, RECORD_KEY


def test_index_types_are_hudis_and_globality_follows_them():
    assert validate_index_type("bloom") == "BLOOM"
    assert [is_global(t) for t in ("SIMPLE", "BLOOM", "GLOBAL_SIMPLE", "GLOBAL_BLOOM", "IN_MEMORY")] == \
        [False, False, True, True, True]
    with pytest.raises(HoodieConfigError, match="hoodie.index.type='HBASE' is not supported"):
        validate_index_type("HBASE")


def _existing():
    return pa.table({"key": ["k1", "k2", "k2"], "partition": ["a", "a", "b"], "file_id": ["f1", "f1", "f2"]},
                    schema=KEYS_SCHEMA)


def test_a_partitioned_lookup_matches_key_and_partition():
    batch = pa.table({RECORD_KEY: ["k2", "k1", "k9"], PARTITION_PATH: ["b", "b", "a"]})
    out = lookup(batch, _existing(), global_index=False)
    assert out.column(LOC_FILE).to_pylist() == ["f2", None, None]
    assert out.column(LOC_PART).to_pylist() == ["b", None, None]
    assert out.column(RECORD_KEY).to_pylist() == ["k2", "k1", "k9"]  # input order kept


def test_a_global_lookup_finds_the_key_in_any_partition():
    batch = pa.table({RECORD_KEY: ["k1", "k9"], PARTITION_PATH: ["z", "z"]})
    out = lookup(batch, _existing(), global_index=True)
    assert out.column(LOC_PART).to_pylist() == ["a", None]
    assert out.column(LOC_FILE).to_pylist() == ["f1", None]


def test_bloom_candidates_prune_by_range_then_by_filter():
    bf = new_bloom_filter(BloomSettings())
    bf.add_many(pa.array(["key-100", "key-150", "key-200"]))
    footer = {"min": "key-100", "max": "key-200", "bloom": bf.serialize(), "bloom_type": "DYNAMIC_V0"}
    keys = pa.array(["key-050", "key-150", "key-300", "key-120"])
    mask = bloom_candidates(keys, footer).to_pylist()
    assert mask[0] is False and mask[2] is False  # outside the key range
    assert mask[1] is True  # in the filter
    assert mask[3] is False  # in range, not in the filter (false positive rate 1e-9)
    no_ranges = bloom_candidates(keys, {**footer, "min": None, "max": None}).to_pylist()
    assert no_ranges[1] is True and no_ranges[0] is False
