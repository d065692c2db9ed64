"""Ranks of column values against sampled range bounds: Hudi's ``sample`` curve build method.

Mapping raw values onto a curve (``direct``) lets a skewed column crowd into a corner of the
curve: a column of small positive longs uses only the low bits of its 64, and the z-order then
hardly interleaves it. Hudi's ``RangeSampleSort`` instead ranks every value against range bounds
drawn from a sample, so each column spreads evenly over the ranks:

1. sample up to ``min(20 * sample.size, 1e6)`` rows (Spark's RangePartitioner sketch), each
   weighing ``rows / samples``;
2. per column, choose bounds as ``RangeSample.determineBound`` does: walk the sorted sample,
   taking a key whenever the cumulative weight reaches the next of ``min(sample.size, samples)``
   equal steps and the key is above the previous bound (duplicates skipped);
3. a value's rank is the number of bounds below it (the first bound not below it); a null's is
   the bound count plus one;
4. a column with fewer bounds than the widest spreads over its ranks: its rank times the factor
   ``widest // bounds``, plus a random offset below the factor for a value equal to a bound
   (numbers) or for any value (strings). The offset is drawn from a seeded generator here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from airflow_hoodie.table.layout.curve_values import sample_values

SAMPLE_POINTS_PER_BOUND = 20
MAX_SAMPLE_POINTS = 1_000_000


def determine_bounds(keys: np.ndarray, weight: float, partitions: int) -> np.ndarray:
    """Range bounds of sorted sample ``keys`` of equal ``weight`` (Hudi's ``determineBound``)."""
    n = len(keys)
    if n == 0 or partitions <= 1:
        return keys[:0]
    step = n * weight / partitions
    cum = np.arange(1, n + 1, dtype=np.float64) * weight
    # the index of the next larger key after each index (duplicates skipped in one jump)
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    next_distinct = np.full(n + 1, n, np.int64)
    if len(change):
        next_distinct[:change[-1]] = np.repeat(change, np.diff(np.concatenate(([0], change))))
    bounds: list[Any] = []
    target, i = step, 0
    while i < n and len(bounds) < partitions - 1:
        i = max(i, int(np.searchsorted(cum, target, "left")))
        if i >= n:
            break
        if bounds and not keys[i] > bounds[-1]:
            i = int(next_distinct[i])
            continue
        bounds.append(keys[i])
        target += step
        i += 1
    return np.asarray(bounds, dtype=keys.dtype)


def sample_ranks(columns: Sequence[pa.ChunkedArray | pa.Array], names: Sequence[str], sample_size: int,
                 seed: int = 0) -> list[np.ndarray]:
    """Each column's rank of every row (int64, non-negative), as Hudi's ``sample`` method ranks."""
    rng = np.random.default_rng(seed)
    rows = len(columns[0]) if columns else 0
    points = int(min(SAMPLE_POINTS_PER_BOUND * sample_size, MAX_SAMPLE_POINTS, rows))
    picked = np.sort(rng.choice(rows, points, replace=False)) if points < rows else np.arange(rows)
    weight = rows / max(points, 1)
    partitions = min(sample_size, points)
    valued = [sample_values(col, name) for col, name in zip(columns, names)]
    # a sampled null is sampled as Hudi's sentinel (Long.MAX_VALUE, or "" for strings)
    bounds = [determine_bounds(np.sort(values[picked]), weight, partitions) for values, _ in valued]
    widest = max((len(b) for b in bounds), default=0)
    ranks = []
    for (values, nulls), bound in zip(valued, bounds):
        rank = np.searchsorted(bound, values, "left").astype(np.int64)
        factor = widest // len(bound) if len(bound) else 1
        if factor > 1:
            if values.dtype == object:  # strings: any value gets an offset
                offset = rng.integers(0, factor, len(values))
            else:  # numbers: a value equal to a bound falls among that bound's expanded copies
                at = np.minimum(rank, len(bound) - 1)
                offset = np.where(bound[at] == values, rng.integers(0, factor, len(values)), 0)
            rank = rank * factor + offset
        null_rank = (len(bound) * factor if values.dtype != object and factor > 1 else len(bound)) + 1
        if values.dtype == object:
            null_rank = widest + 1
        ranks.append(np.where(nulls, null_rank, rank).astype(np.int64))
    return ranks
