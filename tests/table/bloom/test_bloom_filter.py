"""Bloom filters must equal, byte for byte, the ones real Hudi wrote into base file footers."""

from __future__ import annotations

import base64
import random
import struct
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import (
    HoodieCorruptedDataError,
    HoodieKeyError,
    HoodieNotSupportedError,
)
from airflow_hoodie.table.bloom import bloom_filter as bf
from airflow_hoodie.table.bloom.bloom_footer import (
    BLOOM_FILTER_KEY,
    BLOOM_FILTER_TYPE_KEY,
    MAX_KEY,
    MIN_KEY,
    new_bloom_filter,
    bloom_filter_from_footer,
    build_footer,
    footer_metadata,
    min_max_record_keys,
)
from airflow_hoodie.table.bloom.bloom_hash import (
    hash_positions,
    murmur_hash,
    optimal_num_bits,
    optimal_num_hashes,
    positions_scalar,
)
from airflow_hoodie.settings.base_file import BloomSettings


def _base_files(conformance):
    files = sorted((conformance / "tables").rglob("*.parquet"))
    files = [f for f in files if "/.hoodie/" not in f.as_posix()]
    assert files, "no base files in the conformance corpus"
    return files


def _table_props(path):
    for parent in path.parents:
        props = parent / ".hoodie" / "hoodie.properties"
        if props.is_file():
            from airflow_hoodie.config import parse_properties

            return parse_properties(props.read_text())
    raise AssertionError(f"no hoodie.properties above {path}")


def test_sizing_matches_hudi_defaults():
    bits = optimal_num_bits(60000, 0.000000001)
    assert bits == 2587966
    assert optimal_num_hashes(bits, 60000) == 30


def test_murmur_known_values_and_tail_order():
    # Hadoop's variant: tail bytes are mixed as data[len-3]<<16 ^ data[len-2]<<8 ^ data[len-1],
    # so "abc" and "cba" hash differently from standard MurmurHash2's layout.
    assert murmur_hash(b"abc") != murmur_hash(b"cba")
    # non-ASCII tail bytes are sign-extended: vectorized and scalar paths must agree
    for key in ["é", "aé", "中", "x😀", "abcd", "abcde\u00ff"]:
        data = key.encode()
        pos = hash_positions([key], 30, 2587966)[0].tolist()
        assert pos == positions_scalar(data, 30, 2587966)


def test_vectorized_hashing_equals_scalar_for_mixed_lengths():
    rng = random.Random(7)
    alphabet = "abcXYZ019-_:,/é中😀\u00ff\uffee"
    keys = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 41))) for _ in range(2000)]
    matrix = hash_positions(pa.array(keys), 30, 2587966)
    for i, key in enumerate(keys):
        assert matrix[i].tolist() == positions_scalar(key.encode(), 30, 2587966), key


@pytest.mark.parametrize("type_code", [bf.SIMPLE, bf.DYNAMIC_V0])
def test_add_many_equals_add_one_by_one(type_code):
    keys = [str(uuid.UUID(int=random.Random(3).getrandbits(128) + i)) for i in range(500)]
    one = bf.create_bloom_filter(1000, 0.0001, type_code, 3000)
    many = bf.create_bloom_filter(1000, 0.0001, type_code, 3000)
    for k in keys:
        one.add(k)
    many.add_many(pa.chunked_array([keys[:100], keys[100:]]))
    assert one.serialize() == many.serialize()


def test_dynamic_rows_grow_then_round_robin_like_hudi():
    keys = [f"key-{i}" for i in range(100)]
    stepwise = bf.DynamicBloomFilter(num_entries=7, fpp=0.01, max_entries=20)
    batched = bf.DynamicBloomFilter(num_entries=7, fpp=0.01, max_entries=20)
    for k in keys:
        stepwise.add(k)
    for lo, hi in [(0, 5), (5, 33), (33, 34), (34, 100)]:
        batched.add_many(keys[lo:hi])
    # rows are added while rows * nr < max (7, 14, 21 >= 20 -> 3 rows), then reused
    assert len(stepwise.rows) == 3
    assert stepwise.to_bytes() == batched.to_bytes()
    _, _, _, _, nr, current, nrows = struct.unpack_from(">iibiiii", stepwise.to_bytes())
    assert (nr, nrows) == (7, 3)
    assert current == 100 - 14  # keys since the last row was added
    assert all(stepwise.might_contain_many(keys))


def test_conformance_footers_rebuild_byte_for_byte(conformance):
    """THE acceptance test: every base file's footer filter + min/max key, rebuilt from its keys."""
    rng = random.Random(11)
    for path in _base_files(conformance):
        pf = pq.ParquetFile(path)
        meta = pf.metadata.metadata
        keys = pf.read(columns=["_hoodie_record_key"]).column(0)
        props = HoodieConfig(_table_props(path))

        rebuilt = new_bloom_filter(BloomSettings.from_config(props))
        assert rebuilt.type_code.encode() == meta.get(b"hoodie_bloom_filter_type_code", b"SIMPLE")
        rebuilt.add_many(keys)
        footer = meta[BLOOM_FILTER_KEY.encode()].decode()
        assert rebuilt.serialize() == footer, path

        lo, hi = min_max_record_keys(keys)
        assert lo.encode() == meta[MIN_KEY.encode()], path
        assert hi.encode() == meta[MAX_KEY.encode()], path
        assert footer_metadata(rebuilt, lo, hi) == {
            k.decode(): v.decode() for k, v in meta.items() if k.decode() in (BLOOM_FILTER_KEY, BLOOM_FILTER_TYPE_KEY, MIN_KEY, MAX_KEY)
        }

        built = build_footer(keys, BloomSettings.from_config(props))
        assert {k.encode(): v.encode() for k, v in built.items()} == {
            k: v for k, v in meta.items() if k.decode() in built or k.decode() == BLOOM_FILTER_TYPE_KEY
        }

        loaded = bloom_filter_from_footer(meta)
        assert loaded is not None and loaded.serialize() == footer
        assert loaded == bf.load_bloom_filter(footer, meta[BLOOM_FILTER_TYPE_KEY.encode()])
        assert loaded.might_contain_many(keys).all()
        assert all(loaded.might_contain(k) for k in keys.to_pylist())
        others = [f"not-a-key-{rng.random()}" for _ in range(2000)]
        assert loaded.might_contain_many(others).sum() <= 2


def test_simple_filter_roundtrip_and_footer_has_no_type_code():
    f = bf.create_bloom_filter(100, 0.001, "simple")
    f.add_many(["a", "b", "c"])
    meta = footer_metadata(f, "a", "c")
    assert BLOOM_FILTER_TYPE_KEY not in meta
    back = bloom_filter_from_footer(meta)
    assert isinstance(back, bf.SimpleBloomFilter)
    assert back.serialize() == f.serialize()
    assert back.might_contain("b") and not back.might_contain_many(["zzz-not-there"])[0]
    raw = base64.b64decode(f.serialize())
    assert struct.unpack_from(">iibi", raw) == (-1, f.nb_hash, 1, f.vector_size)
    assert len(raw) == 13 + (f.vector_size + 7) // 8


def test_old_footer_key_is_read():
    f = bf.create_bloom_filter(10, 0.01, bf.SIMPLE)
    f.add("x")
    assert bloom_filter_from_footer({b"com.uber.hoodie.bloomfilter": f.serialize().encode()}) == f
    assert bloom_filter_from_footer({}) is None


def test_loaded_dynamic_filter_keeps_accepting_keys():
    f = bf.DynamicBloomFilter(5, 0.01, 10)
    f.add_many([f"k{i}" for i in range(8)])
    back = bf.load_bloom_filter(f.serialize(), bf.DYNAMIC_V0)
    back.add("k-late")
    assert back.might_contain("k-late") and back.might_contain("k3")


def test_config_defaults_and_overrides():
    f = new_bloom_filter(BloomSettings.from_config({}))
    assert isinstance(f, bf.DynamicBloomFilter)
    assert (f.nr, f.max_entries, f.nb_hash, f.vector_size) == (60000, 100000, 30, 2587966)
    g = new_bloom_filter(BloomSettings.from_config({"hoodie.bloom.index.filter.type": "SIMPLE", "hoodie.index.bloom.num_entries": "1000", "hoodie.index.bloom.fpp": "0.01"}))
    assert isinstance(g, bf.SimpleBloomFilter)
    assert g.vector_size == optimal_num_bits(1000, 0.01)
    with pytest.raises(HoodieNotSupportedError):
        new_bloom_filter(BloomSettings.from_config({"hoodie.bloom.index.filter.type": "CUCKOO"}))


def test_bad_keys_and_corrupt_footers_raise_clear_errors():
    f = bf.create_bloom_filter(10, 0.01)
    with pytest.raises(HoodieKeyError, match="null"):
        f.add_many(pa.array(["a", None]))
    with pytest.raises(HoodieKeyError, match="empty"):
        f.add_many(["a", ""])
    with pytest.raises(HoodieKeyError):
        f.add("")
    with pytest.raises(HoodieCorruptedDataError):
        bf.load_bloom_filter("not base64 !!", bf.SIMPLE)
    truncated = base64.b64encode(base64.b64decode(f.serialize())[:40]).decode()
    with pytest.raises(HoodieCorruptedDataError):
        bf.load_bloom_filter(truncated, bf.DYNAMIC_V0)


def test_min_max_uses_java_string_order():
    assert min_max_record_keys(["b", "a", "c"]) == ("a", "c")
    # U+FF21 sorts after U+1F600 by code point but before it in UTF-16 (surrogates < 0xFF21)
    assert min_max_record_keys(["\uff21", "\U0001f600"]) == ("\U0001f600", "\uff21")
    assert min_max_record_keys([]) == (None, None)


def test_million_keys_build_fast():
    import time

    keys = pa.array([f"{uuid.UUID(int=i)}" for i in range(1_000_000)])
    f = new_bloom_filter(BloomSettings.from_config({}))
    start = time.perf_counter()
    f.add_many(keys)
    elapsed = time.perf_counter() - start
    assert f.might_contain_many(keys[:1000]).all()
    assert elapsed < 10, f"building a filter over 1M keys took {elapsed:.1f}s"


def test_false_positive_rate_at_capacity():
    f = new_bloom_filter(BloomSettings.from_config({}))
    f.add_many([f"{uuid.UUID(int=i)}" for i in range(60000)])
    probes = np.asarray(f.might_contain_many([f"absent-{i}" for i in range(100000)]))
    assert probes.sum() <= 2  # configured fpp is 1e-9
