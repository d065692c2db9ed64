"""Benchmark (not a test): what keeping one secondary index costs an upsert (issue 38's goal:
at most 1.15x the same upsert without it).

    .venv/bin/python benchmarks/secondary_index_cost.py [--rows 1000000] [--batch 100000] [--repeat 5]

Two table-version-9 tables loaded alike (``--rows`` rows of benchmarks/upsert.py, the metadata
table with its record index), one of them with a secondary index on ``name`` built by the
indexer (``run_indexer``, as ``spark_jobs/indexer.py`` does). The same upsert of ``--batch``
records (20% updates, whose ``name`` changes: every update tombstones an entry and adds one)
goes into a fresh copy of each, COPY_ON_WRITE and MERGE_ON_READ, through the in-process write
flow (``write_arrow``), runs with and without alternating so both see the same load. Reported:
medians of wall and CPU seconds, the median of the per-pair ratios (runs back to back, which
cancels most of a shared machine's drift), and the index's own share: the time in
``secondary_index_change`` (reading the touched file groups' keys and values before and after)
and ``append_secondary_index`` (the HFile blocks). Writes ``benchmarks/out/secondary_index_cost.json``
and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402
from benchmarks.upsert import table_and_batch  # noqa: E402


class IndexProbe:
    """Seconds spent deriving and appending the secondary-index records of each write."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def install(self) -> None:
        from airflow_hoodie.actions.metadata_table import metadata_writer, secondary_index_writer  # noqa: PLC0415

        def timed(module: Any, name: str) -> None:
            inner = getattr(module, name)

            def wrapper(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return inner(*args, **kwargs)
                finally:
                    self.seconds.append(time.perf_counter() - t0)
            setattr(module, name, wrapper)

        # commit.py reaches the change through the module; the writer imports the append by name
        timed(secondary_index_writer, "secondary_index_change")
        timed(metadata_writer, "append_secondary_index")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5, help="each figure is the median of this many runs")
    args = ap.parse_args()

    from airflow_hoodie.actions.indexer import run_indexer  # noqa: PLC0415
    from airflow_hoodie.actions.write import write_arrow  # noqa: PLC0415
    from airflow_hoodie.config import HoodieConfig  # noqa: PLC0415
    from airflow_hoodie.table.hoodie_table import HoodieTable  # noqa: PLC0415

    probe = IndexProbe()
    probe.install()
    tmp = tempfile.mkdtemp(prefix="si-cost-")
    base_rows, batch = table_and_batch(args.rows, args.batch)
    n_upd = args.batch // 5
    figures: dict[str, Any] = {"rows": args.rows, "batch": args.batch, "repeat": args.repeat, "table_version": 9,
                               "engine": "write_arrow (in-process)", "index": "secondary index on name (V2)",
                               "load_before": os.getloadavg()}
    rows = []
    for tt in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        cfg = {"hoodie.table.name": "bench", "hoodie.datasource.write.table.type": tt,
               "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
               "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "RECORD_INDEX",
               "hoodie.write.table.version": "9", "hoodie.metadata.record.index.enable": "true",
               "hoodie.parquet.compression.codec": "snappy"}
        loaded = {}
        for with_index in (True, False):
            path = os.path.join(tmp, f"{tt.lower()}-{'si' if with_index else 'plain'}")
            write_arrow(path, base_rows, "bulk_insert", cfg)
            if with_index:
                t0 = time.perf_counter()
                run_indexer(HoodieTable.load(path), HoodieConfig({}), "scheduleAndExecute", "SECONDARY_INDEX",
                            "name_idx", "name")
                figures[f"{tt}_index_build_s"] = round(time.perf_counter() - t0, 3)
            loaded[with_index] = path
        runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
        for r in range(args.repeat):
            for with_index in ((True, False) if r % 2 == 0 else (False, True)):
                copy = shutil.copytree(loaded[with_index], f"{loaded[with_index]}-{r}")
                probe.seconds.clear()
                t0, c0 = time.perf_counter(), time.process_time()
                res = write_arrow(copy, batch, "upsert", cfg)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                assert res.updates == n_upd and res.inserts == args.batch - n_upd, res
                runs[with_index].append({"wall": wall, "cpu": cpu, "index_s": sum(probe.seconds)})
                shutil.rmtree(copy)
        med = {m: {k: statistics.median(x[k] for x in runs[m]) for k in ("wall", "cpu", "index_s")}
               for m in (True, False)}
        figures[tt] = {
            "with_index_s": round(med[True]["wall"], 3), "without_s": round(med[False]["wall"], 3),
            "with_cpu_s": round(med[True]["cpu"], 3), "without_cpu_s": round(med[False]["cpu"], 3),
            "ratio": round(med[True]["wall"] / med[False]["wall"], 3),
            "paired_ratio_median": round(statistics.median(
                w["wall"] / wo["wall"] for w, wo in zip(runs[True], runs[False])), 3),
            "paired_ratio_cpu_median": round(statistics.median(
                w["cpu"] / wo["cpu"] for w, wo in zip(runs[True], runs[False])), 3),
            "index_upkeep_s": round(med[True]["index_s"], 3),
            "runs_with": [round(x["wall"], 3) for x in runs[True]],
            "runs_without": [round(x["wall"], 3) for x in runs[False]],
        }
        rows.append((f"upsert {args.batch:,} into {args.rows:,}, {tt}, one secondary index kept", med[True]["wall"],
                     med[False]["wall"], "same upsert without it"))
    figures["load_after"] = os.getloadavg()
    print(json.dumps(figures, indent=1))
    print_table(rows)
    print(f"figures: {write_report('secondary_index_cost', figures, rows)}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
