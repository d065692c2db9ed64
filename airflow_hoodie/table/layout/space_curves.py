"""Row orders along space-filling curves: Hudi's layout optimization of clustered files.

A linear sort clusters rows by the first sort column only, so the min/max of any other column
spans nearly its whole range in every file and column-stats skipping cannot prune on it. Hudi's
``hoodie.layout.optimize.strategy`` = ``z-order`` | ``hilbert`` orders rows along a curve
through all sort columns instead, so each file covers a compact box of every column.

Semantics follow Hudi (``SpaceCurveSortingHelper`` and ``RangeSampleSort``):

- ``direct``: each column's values map to fixed-width keys (:mod:`.curve_values`); z-order
  interleaves the keys' 64 bits, most significant first, one bit of each column in turn;
  Hilbert maps the columns' longs (their low 63 bits) through Skilling's transpose algorithm
  (the davidmoten ``HilbertCurve`` Hudi uses) with 63 bits per dimension. The dimensions come in
  the order Hudi's ``HashMap`` of schema positions yields. One sort column is a linear sort.
- ``sample``: each column's values are ranked against range bounds drawn from a sample of the
  group (Spark's RangePartitioner sketch and bound choice), low-cardinality columns spread over
  the widest column's ranks; z-order interleaves the ranks as Hudi's 8-byte int keys, Hilbert
  indexes them with 32 bits per dimension. Dimensions follow the sort-column order.

Rows are then sorted by the curve position (an unsigned big-endian comparison, as Hudi sorts its
index bytes), stably. All of it is numpy over whole columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.layout import curve_values as cv
from airflow_hoodie.table.layout.sample_ranks import sample_ranks

LINEAR, Z_ORDER, HILBERT = "linear", "z-order", "hilbert"
STRATEGIES = (LINEAR, Z_ORDER, HILBERT)
DIRECT, SAMPLE = "direct", "sample"
BUILD_METHODS = (DIRECT, SAMPLE)
DIRECT_HILBERT_BITS = 63
SAMPLE_HILBERT_BITS = 32


@dataclass(frozen=True)
class LayoutSpec:
    """How one clustering orders a group's rows (parsed once by the clustering settings)."""

    strategy: str = LINEAR
    build_method: str = DIRECT
    sample_size: int = 200_000
    #: the seed of the sampling and of the spreading of low-cardinality ranks (Hudi draws them
    #: at random; a fixed seed makes a rerun of a task write the same files)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise HoodieNotSupportedError(
                f"hoodie.layout.optimize.strategy={self.strategy!r} is not a layout strategy; use one of "
                f"{', '.join(STRATEGIES)}.")
        if self.build_method not in BUILD_METHODS:
            raise HoodieNotSupportedError(
                f"hoodie.layout.optimize.curve.build.method={self.build_method!r} is not a build method; use "
                f"{DIRECT} or {SAMPLE}.")

    @property
    def is_curve(self) -> bool:
        return self.strategy != LINEAR


def pack_bits(coords: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Interleave the low ``bits`` bits of each coordinate array, most significant bit first and
    coordinate 0 first within each bit, into a (rows, words) uint64 matrix whose rows compare
    (word by word, unsigned) as the interleaved bit strings do."""
    n = len(coords)
    rows = len(coords[0]) if n else 0
    total = bits * n
    words = np.zeros((rows, -(-total // 64)), np.uint64)
    one = np.uint64(1)
    k = 0
    for b in range(bits - 1, -1, -1):
        for c in coords:
            bit = (c >> np.uint64(b)) & one
            words[:, k // 64] |= bit << np.uint64(63 - k % 64)
            k += 1
    return words


def _varying_bits(coords: Sequence[np.ndarray]) -> int:
    """How many low bits of the coordinates vary from row to row: the bits above are the same in
    every row, so they leave the interleaved order as it is and need not be computed."""
    top = 0
    for c in coords:
        if len(c):
            top = max(top, int(np.bitwise_or.reduce(c ^ c[0])).bit_length())
    return top


def z_order_words(keys: Sequence[np.ndarray]) -> np.ndarray:
    """Hudi's ``BinaryUtil.interleaving`` of 8-byte keys, as uint64 words (the bits no row
    differs in left out: they do not change the order)."""
    cols = [np.asarray(k, np.uint64) for k in keys]
    return pack_bits(cols, max(1, _varying_bits(cols)))


def hilbert_transpose(coords: Sequence[np.ndarray], bits: int) -> list[np.ndarray]:
    """Skilling's AxesToTranspose ("Programming the Hilbert curve", 2004) over whole columns:
    the transposed Hilbert index of each point whose coordinates are the low ``bits`` bits.

    While every coordinate is below the level ``q`` (small values on a 63-bit curve), a level
    only exchanges coordinate 0 with each other one in turn; that is done on the list, not on
    the arrays, so the cost follows the values' width rather than the curve's."""
    mask = np.uint64((1 << bits) - 1)
    x = [np.asarray(c).astype(np.uint64) & mask for c in coords]
    n = len(x)
    zero = np.uint64(0)
    width = max((int(c.max()) for c in x if len(c)), default=0).bit_length()
    q = 1 << (bits - 1)
    while q > 1:  # inverse undo
        if q >> width:  # no coordinate reaches bit q: the level is n - 1 exchanges
            for i in range(1, n):
                x[0], x[i] = x[i], x[0]
            q >>= 1
            continue
        p, shift = np.uint64(q - 1), np.uint64(q.bit_length() - 1)
        for i in range(n):
            # bit q of x[i] as 0/1: set, invert x[0]'s low bits; clear, exchange them with x[i]'s
            high = (x[i] >> shift) & np.uint64(1)
            if i:
                t = ((x[0] ^ x[i]) & p) * (np.uint64(1) - high)
                x[0] ^= t
                x[i] ^= t
            x[0] ^= high * p
        q >>= 1
    for i in range(1, n):  # Gray encode
        x[i] = x[i] ^ x[i - 1]
    t = np.zeros_like(x[0])
    q = 1 << (bits - 1)
    while q > 1:
        t ^= np.where((x[n - 1] & np.uint64(q)) != zero, np.uint64(q - 1), zero)
        q >>= 1
    return [xi ^ t for xi in x]


def hilbert_words(coords: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """The Hilbert index (``HilbertCurve.bits(bits).index``) of each point, as uint64 words (the
    bits no row differs in left out: they do not change the order)."""
    transposed = hilbert_transpose(coords, bits)
    return pack_bits(transposed, max(1, min(bits, _varying_bits(transposed))))


def hudi_hash_map_order(positions: Sequence[int]) -> list[int]:
    """The order Java's ``HashMap<Integer, ...>`` (as ``Collectors.toMap`` builds it) iterates the
    schema positions of the sort columns: by bucket (``position & (capacity - 1)``, the
    capacity 16 doubled while over 3/4 full), ties in insertion order. Hudi's ``direct`` curves
    take their dimensions in this order."""
    capacity = 16
    while len(positions) > capacity * 3 // 4:
        capacity *= 2
    return [i for _, _, i in sorted((p & (capacity - 1), k, i) for k, (i, p) in enumerate(enumerate(positions)))]


def _lexsort(words: np.ndarray) -> np.ndarray:
    """Row indices in ascending order of the word matrix, stable."""
    return np.lexsort(tuple(words[:, j] for j in range(words.shape[1] - 1, -1, -1)))


def curve_order(data: pa.Table, columns: Sequence[str], spec: LayoutSpec) -> np.ndarray:
    """The row indices of ``data`` in the order ``spec`` clusters them by ``columns``."""
    missing = [c for c in columns if c not in data.column_names]
    if missing:
        raise HoodieNotSupportedError(
            f"Sort column(s) {', '.join(missing)} are not in the table's schema; fix "
            "hoodie.clustering.plan.strategy.sort.columns.")
    if data.num_rows == 0 or not columns:
        return np.arange(data.num_rows)
    if not spec.is_curve or (len(columns) == 1 and spec.build_method == DIRECT):
        return _linear(data, columns)
    if spec.build_method == DIRECT:
        order = hudi_hash_map_order([data.column_names.index(c) for c in columns])
        cols = [columns[i] for i in order]
        if spec.strategy == Z_ORDER:
            words = z_order_words([cv.z_key(data.column(c), c) for c in cols])
        else:
            words = hilbert_words([cv.hilbert_long(data.column(c), c) for c in cols], DIRECT_HILBERT_BITS)
    else:
        ranks = sample_ranks([data.column(c) for c in columns], list(columns), spec.sample_size, spec.seed)
        if spec.strategy == Z_ORDER:
            words = z_order_words([((r.astype(np.int64) & 0xFFFFFFFF) ^ (1 << 31)).astype(np.uint64) for r in ranks])
        else:
            words = hilbert_words(ranks, SAMPLE_HILBERT_BITS)
    return _lexsort(words)


def _linear(data: pa.Table, columns: Sequence[str]) -> np.ndarray:
    return np.asarray(pc.sort_indices(data, [(c, "ascending") for c in columns]))


def sort_by_layout(data: pa.Table, columns: Sequence[str], spec: LayoutSpec) -> pa.Table:
    """``data`` ordered as ``spec`` clusters it by ``columns`` (every row kept)."""
    if not columns or data.num_rows == 0:
        return data
    if not spec.is_curve:
        return data.sort_by([(c, "ascending") for c in columns])
    return data.take(pa.array(curve_order(data, columns, spec)))
