"""A rewritten base file's bloom filter (compaction, copy-on-write merge) holds exactly its
keys, whether it was extended from the old file's filter (only new keys hashed) or built
again (a delete removed a key)."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.bloom.bloom_footer import (
    new_bloom_filter,
    bloom_filter_from_footer,
    build_footer,
    extended_footer_filter,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.settings.base_file import BloomSettings

ABSENT = pa.array([f"x{i:05d}" for i in range(2000)])


def _config(filter_type: str) -> dict[str, str]:
    # small filters (num_entries 50): a dynamic one spans rows, and grows one more when extended
    return {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.bloom.index.filter.type": filter_type,
            "hoodie.index.bloom.num_entries": "50", "hoodie.bloom.index.filter.dynamic.max.entries": "400"}


def _keys(ids: range) -> pa.Array:
    return pa.array([f"k{i:05d}" for i in ids])


def _same_set(stored, keys: pa.Array, cfg: dict[str, str]):
    """``stored`` answers every lookup as a filter built from ``keys``; returns that filter."""
    fresh = new_bloom_filter(BloomSettings.from_config(cfg))
    fresh.add_many(keys)
    assert stored.might_contain_many(keys).all()
    assert (stored.might_contain_many(ABSENT) == fresh.might_contain_many(ABSENT)).all()
    assert stored.nb_hash == fresh.nb_hash and stored.type_code == fresh.type_code
    return fresh


@pytest.mark.parametrize("filter_type", ["SIMPLE", "DYNAMIC_V0"])
def test_extending_a_footer_filter_adds_only_the_new_keys(filter_type):
    cfg = _config(filter_type)
    footer = build_footer(_keys(range(0, 120)), BloomSettings.from_config(cfg))
    extended = extended_footer_filter(footer, BloomSettings.from_config(cfg), _keys(range(120, 160)))
    assert extended is not None
    fresh = _same_set(extended, _keys(range(0, 160)), cfg)
    if filter_type == "SIMPLE":  # a simple filter does not depend on the order of its keys
        assert extended.to_bytes() == fresh.to_bytes()
    else:  # keys appended after the stored ones, in order: the very filter built from scratch
        assert extended.to_bytes() == fresh.to_bytes() and len(extended.rows) == 4
    # a filter built with other settings is not extended (the writer builds a new one)
    assert extended_footer_filter(footer, BloomSettings.from_config({**cfg, "hoodie.index.bloom.num_entries": "60"}), _keys(range(1))) is None
    assert extended_footer_filter({}, BloomSettings.from_config(cfg), _keys(range(1))) is None
    # nothing to add: the footer string itself, never decoded
    kept = extended_footer_filter(footer, BloomSettings.from_config(cfg), _keys(range(0)))
    assert kept is not None and kept.serialize() == footer["org.apache.hudi.bloomfilter"]
    assert kept.type_code == filter_type


@pytest.mark.parametrize("filter_type", ["SIMPLE", "DYNAMIC_V0"])
@pytest.mark.parametrize("with_delete", [False, True])
def test_compacted_file_filter_holds_exactly_its_keys(tmp_path, filter_type, with_delete):
    cfg = _config(filter_type)
    base = str(tmp_path / "t")
    write_arrow(base, pa.table({"id": _keys(range(0, 120)), "p": ["a"] * 120, "ts": [1] * 120}), "insert", cfg)
    (first,) = glob.glob(os.path.join(base, "a", "*.parquet"))
    base_filter = bloom_filter_from_footer(pq.ParquetFile(first).metadata.metadata)
    updates = pa.table({"id": _keys(range(90, 120)), "p": ["a"] * 30, "ts": [2] * 30})
    write_arrow(base, updates, "upsert", cfg)
    if with_delete:  # the file loses keys: its filter is built again from the keys it keeps
        write_arrow(base, updates.slice(0, 3), "delete", cfg)
    c.schedule_compaction(HoodieTable.load(base), HoodieConfig({}), force=True)
    done = c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(cfg))
    assert done["operations"] == 1
    (path,) = [f for f in glob.glob(os.path.join(base, "a", "*.parquet")) if f.endswith(f"_{done['instant']}.parquet")]
    keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0).combine_chunks()
    assert len(keys) == (117 if with_delete else 120)
    stored = bloom_filter_from_footer(pq.ParquetFile(path).metadata.metadata)
    fresh = _same_set(stored, keys, cfg)
    if filter_type == "SIMPLE" or with_delete:
        assert stored.to_bytes() == fresh.to_bytes()
    if not with_delete:  # updates only: the base file's filter, taken as it was (nothing hashed)
        assert stored.to_bytes() == base_filter.to_bytes()


@pytest.mark.parametrize("with_delete", [False, True])
def test_copy_on_write_rewrite_filter_holds_exactly_its_keys(tmp_path, with_delete):
    cfg = {**_config("DYNAMIC_V0"), "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    base = str(tmp_path / "t")
    write_arrow(base, pa.table({"id": _keys(range(0, 120)), "p": ["a"] * 120, "ts": [1] * 120}), "insert", cfg)
    (first,) = glob.glob(os.path.join(base, "a", "*.parquet"))
    batch = pa.table({"id": _keys(range(100, 150)), "p": ["a"] * 50, "ts": [2] * 50})  # 20 updates, 30 inserts
    result = write_arrow(base, batch, "upsert", cfg)
    if with_delete:
        result = write_arrow(base, batch.slice(0, 3), "delete", cfg)
    (path,) = [f for f in glob.glob(os.path.join(base, "a", "*.parquet")) if f.endswith(f"_{result.instant}.parquet")]
    keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0).combine_chunks()
    assert len(keys) == (147 if with_delete else 150)
    stored = bloom_filter_from_footer(pq.ParquetFile(path).metadata.metadata)
    _same_set(stored, keys, cfg)
    if not with_delete:  # the old file's filter with the 30 new keys added after its own
        extended = extended_footer_filter(pq.ParquetFile(first).metadata.metadata, BloomSettings.from_config(cfg),
                                          _keys(range(120, 150)))
        assert stored.to_bytes() == extended.to_bytes()
