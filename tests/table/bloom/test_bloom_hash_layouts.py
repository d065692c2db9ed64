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
