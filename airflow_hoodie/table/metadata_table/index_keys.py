"""Record keys of the statistics partitions of the metadata table, as Hudi computes them.

Hudi names a column, a partition and a file by a hash (its ``ColumnIndexID``,
``PartitionIndexID`` and ``FileIndexID``): XXH64 with seed ``0xdabadaba`` (a Java ``int``,
sign-extended to the ``long`` seed) for columns and partitions, written big-endian, and MD5
for file names; each hash is base64-encoded and the key is their concatenation:

- ``column_stats``: column + partition + file;
- ``bloom_filters``: partition + file;
- ``partition_stats``: column + partition;
- an expression index's partition-level records (kept in its own partition): column +
  ``__partition_stat__`` (as a partition) + partition.

The hashes need no third-party package: XXH64 is small and these keys are few per commit.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from functools import lru_cache

from airflow_hoodie.table.metadata_table.metadata_record import NON_PARTITIONED_NAME

_MASK = (1 << 64) - 1
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5
#: Hudi's HashID seed, an int sign-extended into XXH64's long seed
HASH_SEED = 0xDABADABA - (1 << 32) & _MASK


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _MASK
    return (_rotl(acc, 31) * _P1) & _MASK


def _merge(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _MASK


def xxh64(data: bytes, seed: int = HASH_SEED) -> int:
    """XXH64 of ``data`` as an unsigned 64-bit integer."""
    n, pos = len(data), 0
    if n >= 32:
        v1, v2 = (seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK
        v3, v4 = seed, (seed - _P1) & _MASK
        while pos + 32 <= n:
            a, b, c, d = struct.unpack_from("<4Q", data, pos)
            v1, v2, v3, v4 = _round(v1, a), _round(v2, b), _round(v3, c), _round(v4, d)
            pos += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + _P5) & _MASK
    h = (h + n) & _MASK
    while pos + 8 <= n:
        (k,) = struct.unpack_from("<Q", data, pos)
        h = (_rotl(h ^ _round(0, k), 27) * _P1 + _P4) & _MASK
        pos += 8
    if pos + 4 <= n:
        (k,) = struct.unpack_from("<I", data, pos)
        h = (_rotl(h ^ (k * _P1 & _MASK), 23) * _P2 + _P3) & _MASK
        pos += 4
    while pos < n:
        h = (_rotl(h ^ (data[pos] * _P5 & _MASK), 11) * _P1) & _MASK
        pos += 1
    h ^= h >> 33
    h = (h * _P2) & _MASK
    h ^= h >> 29
    h = (h * _P3) & _MASK
    return h ^ (h >> 32)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


@lru_cache(maxsize=4096)
def column_id(column: str) -> str:
    """Hudi's ColumnIndexID, base64."""
    return _b64(struct.pack(">Q", xxh64(column.encode("utf-8"))))


@lru_cache(maxsize=65536)
def partition_id(partition: str) -> str:
    """Hudi's PartitionIndexID, base64 (a non-partitioned table's partition is ``.``)."""
    return _b64(struct.pack(">Q", xxh64((partition or NON_PARTITIONED_NAME).encode("utf-8"))))


def file_id(file_name: str) -> str:
    """Hudi's FileIndexID (MD5 of the file name), base64."""
    return _b64(hashlib.md5(file_name.encode("utf-8")).digest())  # noqa: S324 - Hudi's key, not security


def column_stats_key(column: str, partition: str, file_name: str) -> str:
    return column_id(column) + partition_id(partition) + file_id(file_name)


def bloom_filter_key(partition: str, file_name: str) -> str:
    return partition_id(partition) + file_id(file_name)


def partition_stats_key(column: str, partition: str) -> str:
    return column_id(column) + partition_id(partition)


#: HoodieExpressionIndex.HOODIE_EXPRESSION_INDEX_PARTITION_STAT_PREFIX
EXPRESSION_PARTITION_STAT_PREFIX = "__partition_stat__"


def expression_partition_stats_key(column: str, partition: str) -> str:
    """The key of an expression index's record for one data partition (Hudi keeps them in the
    index's own partition, beside the per-file records)."""
    return column_id(column) + partition_id(EXPRESSION_PARTITION_STAT_PREFIX) + partition_id(partition)
