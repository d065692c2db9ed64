"""Benchmark (not a test): MERGE_ON_READ snapshot read through ``read_table`` against
hudi-rs (PyPI ``hudi``) on the same table, in one run.

    .venv/bin/python benchmarks/read.py [--rows 1000000] [--updates 80000] [--repeat 3]

The table: ``--rows`` inserted as base files, then ``--updates`` updates (and as many
inserts) written as log files, so every file group of a read merges base and logs.
The two readers alternate (ours, hudi-rs, ours, ...) ``--repeat`` times in one process, so
both see the same load on this shared machine; the medians of wall and CPU seconds
(``time.process_time``, all threads of the process) are compared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402


def _rows(ids: np.ndarray, ts: int) -> pa.Table:
    n = len(ids)
    arr = pa.array(ids, pa.int64())
    return pa.table({
        "id": pc.utf8_lpad(pc.cast(arr, pa.string()), 10, "0"),
        "p": pc.cast(pc.bit_wise_and(arr, 3), pa.string()),
        "ts": pa.array(np.full(n, ts), pa.int64()),
        "amount": pa.array(np.random.default_rng(ts).random(n) * 1000),
        "payload": pa.array(np.char.add("name-", (ids % 100_000).astype(str)), pa.string()),
    })


def _timed(fn) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the whole process, fn's result)."""
    c0, t0 = time.process_time(), time.perf_counter()
    rows = fn()
    return time.perf_counter() - t0, time.process_time() - c0, rows


def _alternating(fns: dict, repeat: int) -> dict[str, tuple[float, float, int]]:
    """Median (wall, cpu) and the row count of each reader, run in turns."""
    runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            runs[name].append(_timed(fn))
    return {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs), rs[-1][2])
            for name, rs in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--updates", type=int, default=80_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.table.read import read_table
    from hudi import HudiReadOptions, HudiTableBuilder

    base = os.path.join(tempfile.mkdtemp(prefix="read-bench-"), "mor")
    cfg = {"hoodie.table.name": "bench", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
           "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.parquet.compression.codec": "snappy"}
    write_arrow(base, _rows(np.arange(args.rows), 1), "insert", cfg)
    rng = np.random.default_rng(7)
    for k in range(2):  # two delta commits: updates + inserts into log files
        upd = rng.choice(args.rows, args.updates // 2, replace=False)
        new = np.arange(args.rows + k * args.updates, args.rows + (k + 1) * args.updates // 2 + k * args.updates // 2)
        write_arrow(base, _rows(np.concatenate([upd, new]), 2 + k), "upsert", cfg)
    logs = sum(1 for r, _d, fs in os.walk(base) for f in fs if ".log." in f)

    def hudi_rs() -> int:
        table = HudiTableBuilder.from_base_uri(base).build()
        return sum(b.num_rows for b in table.read(HudiReadOptions()))

    load = os.getloadavg()[0]
    res = _alternating({"ours": lambda: read_table(base).num_rows, "hudi-rs": hudi_rs}, args.repeat)
    (ours_s, ours_cpu, ours_rows), (peer_s, peer_cpu, peer_rows) = res["ours"], res["hudi-rs"]
    if ours_rows != peer_rows:
        raise SystemExit(f"readers disagree: ours {ours_rows} rows, hudi-rs {peer_rows}")
    rows = [(f"MOR snapshot read, {ours_rows:,} rows, {logs} log files", ours_s, peer_s, "hudi-rs")]
    print_table(rows)
    print(f"CPU seconds: ours {ours_cpu:.2f}, hudi-rs {peer_cpu:.2f} ({ours_cpu / peer_cpu:.2f}x); "
          f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
    path = write_report("read", {"rows": ours_rows, "log_files": logs, "repeat": args.repeat,
                                 "ours_cpu_s": round(ours_cpu, 3), "peer_cpu_s": round(peer_cpu, 3),
                                 "load_avg_1m": round(load, 2), "table_dir": base}, rows)
    print(f"figures: {path}")


if __name__ == "__main__":
    main()
