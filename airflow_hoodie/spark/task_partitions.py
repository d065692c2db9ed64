"""One group per Spark task: shuffle keys that put each group of a grouped step in a
shuffle partition of its own.

``groupBy(...).applyInArrow`` sorts each shuffle partition by the group keys in the JVM, and
the sort holds the whole partition until memory runs short. With Spark's partition count
(or AQE's coalescing) a task's partition is a share of the batch, several groups, and the
JVM's memory follows the batch. Spark's hash partitioning of an int column is
``pmod(murmur3(value, 42), n)``, so for ``n`` groups we pick ``n`` int keys that land in ``n``
different partitions, and ``repartition(n, key)`` (a count AQE keeps) gives each task one
group: the JVM and the Python worker hold one group's records at a time.

The write step's new file groups get their inserts by position, not by a hash of the key:
a tag task numbers its inserts per partition (:func:`insert_positions`) and counts them, so
each new group gets exactly the records the plan gave it, never more than the split.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

from airflow_hoodie.actions.index import LOC_FILE
from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH

_C1, _C2, _MASK = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
#: the seed of Spark's ``hash`` and of its hash partitioning
SPARK_HASH_SEED = 42


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def spark_hash_int(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's ``Murmur3_x86_32.hashInt`` (``F.hash`` of an int column), as a signed int."""
    k1 = _rotl((value & _MASK) * _C1 & _MASK, 15) * _C2 & _MASK
    h1 = _rotl(seed ^ k1, 13)
    h1 = (h1 * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def dense_keys(n: int) -> list[int]:
    """``n`` int keys, the i-th of which Spark's hash partitioning into ``n`` partitions
    sends to partition i."""
    keys: list[int | None] = [None] * n
    missing, value = n, 0
    while missing:
        slot = spark_hash_int(value) % n
        if keys[slot] is None:
            keys[slot] = value
            missing -= 1
        value += 1
    return [k for k in keys if k is not None]


def one_group_per_task(frame: Any, group_index: Any, n: int, key_col: str) -> Any:
    """``frame`` shuffled so that each of its ``n`` groups (``group_index``: an int column
    expression in ``[0, n)``) is one task's partition; the groups' keys in ``key_col``, to
    group by."""
    keys = F.array(*[F.lit(k) for k in dense_keys(max(1, n))])
    keyed = frame.withColumn(key_col, F.element_at(keys, group_index.cast("int") + 1))
    return keyed.repartition(max(1, n), F.col(key_col))


def tag_slice_target(split: int, sigmas: float = 5.0) -> int:
    """Records to aim a hash slice at so that it stays at most ``split`` records: a slice of
    ``t`` expected records varies by about sqrt(t), and ``t + sigmas * sqrt(t) <= split``."""
    root = -sigmas / 2 + (sigmas * sigmas / 4 + split) ** 0.5
    return max(1, int(root * root))


def insert_positions(tagged: pa.Table) -> pa.Array:
    """Each insert's place among the inserts into its partition in this tag group (0, 1, ...),
    null for updates: with the groups' insert counts the write step routes inserts to their
    new file groups exactly, each group getting the records the plan gave it."""
    is_insert = pc.is_null(tagged.column(LOC_FILE)).to_numpy(zero_copy_only=False)
    where = np.flatnonzero(is_insert)
    codes = pc.dictionary_encode(tagged.column(PARTITION_PATH).take(pa.array(where))).combine_chunks().indices
    codes = codes.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    ranked = np.arange(len(order)) - np.searchsorted(codes[order], codes[order], side="left")
    pos = np.zeros(tagged.num_rows, np.int64)
    pos[where[order]] = ranked
    return pa.array(pos, pa.int64(), mask=~is_insert)
