"""Benchmark (not a test): what CDC logging (hoodie.table.cdc.enabled=true) costs an upsert.

    .venv/bin/python benchmarks/cdc_cost.py [--rows 1000000] [--batch 100000] [--repeat 5] [--mode DATA_BEFORE_AFTER]

The same upsert of ``--batch`` records (20% updates, benchmarks/upsert.py's rows) into a
``--rows``-record COPY_ON_WRITE table created with and without ``hoodie.table.cdc.enabled``,
through the in-process write flow (``write_arrow``). Every merged file group of the CDC table
gets a ``.cdc`` log of its updates, deletes and inserts in the table's supplemental logging mode
(``--mode``: both images, the before image, or keys only); new file groups get none (their
inserts are read from the base file). Only COW is measured: a MERGE_ON_READ delta commit's log
appends log nothing. Each run starts from a fresh copy of a table loaded the
same way; runs with and without alternate so both see the same load on a shared machine.
Reported: medians of wall and CPU seconds, the CDC logging's own time (building the change
list and writing the log, per file group, summed), the bytes of .cdc logs against the bytes of
base files the upsert wrote, and the median of the per-pair ratios. Writes
``benchmarks/out/cdc_cost.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402
from benchmarks.upsert import table_and_batch  # noqa: E402


class CdcProbe:
    """Times the write handle's CDC step (``file_group_write._log_changes``) across task threads."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._lock = threading.Lock()

    def install(self) -> None:
        from airflow_hoodie.actions import file_group_write  # noqa: PLC0415

        inner = file_group_write._log_changes

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                with self._lock:
                    self.seconds += time.perf_counter() - t0

        file_group_write._log_changes = timed


def _bytes_written(table_dir: str, instant: str) -> tuple[int, int, int]:
    """(bytes of .cdc logs, bytes of base files, number of .cdc logs) the commit wrote."""
    from airflow_hoodie.table.hoodie_table import HoodieTable  # noqa: PLC0415

    meta = HoodieTable.load(table_dir).timeline.commit_metadata(instant)
    cdc = sum(size for s in meta.write_stats for size in (s.cdc_stats or {}).values())
    logs = sum(len(s.cdc_stats or {}) for s in meta.write_stats)
    return cdc, sum(s.file_size_in_bytes or 0 for s in meta.write_stats), logs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5, help="each figure is the median of this many runs")
    ap.add_argument("--mode", default="DATA_BEFORE_AFTER", choices=("OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER"),
                    help="hoodie.table.cdc.supplemental.logging.mode of the CDC table")
    args = ap.parse_args()

    from airflow_hoodie.actions.write import write_arrow  # noqa: PLC0415

    probe = CdcProbe()
    probe.install()
    tmp = tempfile.mkdtemp(prefix="cdc-cost-")
    base_rows, batch = table_and_batch(args.rows, args.batch)
    n_upd = args.batch // 5
    figures: dict[str, Any] = {"rows": args.rows, "batch": args.batch, "repeat": args.repeat,
                               "table_type": "COPY_ON_WRITE", "engine": "write_arrow (in-process)", "mode": args.mode,
                               "load_before": os.getloadavg()}
    loaded = {}
    for cdc in (True, False):
        cfg = {"hoodie.table.name": "bench", "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
               "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
               "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "SIMPLE",
               "hoodie.table.cdc.enabled": str(cdc).lower(),
               **({"hoodie.table.cdc.supplemental.logging.mode": args.mode} if cdc else {})}
        path = os.path.join(tmp, "cdc" if cdc else "plain")
        write_arrow(path, base_rows, "bulk_insert", cfg)
        loaded[cdc] = (path, cfg)
    runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    for r in range(args.repeat):
        for cdc in ((True, False) if r % 2 == 0 else (False, True)):
            path, cfg = loaded[cdc]
            copy = shutil.copytree(path, f"{path}-{r}")
            probe.seconds = 0.0
            t0, c0 = time.perf_counter(), time.process_time()
            res = write_arrow(copy, batch, "upsert", cfg)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            assert res.updates == n_upd and res.inserts == args.batch - n_upd, res
            cdc_bytes, base_bytes, logs = _bytes_written(copy, res.instant)
            runs[cdc].append({"wall": wall, "cpu": cpu, "cdc_s": probe.seconds, "cdc_bytes": cdc_bytes,
                              "base_bytes": base_bytes, "cdc_logs": logs})
            shutil.rmtree(copy)
    med = {m: {k: statistics.median(x[k] for x in runs[m]) for k in ("wall", "cpu", "cdc_s", "cdc_bytes", "base_bytes")}
           for m in (True, False)}
    figures.update({
        "with_cdc_s": round(med[True]["wall"], 3), "without_s": round(med[False]["wall"], 3),
        "with_cpu_s": round(med[True]["cpu"], 3), "without_cpu_s": round(med[False]["cpu"], 3),
        "ratio": round(med[True]["wall"] / med[False]["wall"], 3),
        "ratio_cpu": round(med[True]["cpu"] / med[False]["cpu"], 3),
        "paired_ratio_median": round(statistics.median(
            w["wall"] / wo["wall"] for w, wo in zip(runs[True], runs[False])), 3),
        "cdc_logging_s": round(med[True]["cdc_s"], 4),
        "cdc_logging_share_of_upsert": round(med[True]["cdc_s"] / med[True]["wall"], 4),
        "cdc_log_bytes": int(med[True]["cdc_bytes"]), "cdc_logs": runs[True][-1]["cdc_logs"],
        "base_file_bytes_with": int(med[True]["base_bytes"]), "base_file_bytes_without": int(med[False]["base_bytes"]),
        "runs_with": [round(x["wall"], 3) for x in runs[True]],
        "runs_without": [round(x["wall"], 3) for x in runs[False]],
        "load_after": os.getloadavg(),
    })
    rows = [(f"upsert {args.batch:,} into {args.rows:,}, COW, CDC logged", med[True]["wall"], med[False]["wall"],
             "same upsert, no CDC")]
    print(json.dumps(figures, indent=1))
    print_table(rows)
    print(f"CDC logging {figures['cdc_logging_s'] * 1000:.0f} ms ({figures['cdc_logging_share_of_upsert']:.1%} of the "
          f"upsert), {figures['cdc_logs']} .cdc logs, {figures['cdc_log_bytes']:,} bytes beside "
          f"{figures['base_file_bytes_with']:,} bytes of base files; paired ratio {figures['paired_ratio_median']:.2f}x")
    print(f"figures: {write_report('cdc_cost', figures, rows)}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
