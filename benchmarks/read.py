"""Benchmark (not a test): MERGE_ON_READ snapshot read through ``read_table`` against
hudi-rs (PyPI ``hudi``) on the same table, in one run.

    .venv/bin/python benchmarks/read.py [--rows 1000000] [--updates 80000] [--repeat 3]

The table: ``--rows`` inserted as base files, then ``--updates`` updates (and as many
inserts) written as log files, so every file group of a read merges base and logs.
Each reader runs ``--repeat`` times; the medians are compared.
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


def _median_seconds(fn, repeat: int) -> tuple[float, int]:
    times, rows = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        rows = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), rows


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

    ours_s, ours_rows = _median_seconds(lambda: read_table(base).num_rows, args.repeat)

    def hudi_rs() -> int:
        table = HudiTableBuilder.from_base_uri(base).build()
        return sum(b.num_rows for b in table.read(HudiReadOptions()))

    peer_s, peer_rows = _median_seconds(hudi_rs, args.repeat)
    if ours_rows != peer_rows:
        raise SystemExit(f"readers disagree: ours {ours_rows} rows, hudi-rs {peer_rows}")
    rows = [(f"MOR snapshot read, {ours_rows:,} rows, {logs} log files", ours_s, peer_s, "hudi-rs")]
    print_table(rows)
    path = write_report("read", {"rows": ours_rows, "log_files": logs, "repeat": args.repeat,
                                 "table_dir": base}, rows)
    print(f"figures: {path}")


if __name__ == "__main__":
    main()
