"""Benchmark (not a test): listing the file groups of a 1,000-partition table through its
metadata table vs by listing storage, and what keeping the metadata table true adds to an
upsert.

    .venv/bin/python benchmarks/listing.py [--partitions 1000] [--latency-ms 0] [--repeat 5]
    .venv/bin/python benchmarks/listing.py --bloom [--bloom-files 1000] [--bloom-keys 100000]

Writes a COPY_ON_WRITE table with one file group per partition (the write keeps its
metadata table's ``files`` partition, hoodie.metadata.enable's default), then builds the
file-system view both ways, counting the storage calls each makes (list, read, stat, open)
and timing it (median of --repeat). With ``--latency-ms`` every storage call also sleeps
that long, a stand-in for an object store's per-request latency (S3 lists are ~20-50 ms
each). Then it times upserts of the same batch (updates in 100 partitions) into copies of
the table with the metadata table kept and without one (median of --repeat).

``--bloom``: a BLOOM-index upsert of --bloom-keys keys into a table of --bloom-files files
(one file group per partition) that keeps column_stats and bloom_filters, tagged through the
metadata table (``hoodie.bloom.index.use.metadata=true``: key ranges and filters from one
batched lookup per metadata-table file group) against the footer path (one parquet footer
per file), counting the storage calls the lookup makes and timing the lookup and the whole
upsert (median of --repeat, the modes interleaved on fresh copies).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402
from tests.table.table_files import storage_listing  # noqa: E402

import pyarrow as pa  # noqa: E402

COUNTED = ("list_dir", "read_bytes", "info", "exists", "size", "open_input")


class CountingStorage:
    """Delegates to a Storage, counting (and optionally delaying) the calls that reach it."""

    def __init__(self, inner, latency_s: float) -> None:
        self._inner, self._latency = inner, latency_s
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if name not in COUNTED:
            return attr

        def counted(*args, **kwargs):
            self.calls[name] += 1
            if self._latency:
                time.sleep(self._latency)
            return attr(*args, **kwargs)
        return counted


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bloom", action="store_true", help="run the BLOOM lookup benchmark instead")
    ap.add_argument("--bloom-files", type=int, default=1000)
    ap.add_argument("--bloom-keys", type=int, default=100_000)
    args = ap.parse_args()
    if args.bloom:
        bloom_benchmark(args.bloom_files, args.bloom_keys, args.latency_ms, args.repeat)
        return

    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.table.file_group.file_system_view import FileSystemView
    from airflow_hoodie.table.hoodie_table import HoodieTable

    tmp = tempfile.mkdtemp(prefix="listing-bench-")
    base = os.path.join(tmp, "t")
    n = args.partitions
    cfg = {"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p"}
    t0 = time.perf_counter()
    write_arrow(base, pa.table({"id": list(range(n)), "ts": [1] * n, "p": [f"p{i:04d}" for i in range(n)]}),
                "insert", cfg, table_name="listing")
    build_s = time.perf_counter() - t0
    assert HoodieTable.load(base).config.get("hoodie.table.metadata.partitions") == "files"

    results = {}
    slices = {}
    for mode in ("storage", "metadata_table"):
        times, calls = [], Counter()
        for _ in range(args.repeat):
            table = HoodieTable.load(base)
            counting = CountingStorage(table.storage, args.latency_ms / 1000)
            view = FileSystemView(counting, table.base_path, table.timeline, table.config, mode == "metadata_table")
            t0 = time.perf_counter()
            got = view.latest_merged_file_slices()
            times.append(time.perf_counter() - t0)
            calls = counting.calls
        slices[mode] = sorted((s.partition_path, s.file_id, s.base_file.file_name) for s in got)
        results[mode] = {"seconds_median": round(statistics.median(times), 4), "storage_calls": dict(calls),
                         "storage_calls_total": sum(calls.values()), "file_slices": len(got)}
    assert slices["storage"] == slices["metadata_table"], "the two listings differ"
    assert {p: f for p, f in storage_listing(base).items()} == _mdt_listing(base), "the metadata table is stale"

    # the upsert: the same batch into copies kept with and without their metadata table
    batch = pa.table({"id": list(range(0, n, max(1, n // 100))), "ts": [2] * len(range(0, n, max(1, n // 100))),
                      "p": [f"p{i:04d}" for i in range(0, n, max(1, n // 100))]})
    import airflow_hoodie.actions.metadata_table.metadata_writer as metadata_writer_module

    step: list[float] = []  # the metadata-table delta commit itself, timed where it runs
    update = metadata_writer_module.update_files_partition

    def timed_update(*a, **k):
        t0 = time.perf_counter()
        try:
            return update(*a, **k)
        finally:
            step.append(time.perf_counter() - t0)

    metadata_writer_module.update_files_partition = timed_update
    times: dict[str, list[float]] = {"metadata_table": [], "no_metadata_table": []}
    step_s: list[float] = []
    for k in range(args.repeat):  # the modes interleaved: the machine's state drifts between runs
        for mode, enabled in (("metadata_table", "true"), ("no_metadata_table", "false")):
            copy = os.path.join(tmp, f"{mode}-{k}")
            shutil.copytree(base, copy)
            # one small write first in both modes (it drops the metadata table in the second), so
            # both timed writes meet a table with the same history and warm files
            write_arrow(copy, batch.slice(0, 1), "upsert", {**cfg, "hoodie.metadata.enable": enabled})
            del step[:]
            t0 = time.perf_counter()
            write_arrow(copy, batch, "upsert", {**cfg, "hoodie.metadata.enable": enabled})
            times[mode].append(time.perf_counter() - t0)
            if enabled == "true":
                step_s.append(sum(step))
            shutil.rmtree(copy)
    upsert_s = {mode: round(statistics.median(t), 4) for mode, t in times.items()}
    figures = {"partitions": n, "latency_ms_per_call": args.latency_ms, "table_build_s": round(build_s, 2),
               **results, "upsert_rows": batch.num_rows,
               "upsert_s_median": upsert_s,
               "upsert_ratio_with_metadata_table": round(upsert_s["metadata_table"] / upsert_s["no_metadata_table"], 3),
               "metadata_table_step_s_median": round(statistics.median(step_s), 4)}
    print(figures)
    rows = [(f"file-system view of {n:,} partitions through the metadata table "
             f"({results['metadata_table']['storage_calls_total']} storage calls)",
             results["metadata_table"]["seconds_median"], results["storage"]["seconds_median"],
             f"listing storage ({results['storage']['storage_calls_total']} calls)"),
            (f"upsert of {batch.num_rows} rows into {batch.num_rows} of {n:,} partitions, metadata table kept",
             upsert_s["metadata_table"], upsert_s["no_metadata_table"], "the same without a metadata table")]
    print_table(rows)
    name = "listing" if not args.latency_ms else f"listing_{args.latency_ms:g}ms"
    print(f"figures: {write_report(name, figures, rows)}")
    shutil.rmtree(tmp, ignore_errors=True)


STORAGE_METHODS = ("list_dir", "read_bytes", "info", "exists", "size", "open_input")


def bloom_benchmark(files: int, keys: int, latency_ms: float, repeat: int) -> None:
    """The lookup of a BLOOM upsert through the metadata table against the footer path."""
    import airflow_hoodie.actions.write as write_module
    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.table.storage.storage import Storage

    tmp = tempfile.mkdtemp(prefix="bloom-bench-")
    base = os.path.join(tmp, "t")
    per_file = max(1, keys // files)
    ids = list(range(files * per_file))
    cfg = {"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.index.type": "BLOOM", "hoodie.index.bloom.num_entries": str(per_file * 2),
           "hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.index.bloom.filter.enable": "true"}
    rows = pa.table({"id": [f"k{i:08d}" for i in ids], "ts": [1] * len(ids), "v": ids,
                     "p": [f"p{i // per_file:05d}" for i in ids]})
    t0 = time.perf_counter()
    write_arrow(base, rows, "insert", cfg, table_name="bloom")
    build_s = time.perf_counter() - t0
    batch = rows.set_column(1, "ts", pa.array([2] * len(ids)))

    calls: Counter[str] = Counter()
    originals = {m: getattr(Storage, m) for m in STORAGE_METHODS}
    counting = [False]

    def wrap(name, fn):
        def counted(self, *a, **k):
            if counting[0]:
                calls[name] += 1
                if latency_ms:
                    time.sleep(latency_ms / 1000)
            return fn(self, *a, **k)
        return counted

    lookup = write_module.lookup_existing_keys
    lookup_s: list[float] = []

    def timed_lookup(*a, **k):
        counting[0] = True
        t = time.perf_counter()
        try:
            return lookup(*a, **k)
        finally:
            lookup_s.append(time.perf_counter() - t)
            counting[0] = False

    for m, fn in originals.items():
        setattr(Storage, m, wrap(m, fn))
    write_module.lookup_existing_keys = timed_lookup
    results: dict[str, dict] = {}
    try:
        per_mode: dict[str, dict[str, list]] = {m: {"lookup": [], "upsert": [], "calls": []} for m in ("metadata", "footers")}
        for k in range(repeat):
            for mode, use in (("metadata", "true"), ("footers", "false")):
                copy = os.path.join(tmp, f"{mode}-{k}")
                shutil.copytree(base, copy)
                calls.clear()
                del lookup_s[:]
                t0 = time.perf_counter()
                write_arrow(copy, batch, "upsert", {**cfg, "hoodie.bloom.index.use.metadata": use})
                per_mode[mode]["upsert"].append(time.perf_counter() - t0)
                per_mode[mode]["lookup"].append(sum(lookup_s))
                per_mode[mode]["calls"].append(dict(calls))
                shutil.rmtree(copy)
        for mode, got in per_mode.items():
            last = got["calls"][-1]
            results[mode] = {"lookup_s_median": round(statistics.median(got["lookup"]), 3),
                             "upsert_s_median": round(statistics.median(got["upsert"]), 3),
                             "lookup_storage_calls": last, "lookup_storage_calls_total": sum(last.values())}
    finally:
        for m, fn in originals.items():
            setattr(Storage, m, fn)
        write_module.lookup_existing_keys = lookup
    figures = {"files": files, "keys": len(ids), "latency_ms_per_call": latency_ms, "table_build_s": round(build_s, 2),
               **{f"bloom_{m}": r for m, r in results.items()}}
    print(figures)
    table_rows = [(f"BLOOM lookup of {len(ids):,} keys in {files:,} files through the metadata table "
                   f"({results['metadata']['lookup_storage_calls_total']} storage calls)",
                   results["metadata"]["lookup_s_median"], results["footers"]["lookup_s_median"],
                   f"parquet footers ({results['footers']['lookup_storage_calls_total']} calls)"),
                  (f"the whole upsert of {len(ids):,} keys, metadata table lookup",
                   results["metadata"]["upsert_s_median"], results["footers"]["upsert_s_median"], "footer lookup")]
    print_table(table_rows)
    name = "bloom_lookup" if not latency_ms else f"bloom_lookup_{latency_ms:g}ms"
    print(f"figures: {write_report(name, figures, table_rows)}")
    shutil.rmtree(tmp, ignore_errors=True)


def _mdt_listing(base: str) -> dict[str, dict[str, int]]:
    from airflow_hoodie.table.hoodie_table import HoodieTable
    from airflow_hoodie.table.metadata_table.files_listing import load_files_listing

    table = HoodieTable.load(base)
    listing = load_files_listing(table.storage, table.base_path, table.timeline)
    return {p: f for p, f in listing.files.items() if f}


if __name__ == "__main__":
    main()
