"""Benchmark (not a test): a point lookup on a column with a secondary index, against the
same lookup reading every file group.

    .venv/bin/python benchmarks/secondary_index_lookup.py [--groups 200] [--rows 1000] [--rows-per-value 2]
        [--runs 5] [--latency-ms 0]

A version 9 COPY_ON_WRITE table of ``--groups`` file groups (``--rows`` rows each, two
partitions) gets a record index and a secondary index on
``city`` from the indexer; then ``read_table(filters=[("city", "=", v)])`` (and an ``in`` of
three values) reads it through the index, and the same read with the secondary-index pruning
switched off (every slice; the file listing comes from the metadata table in both). Reported:
file slices opened and median seconds of ``--runs`` reads; the rows of both reads are checked
equal. ``city`` holds ``--rows-per-value`` consecutive ids per value (2: one row in each
partition's file group of one batch), so the rows of one value live in one or two file groups;
each of their record keys is then looked up in the record index (one of its file groups per key).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from airflow_hoodie.actions.indexer import run_indexer
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table import read as read_module
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from benchmarks.report import median_run, print_table, write_report

NO_SKEW = {"hoodie.time.generator.max_expected_clock_skew_ms": "0"}
#: the Storage calls that reach storage, counted (and delayed by --latency-ms)
COUNTED = ("list_dir", "read_bytes", "info", "exists", "size", "open_input")
CALLS: list[int] = []


def add_latency(latency_s: float) -> None:
    """Every storage call counts, and sleeps ``latency_s``: a stand-in for an object store's
    per-request latency (S3 GETs take ~20-50 ms), as benchmarks/listing.py does."""
    from airflow_hoodie.table.storage.storage import Storage

    def slowed(name: str):
        real = getattr(Storage, name)

        def call(self, *args, **kwargs):
            CALLS.append(1)
            if latency_s:
                time.sleep(latency_s)
            return real(self, *args, **kwargs)
        return call

    for name in COUNTED:
        setattr(Storage, name, slowed(name))


def build(groups: int, rows: int, per_value: int) -> tuple[str, float]:
    """The table, and the seconds the indexer took to build both indexes."""
    base = os.path.join(tempfile.mkdtemp(prefix="hoodie-si-"), "t")
    cfg = {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
           "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.parquet.small.file.limit": "0",
           "hoodie.write.table.version": "9", **NO_SKEW}
    for g in range(0, groups, 2):  # one batch = one new file group per partition
        ids = range(g * rows, (g + 2) * rows)
        write_arrow(base, pa.table({"id": [f"k{i:08d}" for i in ids], "p": [f"p{i % 2}" for i in ids],
                                    "ts": [1] * len(ids), "city": [f"city{i // per_value}" for i in ids],
                                    "v": list(ids)}), "upsert", cfg)
    t0 = time.perf_counter()
    run_indexer(HoodieTable.load(base), HoodieConfig(NO_SKEW), "scheduleAndExecute", "RECORD_INDEX,SECONDARY_INDEX",
                "city_idx", "city")
    return base, time.perf_counter() - t0


def lookup(base: str, flt: list, use_index: bool, runs: int) -> tuple[float, int, int, pa.Table]:
    """(median seconds, slices opened, storage calls, rows) of the read; without the index, the same read
    (file listing through the metadata table too) with the secondary-index pruning off."""
    opened: list[int] = []
    real, real_prune = read_module.read_file_slice, read_module.prune_slices_by_secondary_index

    def counting(storage, file_slice, opts=None):
        opened.append(1)
        return real(storage, file_slice, opts)

    read_module.read_file_slice = counting
    if not use_index:
        read_module.prune_slices_by_secondary_index = lambda table, slices, filters, schema: list(slices)
    CALLS.clear()
    try:
        seconds, rows = median_run(lambda _: read_table(base, filters=flt), range(runs))
    finally:
        read_module.read_file_slice, read_module.prune_slices_by_secondary_index = real, real_prune
    return seconds, len(opened) // runs, len(CALLS) // runs, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rows-per-value", type=int, default=2, help="rows holding each city (consecutive ids)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="sleep per storage call during the reads")
    args = parser.parse_args()
    base, build_s = build(args.groups, args.rows, args.rows_per_value)
    add_latency(args.latency_ms / 1000)
    figures: dict = {"groups": args.groups, "rows_per_group": args.rows, "rows_per_value": args.rows_per_value,
                     "runs": args.runs,
                     "latency_ms": args.latency_ms, "indexer_build_s": round(build_s, 3), "lookups": {}}
    rows = []
    for label, flt in (("city = v", [("city", "=", "city7")]),
                       ("city in (3 values)", [("city", "in", ["city7", "city123", "city42"])])):
        with_s, with_opened, with_calls, with_rows = lookup(base, flt, True, args.runs)
        without_s, without_opened, without_calls, without_rows = lookup(base, flt, False, args.runs)
        assert sorted(with_rows.column("id").to_pylist()) == sorted(without_rows.column("id").to_pylist())
        figures["lookups"][label] = {"rows": with_rows.num_rows, "slices_opened_with_index": with_opened,
                                     "slices_opened_without_index": without_opened,
                                     "storage_calls_with_index": with_calls, "storage_calls_without_index": without_calls,
                                     "with_index_s": round(with_s, 4),
                                     "without_index_s": round(without_s, 4)}
        print(f"{label}: {with_rows.num_rows} rows; slices opened {with_opened} with the index, "
              f"{without_opened} without; storage calls {with_calls} vs {without_calls}")
        rows.append((f"{label}: {with_opened} vs {without_opened} slices", with_s, without_s, "no index"))
    print(f"indexer (record index + secondary index): {build_s:.2f} s")
    print_table(rows)
    name = "secondary_index_lookup" + (f"_{args.latency_ms:g}ms" if args.latency_ms else "") + \
        (f"_{args.rows_per_value}_per_value" if args.rows_per_value != 2 else "")
    print(write_report(name, figures, rows))


if __name__ == "__main__":
    main()
