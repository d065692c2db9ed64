"""Benchmark (not a test): where the driver path stops paying, by batch size.

    .venv/bin/python benchmarks/crossover.py [--rows 2000000] [--batches 100000 300000 1000000 2000000]
        [--repeat 3] [--master local[2]] [--table-type COPY_ON_WRITE]

``upsert_dataframe`` picks the driver path (the batch collected as Arrow and written by the
in-process engine) when Spark's size estimate of the batch is at most
``hoodie.airflow.write.driver.batch.max.bytes``, else the DataFrame path (shuffles, Python
workers). This upserts each batch size (20% updates, benchmarks/upsert.py's rows, read from
parquet as a job's source is) into fresh copies of one ``--rows``-row table, once forced down
each path, alternating: the driver path as the keys' defaults leave its file work (Spark tasks
once the files it reads pass ``hoodie.airflow.write.driver.files.max.bytes``), the driver path
with all file work in the driver's process, and the DataFrame path. Reported per size: wall
and process-tree CPU medians of both paths, Spark's size estimate of the batch (the figure
the key is compared with), the Arrow bytes the driver holds, and the driver's peak RSS. The
crossover is the estimate where the DataFrame path starts to win on wall time; the key's
default comes from it. Writes ``out/crossover.json`` / ``.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import write_report  # noqa: E402
from benchmarks.upsert import parquet_source, process_tree_cpu, table_and_batch  # noqa: E402


class PeakRss:
    """This process's peak resident set while it runs (sampled every 20 ms)."""

    def __init__(self) -> None:
        import psutil  # noqa: PLC0415

        self.proc, self.peak, self._stop = psutil.Process(), 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.02)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--batches", type=int, nargs="+", default=[100_000, 300_000, 1_000_000, 2_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--table-type", default="COPY_ON_WRITE")
    ap.add_argument("--dir", default="/tmp/hoodie-crossover")
    args = ap.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)

    from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES, DRIVER_FILES_MAX_BYTES  # noqa: PLC0415
    from airflow_hoodie.config import HoodieConfig  # noqa: PLC0415
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe  # noqa: PLC0415
    from airflow_hoodie.spark.session import get_or_create_session  # noqa: PLC0415

    spark = get_or_create_session("hoodie-crossover", master=args.master)
    cfg = HoodieConfig({"hoodie.table.type": args.table_type, "hoodie.datasource.write.recordkey.field": "id",
                        "hoodie.datasource.write.precombine.field": "ts",
                        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "SIMPLE",
                        "hoodie.parquet.compression.codec": "snappy"})
    base_rows, _ = table_and_batch(args.rows, 1)
    base_df = spark.read.parquet(parquet_source(base_rows, os.path.join(args.dir, "source-base")))
    table = os.path.join(args.dir, "table")
    upsert_dataframe(spark, base_df, table, "bulk_insert",
                     cfg.with_values({"hoodie.bulkinsert.sort.mode": "PARTITION_PATH_REPARTITION",
                                      "hoodie.bulkinsert.shuffle.parallelism": "10"}), "bench")
    paths = {"driver": cfg.with_values({DRIVER_BATCH_MAX_BYTES: str(1 << 40)}),
             "driver_in_process": cfg.with_values({DRIVER_BATCH_MAX_BYTES: str(1 << 40),
                                                   DRIVER_FILES_MAX_BYTES: str(1 << 40)}),
             "dataframe": cfg.with_values({DRIVER_BATCH_MAX_BYTES: "0"})}
    # warm both paths once: a job's session has its JIT and Python workers warm by its write
    warm = os.path.join(args.dir, "warm")
    _, warm_batch = table_and_batch(args.rows, 20_000)
    warm_df = spark.read.parquet(parquet_source(warm_batch, os.path.join(args.dir, "source-warm")))
    for name, pcfg in paths.items():
        shutil.copytree(table, warm + name)
        upsert_dataframe(spark, warm_df, warm + name, "upsert", pcfg)

    figures: dict[str, dict[str, float]] = {}
    for n in args.batches:
        _, batch = table_and_batch(args.rows, n)
        df = spark.read.parquet(parquet_source(batch, os.path.join(args.dir, f"source-{n}")))
        estimate = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
        runs: dict[str, list[tuple[float, float, int]]] = {k: [] for k in paths}
        for r in range(args.repeat):
            for name, pcfg in paths.items():
                dst = os.path.join(args.dir, f"run-{n}-{name}-{r}")
                shutil.copytree(table, dst)
                cpu, t0 = process_tree_cpu(), time.perf_counter()
                with PeakRss() as rss:
                    res = upsert_dataframe(spark, df, dst, "upsert", pcfg)
                runs[name].append((time.perf_counter() - t0, process_tree_cpu() - cpu, rss.peak))
                assert res.updates == n // 5 and res.inserts == n - n // 5, res
                shutil.rmtree(dst)
        fig = {"spark_estimate_bytes": estimate, "arrow_bytes": batch.nbytes}
        for name, rs in runs.items():
            fig[f"{name}_s"] = statistics.median(r[0] for r in rs)
            fig[f"{name}_cpu_s"] = statistics.median(r[1] for r in rs)
            fig[f"{name}_peak_driver_rss_mb"] = max(r[2] for r in rs) / 2**20
        figures[str(n)] = fig
        print(n, json.dumps({k: round(v, 2) for k, v in fig.items()}), flush=True)
    wins = [int(n) for n, f in figures.items() if f["dataframe_s"] < min(f["driver_s"], f["driver_in_process_s"])]
    crossover = {"first_batch_where_dataframe_wins": min(wins) if wins else None,
                 "its_spark_estimate_bytes": figures[str(min(wins))]["spark_estimate_bytes"] if wins else None,
                 "master": args.master, "rows": args.rows, "table_type": args.table_type,
                 "load_avg_1m": os.getloadavg()[0]}
    print(json.dumps(crossover))
    rows = [(f"upsert {int(n):,} into {args.rows:,}, driver path{how}", f[key], f["dataframe_s"], "DataFrame path")
            for n, f in figures.items()
            for how, key in (("", "driver_s"), (", file work in process", "driver_in_process_s"))]
    print(f"figures: {write_report('crossover', {'batches': figures, **crossover}, rows)}")
    spark.stop()


if __name__ == "__main__":
    main()
