"""Benchmark (not a test): what writing a Hudi 1.x table (version 9) costs against version 6.

    .venv/bin/python benchmarks/table_versions.py [--rows 1000] [--writes 6]

The same small upserts (half updates, MERGE_ON_READ, four partitions, metadata table kept)
into a version 6 table and a version 9 one, with Hudi 1.x's clock-skew wait
(``hoodie.time.generator.max_expected_clock_skew_ms``) off and at Hudi's default 200 ms;
medians of the writes after the first. The format itself should cost nothing; each instant
and completion time of a 1.x table waits out the expected skew, as Hudi's
SkewAdjustingTimeGenerator does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_hoodie.actions.write import write_arrow  # noqa: E402
from benchmarks.report import print_table, write_report  # noqa: E402


def _median_upsert(version: int, skew_ms: int | None, rows: int, writes: int) -> float:
    base = os.path.join(tempfile.mkdtemp(prefix="hoodie-versions-"), "t")
    cfg = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.write.table.version": str(version)}
    if skew_ms is not None:
        cfg["hoodie.time.generator.max_expected_clock_skew_ms"] = str(skew_ms)
    times = []
    for i in range(writes):
        ids = list(range(i * rows // 2, i * rows // 2 + rows))
        batch = pa.table({"id": ids, "ts": [i] * rows, "p": [f"p{k % 4}" for k in ids], "v": [str(k) for k in ids]})
        t0 = time.perf_counter()
        write_arrow(base, batch, "upsert", cfg, table_name="t")
        times.append(time.perf_counter() - t0)
    return statistics.median(times[1:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--writes", type=int, default=6)
    args = ap.parse_args()
    v6 = _median_upsert(6, None, args.rows, args.writes)
    v9_no_wait = _median_upsert(9, 0, args.rows, args.writes)
    v9_default = _median_upsert(9, None, args.rows, args.writes)
    rows = [(f"upsert {args.rows} rows into a v9 table, no skew wait", v9_no_wait, v6, "same into v6"),
            (f"upsert {args.rows} rows into a v9 table, Hudi's 200 ms skew wait", v9_default, v6, "same into v6")]
    print_table(rows)
    write_report("table_versions", {"rows": args.rows, "writes": args.writes, "v6_s": v6, "v9_no_wait_s": v9_no_wait,
                                    "v9_default_wait_s": v9_default}, rows)


if __name__ == "__main__":
    main()
