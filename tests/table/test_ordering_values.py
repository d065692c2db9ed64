"""Ordering values compare as Hudi's ``Comparable.compareTo`` does: floating-point values in
``Double.compare`` / ``Float.compare`` order (NaN above +Infinity and equal to every NaN, -0.0
below 0.0), everything else as Arrow orders it."""

from __future__ import annotations

import functools
import math
import struct

import numpy as np
import pyarrow as pa
import pytest

from airflow_hoodie.table.ordering_values import java_comparable


def _java_compare(a: float, b: float, fmt: str) -> int:
    """Double.compare / Float.compare from their definition: numeric order first, then the
    (NaN-canonical) raw bits as a signed number, which orders -0.0 < 0.0 and NaN last."""
    if a < b:
        return -1
    if a > b:
        return 1

    def bits(v: float) -> int:
        signed = {">d": ">q", ">f": ">i"}[fmt]
        return struct.unpack(signed, struct.pack(fmt, math.nan if math.isnan(v) else v))[0]

    x, y = bits(a), bits(b)
    return (x > y) - (x < y)


@pytest.mark.parametrize("typ,fmt", [(pa.float64(), ">d"), (pa.float32(), ">f")])
def test_floats_rank_as_java_compares_them(typ: pa.DataType, fmt: str) -> None:
    rng = np.random.default_rng(7)
    special = [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, -5e-324, 1.0, -1.0, 1e300, -1e300]
    values = np.asarray(pa.array(special + list(rng.normal(0, 1e3, 200)) + special, typ)
                        .to_numpy(zero_copy_only=False), dtype=float).tolist()
    ranks = java_comparable(pa.array(values, typ)).to_pylist()
    for i, a in enumerate(values):
        for j in range(0, len(values), 7):
            b = values[j]
            assert (ranks[i] > ranks[j]) - (ranks[i] < ranks[j]) == _java_compare(a, b, fmt), (a, b)
    by_java = sorted(values, key=functools.cmp_to_key(lambda a, b: _java_compare(a, b, fmt)))
    assert [str(v) for v in by_java] == [str(values[i]) for i in np.argsort(ranks, kind="stable")]


def test_nulls_stay_null_and_other_types_are_unchanged() -> None:
    assert java_comparable(pa.chunked_array([[1.5, None], [math.nan]])).null_count == 1
    for values in (pa.array([3, 1]), pa.array(["\uFF21", "\U0001F600"]), pa.array([True, False])):
        assert java_comparable(values) is values
