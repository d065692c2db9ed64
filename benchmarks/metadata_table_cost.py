"""Benchmark (not a test): what keeping the metadata table costs an upsert.

    .venv/bin/python benchmarks/metadata_table_cost.py [--rows 1000000] [--batch 100000] [--repeat 5]

The same upsert of ``--batch`` records (20% updates, benchmarks/upsert.py's rows) into a
``--rows``-record table, COPY_ON_WRITE and MERGE_ON_READ, with ``hoodie.metadata.enable``
true (the files partition kept in the same commit) and false, through the in-process write
flow (``write_arrow``: the engine a small batch takes on the Spark driver, without Spark's
collect around it, so the ratio is not diluted by it). Each run starts from a fresh copy of
a table loaded the same way; runs with and without alternate so both see the same load on
a shared machine. Reported: medians of wall and CPU seconds, the metadata-table update's
own time (``update_files_partition``: the delta commit of the files partition, stats and
record index, and the metadata table's own services) and the storage calls it makes, the
read of the files partition the write plans on, and the storage calls of the whole upsert
with and without it.
The median of the per-pair ratios (runs with and without it back to back) is reported too:
it cancels most of a shared machine's drift. Writes ``benchmarks/out/metadata_table_cost.json``
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
import threading
import time
from collections import Counter
from typing import Any, Callable


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402
from benchmarks.upsert import table_and_batch  # noqa: E402

#: the Storage calls counted: every one is a request on an object store
STORAGE_CALLS = ("info", "exists", "file_exists", "size", "list_dir", "read_bytes", "open_input", "mkdirs",
                 "open_output", "write_bytes", "create_if_absent", "open_append", "delete", "delete_dir",
                 "read_versioned", "create_versioned", "replace_if_version")


class MetadataUpdateProbe:
    """Times ``update_files_partition`` and counts the Storage calls made inside it, and
    those of the whole write (:meth:`writing`)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.listing_seconds: list[float] = []
        self.calls: Counter[str] = Counter()
        self.write_calls: Counter[str] = Counter()
        self._inside = False
        self._writing = False
        self._local = threading.local()  # the calls nested in a call, per thread (tasks run on threads)
        self._lock = threading.Lock()

    def install(self) -> None:
        from airflow_hoodie.actions.metadata_table import metadata_writer  # noqa: PLC0415
        from airflow_hoodie.table.file_group import file_system_view  # noqa: PLC0415
        from airflow_hoodie.table.storage.storage import Storage  # noqa: PLC0415

        for name in STORAGE_CALLS:
            setattr(Storage, name, self._counting(name, getattr(Storage, name)))
        inner = metadata_writer.update_files_partition

        def timed(*args: Any, **kwargs: Any) -> Any:
            self._inside = True
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds.append(time.perf_counter() - t0)
                self._inside = False

        metadata_writer.update_files_partition = timed
        read_listing = file_system_view.load_files_listing

        def timed_listing(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return read_listing(*args, **kwargs)
            finally:
                self.listing_seconds.append(time.perf_counter() - t0)

        file_system_view.load_files_listing = timed_listing

    def _counting(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def counted(storage: Any, *args: Any, **kwargs: Any) -> Any:
            # only the outermost call counts (exists() asks info(), size() too): one request
            depth = getattr(self._local, "depth", 0)
            if not depth:
                with self._lock:
                    if self._inside:
                        self.calls[name] += 1
                    if self._writing:
                        self.write_calls[name] += 1
            self._local.depth = depth + 1
            try:
                return fn(storage, *args, **kwargs)
            finally:
                self._local.depth = depth
        return counted

    def reset(self) -> None:
        self.seconds.clear()
        self.listing_seconds.clear()
        self.calls.clear()
        self.write_calls.clear()

    def writing(self, on: bool) -> None:
        """Count every Storage call from now (on) until off: the whole write's requests,
        the heartbeat thread's included (one a minute by default: none in a short write)."""
        self._writing = on


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5, help="each figure is the median of this many runs")
    ap.add_argument("--codec", default="snappy")
    args = ap.parse_args()

    from airflow_hoodie.actions.write import write_arrow  # noqa: PLC0415

    probe = MetadataUpdateProbe()
    probe.install()
    tmp = tempfile.mkdtemp(prefix="mdt-cost-")
    base_rows, batch = table_and_batch(args.rows, args.batch)
    n_upd = args.batch // 5
    figures: dict[str, Any] = {"rows": args.rows, "batch": args.batch, "repeat": args.repeat, "codec": args.codec,
                               "engine": "write_arrow (in-process)", "load_before": os.getloadavg()}
    rows = []
    for tt in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
        loaded = {}
        for mdt in (True, False):
            cfg = {"hoodie.table.name": "bench", "hoodie.datasource.write.table.type": tt,
                   "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
                   "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "SIMPLE",
                   "hoodie.parquet.compression.codec": args.codec, "hoodie.metadata.enable": str(mdt).lower()}
            path = os.path.join(tmp, f"{tt.lower()}-{'mdt' if mdt else 'plain'}")
            write_arrow(path, base_rows, "bulk_insert", cfg)
            loaded[mdt] = (path, cfg)
        for r in range(args.repeat):
            for mdt in ((True, False) if r % 2 == 0 else (False, True)):
                path, cfg = loaded[mdt]
                copy = shutil.copytree(path, f"{path}-{r}")
                probe.reset()
                probe.writing(True)
                t0, c0 = time.perf_counter(), time.process_time()
                res = write_arrow(copy, batch, "upsert", cfg)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                probe.writing(False)
                assert res.updates == n_upd and res.inserts == args.batch - n_upd, res
                runs[mdt].append({"wall": wall, "cpu": cpu, "update_s": sum(probe.seconds),
                                  "listing_s": sum(probe.listing_seconds), "listings": len(probe.listing_seconds),
                                  "update_calls": dict(probe.calls), "write_calls": sum(probe.write_calls.values())})
                shutil.rmtree(copy)
        med = {m: {k: statistics.median(x[k] for x in runs[m]) for k in ("wall", "cpu", "update_s", "listing_s")}
               for m in (True, False)}
        calls = runs[True][-1]["update_calls"]
        figures[tt] = {
            "with_metadata_table_s": round(med[True]["wall"], 3), "without_s": round(med[False]["wall"], 3),
            "with_cpu_s": round(med[True]["cpu"], 3), "without_cpu_s": round(med[False]["cpu"], 3),
            "ratio": round(med[True]["wall"] / med[False]["wall"], 3),
            "ratio_cpu": round(med[True]["cpu"] / med[False]["cpu"], 3),
            # runs r of both kinds ran back to back: their ratio cancels most of the load's drift
            "paired_ratio_median": round(statistics.median(
                w["wall"] / wo["wall"] for w, wo in zip(runs[True], runs[False])), 3),
            "paired_ratio_cpu_median": round(statistics.median(
                w["cpu"] / wo["cpu"] for w, wo in zip(runs[True], runs[False])), 3),
            "metadata_update_s": round(med[True]["update_s"], 4),
            "metadata_update_share_of_upsert": round(med[True]["update_s"] / med[True]["wall"], 4),
            # the write plans on the files partition: its read (once per write)
            "files_listing_read_s": round(med[True]["listing_s"], 4),
            "files_listing_reads_per_write": runs[True][-1]["listings"],
            "metadata_update_storage_calls": calls, "metadata_update_storage_calls_total": sum(calls.values()),
            # every Storage call of the whole upsert (median over the runs), with and without it
            "write_storage_calls_with": statistics.median(x["write_calls"] for x in runs[True]),
            "write_storage_calls_without": statistics.median(x["write_calls"] for x in runs[False]),
            "runs_with": [round(x["wall"], 3) for x in runs[True]],
            "runs_without": [round(x["wall"], 3) for x in runs[False]],
        }
        rows.append((f"upsert {args.batch:,} into {args.rows:,}, {tt}, metadata table kept", med[True]["wall"],
                     med[False]["wall"], "same upsert without it"))
    figures["load_after"] = os.getloadavg()
    figures["table_dir"] = tmp
    print(json.dumps(figures, indent=1))
    print_table(rows)
    for tt in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        f = figures[tt]
        print(f"{tt}: CPU {f['with_cpu_s']:.2f} s vs {f['without_cpu_s']:.2f} s ({f['ratio_cpu']:.2f}x), paired "
              f"ratios {f['paired_ratio_median']:.2f}x wall, {f['paired_ratio_cpu_median']:.2f}x CPU; "
              f"metadata-table update {f['metadata_update_s'] * 1000:.0f} ms, files listing read "
              f"{f['files_listing_read_s'] * 1000:.0f} ms ({f['files_listing_reads_per_write']}x), "
              f"{f['metadata_update_storage_calls_total']} storage calls {f['metadata_update_storage_calls']}; "
              f"whole upsert {f['write_storage_calls_with']:.0f} storage calls vs {f['write_storage_calls_without']:.0f}")
    print(f"figures: {write_report('metadata_table_cost', figures, rows)}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
