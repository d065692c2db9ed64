"""Benchmark (not a test): the simple bucket index against the SIMPLE index, upserting 100k
records (20% updates) into a 1M-record COPY_ON_WRITE table through the in-process write flow
(``write_arrow``: no Spark start-up or shuffles to blur the tagging cost).

The SIMPLE index reads the keys of every file group of the batch's partitions to tag the
batch; the bucket index reads none (a key's bucket is a hash, its group a file-id prefix).
Beside each upsert's wall and CPU time, the tagging step alone is timed: hashing the batch's
keys into buckets, and the SIMPLE lookup over the table's files.

    .venv/bin/python benchmarks/bucket_index.py [--rows 1000000] [--batch 100000] [--buckets 4] [--repeat 3]

Figures go to ``out/bucket_index.json`` / ``.png`` (``out/bucket_index_<batch>_into_<rows>.*``
at other sizes). The same workload as ``benchmarks/upsert.py`` (10 partitions, int64 keys).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import median_run, print_table, write_report
from benchmarks.upsert import table_and_batch


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def tagging_times(path: str, simple_conf: dict[str, str], batch: pa.Table, buckets: int) -> dict[str, float]:
    """The tagging step alone: the batch's keys hashed into buckets (mean of 5), and the
    SIMPLE index's key lookup of the same batch over the SIMPLE table at ``path``."""
    from airflow_hoodie.actions.bucketing import existing_files
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.actions.write import lookup_existing_keys
    from airflow_hoodie.actions.write_client import WriteClient
    from airflow_hoodie.actions.write_config import with_table_settings
    from airflow_hoodie.actions.write_records import prepare_batch
    from airflow_hoodie.actions.write_settings import WriteRequest, WriteSettings
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.table.bucket_index import bucket_ids

    out: dict[str, float] = {}
    keys = batch.column("id").cast("string")
    t0 = time.perf_counter()
    for _ in range(5):
        bucket_ids(keys, ["id"], buckets, "scan")
    out["bucket_hash_batch_s"] = (time.perf_counter() - t0) / 5
    cfg = HoodieConfig(simple_conf)
    client = WriteClient(path, cfg, None, None, WriteRequest.from_config(cfg, "upsert"))
    client.load_table()
    settings = WriteSettings.from_config(with_table_settings(client.effective_config(), client.table.config),
                                         client.request_for("upsert"))
    prepared = prepare_batch(batch, dict(settings.key_generator), "upsert", list(settings.required_ordering_fields))
    files = existing_files(client.table, sorted(set(prepared.column("_hoodie_partition_path").to_pylist())))
    t0 = time.perf_counter()
    lookup_existing_keys(client, prepared, files, settings, LocalExecutor())
    out["simple_lookup_batch_s"] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--buckets", type=int, default=4, help="hoodie.bucket.index.num.buckets (per partition)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/hoodie-bench-bucket")
    args = ap.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)

    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.table.read import read_table

    base_rows, batch = table_and_batch(args.rows, args.batch)
    n_upd = args.batch // 5
    common = {"hoodie.table.name": "bench", "hoodie.datasource.write.recordkey.field": "id",
              "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
              "hoodie.parquet.compression.codec": "snappy"}
    configs = {"SIMPLE": {**common, "hoodie.index.type": "SIMPLE"},
               "BUCKET": {**common, "hoodie.index.type": "BUCKET",
                          "hoodie.bucket.index.num.buckets": str(args.buckets)}}
    results: dict[str, float] = {}
    for index, conf in configs.items():
        paths = [os.path.join(args.dir, f"{index.lower()}-{r}") for r in range(args.repeat)]
        results[f"{index}_initial_load"], _ = median_run(
            lambda path, conf=conf: write_arrow(path, base_rows, "bulk_insert", conf), paths)

        def upsert(path: str, conf: dict = conf) -> tuple[object, float]:
            cpu = _cpu()
            r = write_arrow(path, batch, "upsert", conf, executor=LocalExecutor())
            return r, _cpu() - cpu

        results[f"{index}_upsert"], (r, cpu) = median_run(upsert, paths)
        results[f"{index}_upsert_cpu_s"] = cpu
        results[f"{index}_files_written"] = r.files_written  # type: ignore[attr-defined]
        assert r.updates == n_upd and r.inserts == args.batch - n_upd, r  # type: ignore[attr-defined]
        for path in paths:
            assert read_table(path, columns=["id"]).num_rows == args.rows + args.batch - n_upd

    results.update(tagging_times(os.path.join(args.dir, "simple-0"), configs["SIMPLE"], batch, args.buckets))
    results["load_avg_1min"] = os.getloadavg()[0]
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in results.items()}, indent=1))
    work = f"{args.batch:,} (20% updates) into {args.rows:,}, COW"
    rows = [(f"BUCKET upsert {work}", results["BUCKET_upsert"], results["SIMPLE_upsert"], "SIMPLE index upsert"),
            (f"tagging {args.batch:,} keys", results["bucket_hash_batch_s"], results["simple_lookup_batch_s"],
             "SIMPLE key lookup"),
            (f"bulk_insert {args.rows:,}", results["BUCKET_initial_load"], results["SIMPLE_initial_load"],
             "SIMPLE (row order) load")]
    print_table(rows)
    name = "bucket_index" if (args.rows, args.batch) == (1_000_000, 100_000) \
        else f"bucket_index_{args.batch}_into_{args.rows}"
    if args.buckets != 4:  # the default's layout: 4 groups per partition, SIMPLE's 1
        name += f"_{args.buckets}_buckets"
    print(f"figures: {write_report(name, results, rows)}")


if __name__ == "__main__":
    main()
