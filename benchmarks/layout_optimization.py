"""Benchmark (not a test): data skipping after clustering with a linear sort against z-order and
Hilbert layouts (hoodie.layout.optimize.strategy) over two sort columns.

    .venv/bin/python benchmarks/layout_optimization.py [--rows 2000000] [--files 40] [--batches 8]
        [--method direct|sample] [--probes 5]

One table of ``--rows`` rows (``x``, ``y`` independent and uniform over [0, 100000)) is written in
``--batches`` inserts, copied three times and each copy clustered by ``x,y`` into about ``--files``
files, one strategy per copy. Then for ``--probes`` point values and one narrow range per column,
the read ``read_table(filters=...)`` (skipping through the metadata table's column_stats) counts
the file slices it opens, and its rows are checked against the full read filtered in memory. The
goal: z-order and Hilbert open at most half of linear's files for a filter on the second column.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import airflow_hoodie.table.read as read_module
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from benchmarks.report import print_table, write_report

STRATEGIES = ("linear", "z-order", "hilbert")
SPAN = 100_000
CONFIG = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
          "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
          "hoodie.datasource.write.table.type": "COPY_ON_WRITE", "hoodie.parquet.small.file.limit": "0",
          "hoodie.metadata.index.column.stats.enable": "true", "hoodie.write.table.version": "9",
          "hoodie.time.generator.max_expected_clock_skew_ms": "0"}


def _batch(lo: int, hi: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = hi - lo
    ids = pa.array(np.arange(lo, hi))
    return pa.table({"id": pc.utf8_lpad(pc.cast(ids, pa.string()), 10, "0"), "p": pa.array(["a"] * n),
                     "ts": pa.array(np.ones(n, np.int64)), "x": pa.array(rng.integers(0, SPAN, n)),
                     "y": pa.array(rng.integers(0, SPAN, n)), "v": pa.array(rng.random(n))})


def build(base: str, rows: int, batches: int) -> float:
    t0 = time.perf_counter()
    per = -(-rows // batches)
    for b in range(batches):
        write_arrow(base, _batch(b * per, min(rows, (b + 1) * per), b), "insert", CONFIG)
    return time.perf_counter() - t0


def _data_bytes(base: str) -> int:
    out = 0
    for root, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        out += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".parquet"))
    return out


def cluster(base: str, strategy: str, files: int, method: str) -> dict[str, Any]:
    size = _data_bytes(base)
    cfg = HoodieConfig({cu.SORT_COLUMNS: "x,y", cu.SMALL_FILE_LIMIT: str(10 * size),
                        cu.MAX_BYTES_PER_GROUP: str(100 * size), cu.TARGET_FILE_MAX_BYTES: str(size // files + 1),
                        "hoodie.layout.optimize.strategy": strategy,
                        "hoodie.layout.optimize.curve.build.method": method,
                        "hoodie.metadata.index.column.stats.enable": "true"})
    t0 = time.perf_counter()
    res = cu.run_clustering(HoodieTable.load(base), cfg, LocalExecutor())
    return {"seconds": round(time.perf_counter() - t0, 2), "files_written": res["files_written"],
            "records_written": res["records_written"]}


def filtered(base: str, flt: list[tuple[str, str, Any]]) -> tuple[int, pa.Table, float]:
    """(file slices opened, rows, seconds) of one filtered read."""
    count: list[int] = []
    real = read_module.read_file_slice

    def counting(storage: Any, file_slice: Any, opts: Any = None) -> pa.Table:
        count.append(1)
        return real(storage, file_slice, opts)

    read_module.read_file_slice = counting
    try:
        t0 = time.perf_counter()
        rows = read_table(base, columns=["id", "x", "y"], filters=flt)
        seconds = time.perf_counter() - t0
    finally:
        read_module.read_file_slice = real
    return len(count), rows, seconds


def _expected(full: pa.Table, flt: list[tuple[str, str, Any]]) -> list[str]:
    col, op, value = flt[0]
    if op == "==":
        mask = pc.equal(full.column(col), value)
    else:
        mask = pc.and_(pc.greater_equal(full.column(col), value[0]), pc.less(full.column(col), value[1]))
    return sorted(full.filter(mask).column("id").to_pylist())


def probes(full: pa.Table, count: int) -> dict[str, list[list[tuple[str, str, Any]]]]:
    """Per column: point filters on values present in the table, and one range of 1% of the span."""
    rng = np.random.default_rng(7)
    out: dict[str, list[list[tuple[str, str, Any]]]] = {}
    for col in ("x", "y"):
        values = full.column(col).to_numpy()
        picks = [int(values[i]) for i in rng.integers(0, len(values), count)]
        out[col] = [[(col, "==", v)] for v in picks] + [[(col, "between", (SPAN // 2, SPAN // 2 + SPAN // 100))]]
    return out


def _pushed(flt: list[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    col, op, value = flt[0]
    return flt if op == "==" else [(col, ">=", value[0]), (col, "<", value[1])]


def measure(base: str, full: pa.Table, plan: dict[str, list[list[tuple[str, str, Any]]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for col, flts in plan.items():
        opened, seconds = [], []
        for flt in flts:
            n, rows, s = filtered(base, _pushed(flt))
            got = sorted(rows.column("id").to_pylist())
            if got != _expected(full, flt):
                raise SystemExit(f"{base}: the pruned read of {flt} differs from the full read")
            opened.append(n)
            seconds.append(s)
        out[col] = {"files_opened": opened, "mean_files_opened": round(statistics.mean(opened), 2),
                    "median_read_s": round(statistics.median(seconds), 4)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--method", default="direct", choices=["direct", "sample"])
    parser.add_argument("--probes", type=int, default=5)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="hoodie-layout-")
    try:
        source = os.path.join(root, "source")
        build_s = build(source, args.rows, args.batches)
        full = read_table(source, columns=["id", "x", "y"]).sort_by("id")  # probes independent of file order
        plan = probes(full, args.probes)
        figures: dict[str, Any] = {"rows": args.rows, "target_files": args.files, "batches": args.batches,
                                   "method": args.method, "build_s": round(build_s, 2), "strategies": {}}
        for strategy in STRATEGIES:
            base = os.path.join(root, strategy)
            shutil.copytree(source, base)
            done = cluster(base, strategy, args.files, args.method)
            if done["records_written"] != args.rows:
                raise SystemExit(f"{strategy}: clustering wrote {done['records_written']} of {args.rows} rows")
            figures["strategies"][strategy] = {"clustering": done, **measure(base, full, plan)}
            shutil.rmtree(base)
            s = figures["strategies"][strategy]
            print(f"{strategy}: {done['files_written']} files in {done['seconds']} s; mean files opened "
                  f"x {s['x']['mean_files_opened']}, y {s['y']['mean_files_opened']}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    linear = figures["strategies"]["linear"]
    rows = []
    for strategy in ("z-order", "hilbert"):
        s = figures["strategies"][strategy]
        for col in ("x", "y"):
            ratio = s[col]["mean_files_opened"] / max(linear[col]["mean_files_opened"], 1e-9)
            figures["strategies"][strategy][col]["vs_linear"] = round(ratio, 3)
            rows.append((f"{strategy}: files opened by a filter on {col} (count, not seconds)",
                         s[col]["mean_files_opened"], linear[col]["mean_files_opened"], "linear"))
    goal = all(figures["strategies"][s]["y"]["vs_linear"] <= 0.5 for s in ("z-order", "hilbert"))
    figures["goal_second_column_at_most_half_of_linear"] = goal
    print_table(rows)
    print("goal (z-order and hilbert open <= 0.5x linear's files on y):", "met" if goal else "NOT met")
    print(write_report(f"layout_optimization_{args.method}", figures, rows))


if __name__ == "__main__":
    main()
