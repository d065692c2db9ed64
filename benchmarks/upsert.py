"""Benchmark (not a test): upsert 100k records (20% updates) into a 1M-record table.

COPY_ON_WRITE and MERGE_ON_READ through our Spark write path (``upsert_dataframe``, what
the upsert job runs), against deltalake (delta-rs) MERGE of the same data on the same
machine, and against the same merge in plain Spark SQL (a full outer join on the key and a
partitioned parquet rewrite: Spark's own cost for this work, without any of Hudi's).
The 1M-record initial load is timed too: our bulk_insert against delta-rs's write_deltalake
and against Spark's own partitioned parquet write (the floor of any Spark writer). Spark
jobs per upsert are counted.

    .venv/bin/python benchmarks/upsert.py [--rows 1000000] [--batch 100000] [--repeat 3] [--codec snappy]
    .venv/bin/python benchmarks/upsert.py --large [--repeat 1] [--codec snappy]
    .venv/bin/python benchmarks/upsert.py --rows 2000000 --batch 1000000 --path dataframe --in-process

``--path driver|dataframe`` forces the upsert's path (figures in ``out/upsert_<batch>_into_<rows>_<path>_path.*``);
``--in-process`` adds the same upsert by the in-process engine (``write_arrow``, no Spark) on copies of
the loaded tables, in CPU seconds against delta-rs's.

``--large``: 2M records (20% updates) upserted into 10M, the DataFrame path (a batch over
``hoodie.airflow.write.driver.batch.max.bytes``), figures in ``out/upsert_large.*``. Each
figure is the median of ``--repeat`` runs (ours on separate tables); the process tree's CPU
seconds (driver, JVM, Python workers) of each upsert are recorded beside its wall time, as
this machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import median_run, print_table, write_report  # noqa: E402


def process_tree_cpu() -> float:
    """CPU seconds so far of this process and its children (Spark's JVM, its Python workers)."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in [me] + me.children(recursive=True):
        try:
            c = proc.cpu_times()
            total += c.user + c.system + c.children_user + c.children_system
        except psutil.Error:
            pass
    return total


def make_rows(ids: np.ndarray, ts: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "ts": pa.array(np.full(n, ts), pa.int64()),
        "p": pa.array([f"p{i % 10}" for i in ids], pa.string()),
        "amount": pa.array(rng.random(n) * 1000, pa.float64()),
        "name": pa.array(np.char.add("name-", rng.integers(0, 1_000_000, n).astype(str)), pa.string()),
    })


def table_and_batch(rows: int, batch: int) -> tuple[pa.Table, pa.Table]:
    """The table's ``rows`` rows and an upsert of ``batch`` records, 20% of them updates of
    random existing keys (the issue's workload; every upsert benchmark uses the same)."""
    base_rows = make_rows(np.arange(rows), 1, 1)
    n_upd = batch // 5
    upd_ids = np.random.default_rng(2).choice(rows, n_upd, replace=False)
    new_ids = np.arange(rows, rows + batch - n_upd)
    return base_rows, make_rows(np.concatenate([upd_ids, new_ids]), 2, 3)


def parquet_source(rows: pa.Table, path: str, files: int = 8) -> str:
    """``rows`` as ``files`` parquet files under ``path`` (Spark reads them as as many partitions)."""
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    step = -(-rows.num_rows // files)
    for i in range(files):
        pq.write_table(rows.slice(i * step, step), os.path.join(path, f"part-{i}.parquet"))
    return path


def in_process_upsert(loaded: str, batch: pa.Table, cfg: Any, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of upserting ``batch`` into fresh copies of ``loaded`` by the
    in-process engine (``write_arrow``: the driver path's engine, without Spark around it)."""
    from airflow_hoodie.actions.write import write_arrow  # noqa: PLC0415

    runs = []
    for r in range(repeat):
        dst = f"{loaded}-in-process-{r}"
        shutil.copytree(loaded, dst)
        cpu, t0 = process_tree_cpu(), time.perf_counter()
        write_arrow(dst, batch, "upsert", cfg, "bench")
        runs.append((time.perf_counter() - t0, process_tree_cpu() - cpu))
        shutil.rmtree(dst)
    runs.sort()
    return runs[len(runs) // 2][0], sorted(c for _, c in runs)[len(runs) // 2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--dir", default="/tmp/hoodie-bench")
    ap.add_argument("--master", default="local[4]")
    ap.add_argument("--repeat", type=int, default=3, help="each figure is the median of this many runs")
    ap.add_argument("--codec", default="gzip", help="hoodie.parquet.compression.codec (Hudi's default gzip; delta-rs writes snappy)")
    ap.add_argument("--large", action="store_true", help="2M into 10M (sets --rows and --batch)")
    ap.add_argument("--path", choices=("auto", "driver", "dataframe"), default="auto",
                    help="the upsert's path: upsert_dataframe's choice by size, or forced (driver: the batch "
                         "collected as Arrow; dataframe: shuffles and Python workers)")
    ap.add_argument("--in-process", action="store_true",
                    help="also the same upsert by the in-process engine (write_arrow, no Spark), in CPU seconds")
    args = ap.parse_args()
    if args.large:
        args.rows, args.batch = 10_000_000, 2_000_000
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)
    base_rows, batch = table_and_batch(args.rows, args.batch)
    n_upd = args.batch // 5
    results: dict[str, float] = {}

    from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.spark.session import get_or_create_session
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe
    from airflow_hoodie.table.read import read_table
    from pyspark.sql import functions as F

    spark = get_or_create_session("hoodie-bench", master=args.master)
    # read from parquet, as a job's source is: createDataFrame of an Arrow table ships it inside
    # Spark tasks (the 21,736 KiB task Spark warned of came from here, not from the write path)
    base_df = spark.read.parquet(parquet_source(base_rows, os.path.join(args.dir, "source-base"))).cache()
    batch_df = spark.read.parquet(parquet_source(batch, os.path.join(args.dir, "source-batch"))).cache()
    base_df.count(); batch_df.count()
    # one small write first: the session's first jobs pay JIT and Python-worker start-up,
    # which a job's later writes do not (its SparkSession is already up when it writes)
    warm_cfg = HoodieConfig({"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p"})
    for op in ("bulk_insert", "upsert"):
        upsert_dataframe(spark, spark.createDataFrame(make_rows(np.arange(1000), 0, 0)),
                         os.path.join(args.dir, "warm-up"), op, warm_cfg, "warmup")
    for tt in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        cfg = HoodieConfig({"hoodie.table.type": tt, "hoodie.datasource.write.recordkey.field": "id",
                            "hoodie.datasource.write.precombine.field": "ts",
                            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "SIMPLE",
                            "hoodie.parquet.compression.codec": args.codec})
        if args.path != "auto":
            cfg = cfg.with_values({DRIVER_BATCH_MAX_BYTES: str(1 << 40) if args.path == "driver" else "0"})
        # initial load laid out one file per partition, as delta-rs writes it (Hudi's default
        # NONE keeps the 8 input partitions: 80 small files that every later upsert rewrites)
        load_cfg = cfg.with_values({"hoodie.bulkinsert.sort.mode": "PARTITION_PATH_REPARTITION",
                                    "hoodie.bulkinsert.shuffle.parallelism": "10"})
        paths = [os.path.join(args.dir, f"{tt.lower()}-{r}") for r in range(args.repeat)]
        results[f"hudi_{tt}_initial_load"], _ = median_run(
            lambda path: upsert_dataframe(spark, base_df, path, "bulk_insert", load_cfg, "bench"), paths)
        if args.in_process:
            shutil.copytree(paths[0], os.path.join(args.dir, f"{tt.lower()}-loaded"))

        def upsert(path: str) -> tuple[Any, int, float]:
            group = f"bench-upsert-{path}"
            spark.sparkContext.setJobGroup(group, "one upsert")
            cpu = process_tree_cpu()
            r = upsert_dataframe(spark, batch_df, path, "upsert", cfg, "bench")
            cpu = process_tree_cpu() - cpu
            spark.sparkContext.setJobGroup("bench", "other")
            return r, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group)), cpu

        results[f"hudi_{tt}"], (r, jobs, cpu) = median_run(upsert, paths)
        results[f"hudi_{tt}_spark_jobs"] = jobs
        results[f"hudi_{tt}_cpu_s"] = cpu
        assert r.updates == n_upd and r.inserts == args.batch - n_upd, r
        for path in paths:
            assert read_table(path, columns=["id"]).num_rows == args.rows + args.batch - n_upd

    if args.in_process:
        for tt in ("COPY_ON_WRITE", "MERGE_ON_READ"):
            results[f"in_process_{tt}"], results[f"in_process_{tt}_cpu_s"] = in_process_upsert(
                os.path.join(args.dir, f"{tt.lower()}-loaded"), batch, cfg.with_values({"hoodie.table.type": tt}),
                args.repeat)

    # Spark's own floor for the initial load: its partitioned parquet write of the same rows
    # laid out the same way (no keys, meta columns, bloom filters or timeline)
    results["spark_parquet_initial_load"], _ = median_run(
        lambda r: base_df.repartition(10, "p").write.partitionBy("p").option("compression", args.codec).parquet(
            os.path.join(args.dir, f"spark-parquet-{r}")), range(args.repeat))

    # The same upsert as plain Spark SQL: a full outer join of table and batch on the key and
    # every partition rewritten as parquet, with no record keys, meta columns, index, bloom
    # filters, small-file packing or timeline. Every file holds an update, so a COPY_ON_WRITE
    # upsert rewrites them all, as delta-rs's merge does: this is what Spark itself takes for
    # the rewrite on this machine (its plan shuffles the table too, which ours does not).
    spark_table = spark.read.parquet(os.path.join(args.dir, "source-base"))
    cols = [c for c in batch_df.columns if c not in ("id", "p")]

    def spark_merge(r: int) -> float:
        cpu = process_tree_cpu()
        t, b = spark_table.alias("t"), batch_df.alias("b")
        merged = t.join(b, ["id", "p"], "full_outer").select(
            "id", *[F.coalesce(F.col(f"b.{c}"), F.col(f"t.{c}")).alias(c) for c in cols], "p")
        merged.repartition("p").write.partitionBy("p").option("compression", args.codec).parquet(
            os.path.join(args.dir, f"spark-merge-{r}"))
        return process_tree_cpu() - cpu

    results["spark_sql_merge"], results["spark_sql_merge_cpu_s"] = median_run(spark_merge, range(args.repeat))
    assert spark.read.parquet(os.path.join(args.dir, "spark-merge-0")).count() == args.rows + args.batch - n_upd

    import deltalake
    dpaths = [os.path.join(args.dir, f"delta-{r}") for r in range(args.repeat)]
    results["delta_initial_load"], _ = median_run(
        lambda path: deltalake.write_deltalake(path, base_rows, partition_by=["p"]), dpaths)

    def delta_merge(path: str) -> float:
        cpu = process_tree_cpu()
        deltalake.DeltaTable(path).merge(batch, "t.id = s.id AND t.p = s.p", source_alias="s", target_alias="t") \
            .when_matched_update_all().when_not_matched_insert_all().execute()
        return process_tree_cpu() - cpu

    results["delta_merge"], results["delta_merge_cpu_s"] = median_run(delta_merge, dpaths)
    results["load_avg_1min"] = os.getloadavg()[0]
    results["ratio_cow_vs_delta"] = results["hudi_COPY_ON_WRITE"] / results["delta_merge"]
    results["ratio_mor_vs_delta"] = results["hudi_MERGE_ON_READ"] / results["delta_merge"]
    results["ratio_spark_sql_merge_vs_delta"] = results["spark_sql_merge"] / results["delta_merge"]
    results["codec"] = args.codec  # type: ignore[assignment]
    print(json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in results.items()}, indent=1))
    rows = [
        (f"bulk_insert {args.rows:,} rows, COW", results["hudi_COPY_ON_WRITE_initial_load"],
         results["delta_initial_load"], "delta-rs write_deltalake"),
        (f"bulk_insert {args.rows:,} rows, COW", results["hudi_COPY_ON_WRITE_initial_load"],
         results["spark_parquet_initial_load"], "Spark's partitioned df.write.parquet"),
        (f"upsert {args.batch:,} (20% updates) into {args.rows:,}, COW", results["hudi_COPY_ON_WRITE"],
         results["delta_merge"], "delta-rs merge"),
        (f"upsert {args.batch:,} (20% updates) into {args.rows:,}, MOR", results["hudi_MERGE_ON_READ"],
         results["delta_merge"], "delta-rs merge"),
        (f"Spark SQL merge, {args.batch:,} into {args.rows:,}", results["spark_sql_merge"],
         results["delta_merge"], "delta-rs merge"),
        (f"upsert {args.batch:,} (20% updates) into {args.rows:,}, COW", results["hudi_COPY_ON_WRITE"],
         results["spark_sql_merge"], "Spark SQL merge of the same"),
    ]
    if args.in_process:
        rows += [(f"in-process upsert {args.batch:,} into {args.rows:,}, {tt}, CPU", results[f"in_process_{tt}_cpu_s"],
                  results["delta_merge_cpu_s"], "delta-rs merge, CPU") for tt in ("COPY_ON_WRITE", "MERGE_ON_READ")]
    results["path"] = args.path  # type: ignore[assignment]
    print_table(rows)
    if args.large:
        rows = rows[2:]  # the initial load of 10M rows is not one of the figures
    name = "upsert_large" if args.large else "upsert" if (args.rows, args.batch) == (1_000_000, 100_000) \
        else f"upsert_{args.batch}_into_{args.rows}"
    if args.path != "auto":
        name += f"_{args.path}_path"
    print(f"figures: {write_report(name, results, rows)}")
    spark.stop()


if __name__ == "__main__":
    main()
