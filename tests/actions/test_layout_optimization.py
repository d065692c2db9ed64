"""Layout optimization in clustering (hoodie.layout.optimize.*): the curve keys follow Hudi's
mapping and the published curves (Morton interleaving; the Hilbert curve of Skilling's transform,
checked against the classic xy2d construction), a clustered table keeps every row (hudi-rs reads
what we read), column_stats stay exact, and a filter on the second sort column opens fewer files
than after a linear sort."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.settings.clustering import ClusteringSettings
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.layout import LayoutSpec, curve_order
from airflow_hoodie.table.layout.curve_values import hilbert_long, z_key
from airflow_hoodie.table.layout.sample_ranks import sample_ranks
from airflow_hoodie.table.layout.space_curves import hudi_hash_map_order
from airflow_hoodie.table.read import read_table
from tests.actions import layout_fixtures as lf
from tests.actions.test_attack_lake_sequences import assert_metadata_describes_storage
from tests.table.normalize import hudi_rs_rows

# ------------------------------------------------------------------ references, from the definitions


def ref_long_key(v: int) -> int:
    """Hudi's longTo8Byte: the sign bit flipped, big-endian."""
    return int.from_bytes(struct.pack(">q", v), "big") ^ (1 << 63)


def ref_int_key(v: int) -> int:
    """Hudi's intTo8Byte: 4 bytes, sign bit flipped, left-padded to 8."""
    return int.from_bytes(struct.pack(">i", v), "big") ^ (1 << 31)


def ref_double_key(d: float) -> int:
    raw = int.from_bytes(struct.pack(">d", d), "big")
    return raw ^ (1 << 63) if d > 0 else (~raw & (2 ** 64 - 1)) if d < 0 else raw


def morton(keys: list[int], bits: int = 64) -> int:
    """Interleave bits most significant first, key 0's bit before key 1's."""
    out = 0
    for b in range(bits - 1, -1, -1):
        for k in keys:
            out = (out << 1) | ((k >> b) & 1)
    return out


def xy2d(n: int, x: int, y: int) -> int:
    """The classic Hilbert index of (x, y) on an n-by-n grid (Wikipedia's xy2d)."""
    d, s = 0, n // 2
    while s > 0:
        rx, ry = int(x & s > 0), int(y & s > 0)
        d += s * s * ((3 * rx) ^ ry)
        if ry == 0:
            if rx == 1:
                x, y = s - 1 - x, s - 1 - y
            x, y = y, x
        s //= 2
    return d


def _non_decreasing(values: list[int]) -> bool:
    return all(a <= b for a, b in itertools.pairwise(values))

# ------------------------------------------------------------------ keys and curve orders


def test_z_keys_are_hudis_bytes_per_type() -> None:
    longs = [-2 ** 63, -1, 0, 1, 2 ** 63 - 1]
    assert z_key(pa.array(longs + [None], pa.int64())).tolist() == [ref_long_key(v) for v in longs] + [ref_long_key(2 ** 63 - 1)]
    ints = [-2 ** 31, -5, 0, 7, 2 ** 31 - 1]
    assert z_key(pa.array(ints + [None], pa.int32())).tolist() == [ref_int_key(v) for v in ints] + [ref_int_key(2 ** 31 - 1)]
    doubles = [-2.5, -0.0, 0.0, 1e-300, 3.0]
    assert z_key(pa.array(doubles, pa.float64())).tolist() == [ref_double_key(d) for d in doubles]
    # strings: the first 8 UTF-8 bytes, shorter ones left-padded (so "b" < "aa", as in Hudi)
    keys = z_key(pa.array(["b", "aa", "abcdefghij", None, "é"])).tolist()
    assert keys == [0x62, 0x6161, int.from_bytes(b"abcdefgh", "big"), 0, int.from_bytes("é".encode(), "big")]
    assert z_key(pa.array([True, False, None])).tolist() == [ref_int_key(1), ref_int_key(0), ref_int_key(0)]
    assert z_key(pa.array([-3, 5], pa.int8())).tolist() == [0xFD, 0x05]  # a byte is not sign-flipped
    # Hilbert longs: ints as themselves, strings as their padded 8 bytes, booleans as MAX/0
    assert hilbert_long(pa.array([-3, None], pa.int32())).tolist() == [-3, 2 ** 63 - 1]
    assert hilbert_long(pa.array([True, False])).tolist() == [2 ** 63 - 1, 0]
    with pytest.raises(HoodieNotSupportedError, match="'l'.*list"):
        z_key(pa.array([[1]]), "l")


def _two_columns(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"a": rng.integers(-2 ** 40, 2 ** 40, n), "b": rng.integers(-1000, 1000, n).astype(np.int32)})


def test_direct_z_order_is_morton_over_hudis_keys() -> None:
    data = _two_columns(2000, 1)
    order = curve_order(data, ["a", "b"], LayoutSpec("z-order"))
    a, b = data.column("a").to_pylist(), data.column("b").to_pylist()
    ref = [morton([ref_long_key(a[i]), ref_int_key(b[i])]) for i in order]
    assert sorted(order.tolist()) == list(range(2000)) and _non_decreasing(ref)


def test_direct_hilbert_is_the_hilbert_curve_of_63_bits_per_dimension() -> None:
    data = _two_columns(1000, 2)
    order = curve_order(data, ["a", "b"], LayoutSpec("hilbert"))
    low63 = 2 ** 63 - 1
    a, b = data.column("a").to_pylist(), data.column("b").to_pylist()
    ref = [xy2d(2 ** 63, a[i] & low63, b[i] & low63) for i in order]
    assert sorted(order.tolist()) == list(range(1000)) and _non_decreasing(ref)


def test_hilbert_of_small_values_is_the_same_curve_in_2d_and_visits_neighbours_in_3d() -> None:
    """Small coordinates on the 63-bit curve (the levels above them computed as exchanges)."""
    rng = np.random.default_rng(4)
    data = pa.table({"a": rng.integers(0, 5000, 800), "b": rng.integers(0, 300, 800)})
    order = curve_order(data, ["a", "b"], LayoutSpec("hilbert"))
    a, b = data.column("a").to_pylist(), data.column("b").to_pylist()
    assert _non_decreasing([xy2d(2 ** 63, a[i], b[i]) for i in order])
    grid = np.array(np.meshgrid(np.arange(8), np.arange(8), np.arange(8), indexing="ij")).reshape(3, -1)
    cube = pa.table({"a": grid[0], "b": grid[1], "c": grid[2]})
    points = grid[:, curve_order(cube, ["a", "b", "c"], LayoutSpec("hilbert"))].T
    assert (np.abs(np.diff(points, axis=0)).sum(axis=1) == 1).all() and points[0].tolist() == [0, 0, 0]


def test_dimensions_follow_hudis_hash_map_of_schema_positions() -> None:
    assert hudi_hash_map_order([3, 7]) == [0, 1] and hudi_hash_map_order([7, 3]) == [1, 0]
    assert hudi_hash_map_order([20, 3]) == [1, 0]  # position 20 sits in bucket 4 of 16, after 3
    data = _two_columns(500, 3)
    spec = LayoutSpec("z-order")
    assert curve_order(data, ["b", "a"], spec).tolist() == curve_order(data, ["a", "b"], spec).tolist()


def test_sample_ranks_and_sample_curves() -> None:
    data = pa.table({"a": pa.array(list(range(1000)) + [None], pa.int64()),
                     "s": pa.array([f"v{i % 10}" for i in range(1001)])})
    ranks = sample_ranks([data.column("a"), data.column("s")], ["a", "s"], 100)
    a = ranks[0]
    assert _non_decreasing(a[:1000].tolist()) and a[1000] > a[:1000].max()  # nulls rank last
    assert a[:1000].max() >= 90  # about sample.size ranks
    # the low-cardinality column spreads over the wide one's ranks
    assert ranks[1].max() > 50
    for strategy in ("z-order", "hilbert"):
        order = curve_order(data, ["a", "s"], LayoutSpec(strategy, "sample"))
        assert sorted(order.tolist()) == list(range(1001))
    z = curve_order(data, ["a", "s"], LayoutSpec("z-order", "sample", 100))
    ref = [morton([ref_int_key(int(ranks[0][i])), ref_int_key(int(ranks[1][i]))]) for i in z]
    assert _non_decreasing(ref)


@pytest.mark.parametrize("key,value", [("hoodie.layout.optimize.strategy", "peano"),
                                       ("hoodie.layout.optimize.curve.build.method", "guess")])
def test_unknown_strategy_or_method_is_refused_by_name(key: str, value: str) -> None:
    with pytest.raises(HoodieNotSupportedError, match=value):
        ClusteringSettings.from_config(HoodieConfig({key: value}))
    assert ClusteringSettings.from_config(HoodieConfig({"hoodie.layout.optimize.strategy": "Z-ORDER"})).layout.strategy \
        == "z-order"

# ------------------------------------------------------------------ clustering real tables


def _ids(t: pa.Table) -> list[str]:
    return sorted(t.column("id").to_pylist())


@pytest.mark.parametrize("strategy,method,version", [("z-order", "direct", 9), ("hilbert", "direct", 6),
                                                     ("hilbert", "sample", 9), ("z-order", "sample", 6)])
def test_clustering_along_a_curve_keeps_every_row_and_exact_column_stats(tmp_path: Path, strategy: str, method: str,
                                                                         version: int) -> None:
    base = str(tmp_path / "t")
    lf.build(base, 4000, 4, version)
    before = read_table(base, columns=["id", "x", "y", "v"]).sort_by("id")
    res = cu.run_clustering(HoodieTable.load(base), lf.cluster_config(strategy, 8, base, method), LocalExecutor())
    assert res["state"] == "completed" and res["records_written"] == 4000 and res["files_written"] == 8
    after = read_table(base, columns=["id", "x", "y", "v"]).sort_by("id")
    assert after.equals(before)
    rs = sorted((r["id"], r["x"], r["y"]) for r in hudi_rs_rows(base, columns=["id", "x", "y"]))
    assert rs == sorted(zip(*(before.column(c).to_pylist() for c in ("id", "x", "y"))))
    assert_metadata_describes_storage(base, f"{strategy} clustering")
    # the plan records the layout, so a re-execution orders rows the same way
    plan = HoodieTable.load(base).file_system_view().clustering_plan(res["instant"])
    assert plan["strategy"]["strategyParams"]["hoodie.layout.optimize.strategy"] == strategy
    for flt in ([("y", "==", 300)], [("x", "<", 100)], [("y", ">=", 1000)]):
        n, got = lf.opened(base, flt)
        col, op, v = flt[0]
        want = [i for i, val in zip(before.column("id").to_pylist(), before.column(col).to_pylist())
                if (val == v if op == "==" else val < v if op == "<" else val >= v)]
        assert _ids(got) == sorted(want) and n <= 8


def test_a_filter_on_the_second_column_opens_at_most_half_the_files_of_linear(tmp_path: Path) -> None:
    counts = {}
    for strategy in ("linear", "z-order", "hilbert"):
        base = str(tmp_path / strategy)
        lf.build(base, 8000, 4)
        cu.run_clustering(HoodieTable.load(base), lf.cluster_config(strategy, 16, base), LocalExecutor())
        assert lf.latest_files(base) == 16
        counts[strategy] = {col: lf.opened(base, [(col, "==", 500)])[0] for col in ("x", "y")}
    assert counts["linear"]["x"] <= 2 and counts["linear"]["y"] == 16, counts
    for strategy in ("z-order", "hilbert"):
        assert counts[strategy]["y"] <= counts["linear"]["y"] // 2, counts
        assert counts[strategy]["x"] <= counts["linear"]["y"] // 2, counts
