"""The vectorized hash takes a reshape fast path when a chunk's keys all have one byte
length; it must give the scalar (Hadoop) positions for every tail length, for sliced
arrays and across chunk boundaries."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from airflow_hoodie.table.bloom import bloom_hash
from airflow_hoodie.table.bloom.bloom_hash import hash_positions, hash_positions_by_hash, positions_scalar

VECTOR = 2587966


def _random_keys(length: int, count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    # bytes >= 0x80 exercise the sign extension of the tail
    return [bytes(rng.randrange(256) for _ in range(length)) for _ in range(count)]


@pytest.mark.parametrize("length", list(range(1, 14)))
def test_one_length_keys_match_scalar(length):
    keys = _random_keys(length, 300, length)
    matrix = hash_positions(pa.array(keys, pa.binary()), 30, VECTOR)
    for i, key in enumerate(keys):
        assert matrix[i].tolist() == positions_scalar(key, 30, VECTOR)


def test_sliced_array_and_chunk_boundaries_match_scalar(monkeypatch):
    monkeypatch.setattr(bloom_hash, "_CHUNK", 64)  # several chunks, each starting mid-buffer
    keys = _random_keys(11, 500, 99)
    arr = pa.array(keys, pa.binary()).slice(37, 400)
    by_hash = hash_positions_by_hash(arr, 7, VECTOR)
    assert by_hash.shape == (7, 400)
    for i, key in enumerate(keys[37:437]):
        assert by_hash[:, i].tolist() == positions_scalar(key, 7, VECTOR)


def test_mixed_lengths_in_one_block_group_match_scalar():
    # 8..11 bytes all have two whole blocks but different tails: the gather path
    keys = [k for n in (8, 9, 10, 11) for k in _random_keys(n, 50, n)]
    random.Random(5).shuffle(keys)
    matrix = hash_positions(pa.array(keys, pa.binary()), 30, VECTOR)
    for i, key in enumerate(keys):
        assert matrix[i].tolist() == positions_scalar(key, 30, VECTOR)


def test_keys_of_one_length_between_others_match_scalar():
    """Keys grouped by block count are picked out of the array: a group whose keys share
    one length is not a run of the buffer ("abc" and "xyz" around "defghi"). Read as one,
    it hashed the wrong bytes, and a bloom filter missed "xyz"."""
    keys = [b"abc", b"defghi", b"xyz"] + _random_keys(3, 50, 1) + _random_keys(6, 50, 2) + _random_keys(3, 50, 3)
    rng = random.Random(5)
    rng.shuffle(keys)
    by_hash = hash_positions_by_hash(pa.array(keys, pa.binary()), 9, VECTOR)
    for i, key in enumerate(keys):
        assert by_hash[:, i].tolist() == positions_scalar(key, 9, VECTOR), key


def test_bloom_index_update_of_such_a_key_is_not_a_second_row(tmp_path):
    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.table.read import read_table

    opts = {"hoodie.datasource.write.recordkey.field": "k", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "", "hoodie.index.type": "BLOOM",
            "hoodie.parquet.small.file.limit": "0", "hoodie.metadata.enable": "false"}
    path = str(tmp_path / "t")
    write_arrow(path, pa.table({"k": ["abc", "defghi", "xyz"], "ts": [1, 1, 1], "v": ["a", "b", "c"]}), "upsert",
                opts, table_name="t")
    write_arrow(path, pa.table({"k": ["xyz"], "ts": [2], "v": ["c2"]}), "upsert", opts, table_name="t")
    rows = read_table(path, columns=["k", "v"]).sort_by("k").to_pylist()
    assert rows == [{"k": "abc", "v": "a"}, {"k": "defghi", "v": "b"}, {"k": "xyz", "v": "c2"}]
