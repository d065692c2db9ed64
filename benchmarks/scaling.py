"""Benchmark (not a test): does the cost of an upsert follow the work or the table?

    .venv/bin/python benchmarks/scaling.py [--sizes 1000000 10000000] [--batch 100000]

For each table size, bulk-inserts keys ordered by time (zero-padded sequence numbers, 10
partitions by time range), then upserts the same-shaped batch: 20% updates of the newest
keys and 80% new keys after them, with the BLOOM index (range pruning on). The batch
touches the same file groups whatever the table size, so the upsert should take about the
same time. Peak RSS of the Spark Python workers during each upsert is sampled too (it
should follow the file-group size, not the table).

    .venv/bin/python benchmarks/scaling.py --rss-batches 200000 2000000 5000000 [--sizes 2000000]

instead measures memory per batch size, as an Airflow task meets it: the table of
``--sizes[0]`` rows is loaded once (in a process of its own), then each batch (parquet files,
read as a job reads its source) is upserted on the DataFrame path
(``hoodie.airflow.write.driver.batch.max.bytes=0``) by a fresh process, with its own JVM and
Python workers, into a fresh copy of that table. During the upsert only, it samples the peak
RSS of the Spark Python workers (the largest one, and all together), of Spark's JVM (driver
and local executor) and of the driver's Python process; the JVM heap committed at the end
is reported too. A write task holds one file group's records (at most
``hoodie.copyonwrite.insert.split.size`` new records, or an update group's), so the peaks
should follow the file-group size, not the batch. The curve and the ratios against the
smallest batch go to ``out/scaling_rss.*``. ``--file-group-mb 8 --split-size 150000`` gives the
upserts a smaller ``hoodie.parquet.max.file.size`` and insert split (``out/scaling_rss_8mb.*``):
with Hudi's 120 MB a file group holds about 2M of these rows and an insert split 500k. Each
peak is also charged to the Spark stages running at the time (``peak_rss_mb_by_stage``).
``--driver-memory 1g`` bounds the measured JVMs' heap (local mode: driver and executor are
one JVM), to see whether a batch needs the heap it takes (``out/scaling_rss_8mb_heap1g.*``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402


def _rows(ids: np.ndarray, total: int, ts: int) -> pa.Table:
    arr = pa.array(ids, pa.int64())
    n = len(ids)
    return pa.table({
        "id": pc.utf8_lpad(pc.cast(arr, pa.string()), 12, "0"),
        "p": pc.cast(pc.min_element_wise(pc.divide(arr, max(total // 10, 1)), 9), pa.string()),
        "ts": pa.array(np.full(n, ts), pa.int64()),
        "amount": pa.array(np.random.default_rng(ts).random(n) * 1000),
    })


class _PeakWorkerRss:
    """Samples the resident memory of this process's own PySpark Python workers and Spark
    JVM (other Spark sessions on a shared machine are not counted), and of this driver
    process (small batches and small file work stay in the driver). With ``spark``, each
    sample is also charged to the stages running then, so a peak can be traced to its step."""

    def __init__(self, spark: Any = None) -> None:
        self.peak = 0
        self.driver_peak = 0
        self.jvm_peak = 0
        self.workers_total_peak = 0
        self.stage_peaks: dict[str, dict[str, float]] = {}
        #: when each stage was first and last seen running (to the sampling interval)
        self.stage_times: dict[str, list[float]] = {}
        self._tracker = spark.sparkContext.statusTracker() if spark is not None else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _stages(self) -> list[str]:
        if self._tracker is None:
            return []
        out = []
        for sid in self._tracker.getActiveStageIds():
            info = self._tracker.getStageInfo(sid)
            out.append(f"{sid} {info.name.split(' at ')[0] if info else ''} ({info.numTasks if info else '?'} tasks)")
        return out

    def _run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.is_set():
            self.driver_peak = max(self.driver_peak, me.memory_info().rss)
            worker = jvm = total = 0
            for child in me.children(recursive=True):
                try:
                    if "java" in child.name():
                        jvm = max(jvm, child.memory_info().rss)
                    elif "pyspark.daemon" in " ".join(child.cmdline()) or "pyspark.worker" in " ".join(child.cmdline()):
                        rss = child.memory_info().rss
                        worker, total = max(worker, rss), total + rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, worker)
            self.jvm_peak = max(self.jvm_peak, jvm)
            self.workers_total_peak = max(self.workers_total_peak, total)
            try:
                now = time.perf_counter()
                for stage in self._stages():
                    self.stage_times.setdefault(stage, [now, now])[1] = now
                    was = self.stage_peaks.get(stage, {"worker_mb": 0, "jvm_mb": 0})
                    self.stage_peaks[stage] = {"worker_mb": max(was["worker_mb"], round(worker / 2**20, 1)),
                                               "jvm_mb": max(was["jvm_mb"], round(jvm / 2**20, 1))}
            except Exception:  # noqa: BLE001 - the session is stopping
                pass
            time.sleep(0.05)

    def __enter__(self) -> "_PeakWorkerRss":
        import psutil

        # the JVM keeps what it once used (the load before, the cached batch): its growth
        # during the write is the write's own
        self.jvm_start = max((c.memory_info().rss for c in psutil.Process().children(recursive=True)
                              if "java" in c.name()), default=0)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--dir", default="/tmp/hoodie-scaling")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rss-batches", type=int, nargs="+", help="compare peak RSS of these batch sizes instead")
    ap.add_argument("--file-group-mb", type=int, default=0,
                    help="with --rss-batches: hoodie.parquet.max.file.size of the upserts (0: Hudi's 120 MB)")
    ap.add_argument("--split-size", type=int, default=0,
                    help="with --rss-batches: hoodie.copyonwrite.insert.split.size of the upserts (0: 500,000)")
    ap.add_argument("--driver-memory", default="",
                    help="with --rss-batches: spark.driver.memory (the local JVM's heap) of the measured processes")
    ap.add_argument("--rss-child", choices=["load", "upsert"], help=argparse.SUPPRESS)
    ap.add_argument("--table", help=argparse.SUPPRESS)
    ap.add_argument("--batch-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args)
        return
    if args.rss_batches:
        rss_by_batch(args)
        return

    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.spark.session import get_or_create_session
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe
    from airflow_hoodie.table.read import read_table

    spark = get_or_create_session("hoodie-scaling", master=args.master)
    figures: dict[str, dict[str, float]] = {}
    for size in args.sizes:
        path = os.path.join(args.dir, f"t{size}")
        shutil.rmtree(path, ignore_errors=True)
        cfg = HoodieConfig({"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
                            "hoodie.datasource.write.precombine.field": "ts",
                            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "BLOOM",
                            "hoodie.bloom.index.prune.by.ranges": "true",
                            "hoodie.parquet.compression.codec": "snappy"})
        t0 = time.perf_counter()
        step = 2_000_000
        for start in range(0, size, step):
            chunk = _rows(np.arange(start, min(size, start + step)), size, 1)
            upsert_dataframe(spark, spark.createDataFrame(chunk), path, "bulk_insert", cfg, "scaling")
        load_s = time.perf_counter() - t0
        n_upd = args.batch // 5
        result, upsert_s, rss = _measured_upsert(spark, path, size, args.batch, cfg)
        # a services run after it: clean the versions the upsert replaced (the same file groups at both
        # sizes; KEEP_LATEST_FILE_VERSIONS=1 so the replaced version goes at once)
        from airflow_hoodie.actions.clean import run_clean
        from airflow_hoodie.spark.executor import SparkExecutor
        from airflow_hoodie.table.hoodie_table import HoodieTable

        t0 = time.perf_counter()
        cleaned = run_clean(HoodieTable.load(path), cfg.with_values({"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
                                                                   "hoodie.cleaner.fileversions.retained": "1"}),
                            SparkExecutor(spark))
        clean_s = time.perf_counter() - t0
        rows = read_table(path, columns=["id"]).num_rows
        assert rows == size + args.batch - n_upd, rows
        figures[str(size)] = {"bulk_insert_s": round(load_s, 2), "upsert_s": round(upsert_s, 2),
                              "files_written": result.files_written, "clean_s": round(clean_s, 3),
                              "files_cleaned": int(cleaned.get("files_deleted") or 0),
                              "peak_worker_rss_mb": round(rss.peak / 2**20, 1),
                              "peak_driver_rss_mb": round(rss.driver_peak / 2**20, 1)}
        print(size, figures[str(size)], flush=True)
        shutil.rmtree(path, ignore_errors=True)
    small, big = (str(s) for s in (args.sizes[0], args.sizes[-1]))
    rows = [(f"upsert {args.batch:,} into {int(big):,} rows vs into {int(small):,}", figures[big]["upsert_s"],
             figures[small]["upsert_s"], f"same batch, {int(small):,}-row table"),
            (f"clean after it, {int(big):,} rows vs {int(small):,}", figures[big]["clean_s"],
             figures[small]["clean_s"], f"same clean, {int(small):,}-row table")]
    print_table(rows)
    print(f"figures: {write_report('scaling', figures, rows)}")
    spark.stop()


def _measured_upsert(spark, path: str, size: int, batch: int, cfg) -> tuple[Any, float, "_PeakWorkerRss"]:
    """An upsert of ``batch`` records (20% updates of the table's last keys) into the
    ``size``-row table at ``path``; the batch is cached first, so the time and the peak RSS
    are the write's alone."""
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    n_upd = batch // 5
    ids = np.concatenate([np.arange(size - n_upd, size), np.arange(size, size + batch - n_upd)])
    batch_df = spark.createDataFrame(_rows(ids, size, 2)).cache()
    batch_df.count()
    with _PeakWorkerRss(spark) as rss:
        t0 = time.perf_counter()
        result = upsert_dataframe(spark, batch_df, path, "upsert", cfg, "scaling")
        upsert_s = time.perf_counter() - t0
    assert (result.updates, result.inserts) == (n_upd, batch - n_upd), result
    batch_df.unpersist()
    return result, upsert_s, rss


def _rss_config(args: argparse.Namespace) -> tuple[Any, Any]:
    """The load's config (Hudi's defaults, DataFrame path) and the upserts' (the same bound
    on a file group for every batch)."""
    from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
    from airflow_hoodie.config import HoodieConfig

    cfg = HoodieConfig({"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
                        "hoodie.datasource.write.precombine.field": "ts",
                        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "BLOOM",
                        "hoodie.parquet.compression.codec": "snappy", DRIVER_BATCH_MAX_BYTES: "0"})
    return cfg, cfg.with_values({k: str(v) for k, v in (("hoodie.parquet.max.file.size", args.file_group_mb << 20),
                                                        ("hoodie.copyonwrite.insert.split.size", args.split_size))
                                 if v})


def _write_batch_files(out: str, size: int, batch: int) -> None:
    """The upsert's batch (20% updates of the table's last keys, 80% new keys) as parquet
    files of 200k rows, read by the measured process as a job reads its source."""
    import pyarrow.parquet as pq

    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    n_upd = batch // 5
    ids = np.concatenate([np.arange(size - n_upd, size), np.arange(size, size + batch - n_upd)])
    for i, start in enumerate(range(0, batch, 200_000)):
        pq.write_table(_rows(ids[start:start + 200_000], size, 2), os.path.join(out, f"part-{i:05d}.parquet"))


def _jvm_heap(spark: Any) -> dict[str, float]:
    """The JVM's heap as it ends the upsert: committed (what the RSS holds) and its limit."""
    jvm = spark._jvm
    rt = jvm.java.lang.Runtime.getRuntime()
    gcs = list(jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans())
    return {"jvm_heap_committed_mb": round(rt.totalMemory() / 2**20, 1),
            "jvm_heap_max_mb": round(rt.maxMemory() / 2**20, 1),
            "jvm_gc_s": round(sum(g.getCollectionTime() for g in gcs) / 1000, 2),
            "jvm_gcs": sum(g.getCollectionCount() for g in gcs)}


def rss_child(args: argparse.Namespace) -> None:
    """One measured process: ``--rss-child load`` loads the table; ``--rss-child upsert``
    upserts the batch files into it, sampling peak RSS during the upsert only. Prints one
    JSON line."""
    import json

    from airflow_hoodie.spark.dataframe_write import upsert_dataframe
    from airflow_hoodie.spark.session import get_or_create_session

    cfg, upsert_cfg = _rss_config(args)
    spark = get_or_create_session("hoodie-scaling-rss", master=args.master,
                                  conf={"spark.driver.memory": args.driver_memory} if args.driver_memory else None)
    size, path = args.sizes[0], args.table
    if args.rss_child == "load":
        shutil.rmtree(path, ignore_errors=True)
        for start in range(0, size, 2_000_000):
            chunk = _rows(np.arange(start, min(size, start + 2_000_000)), size, 1)
            upsert_dataframe(spark, spark.createDataFrame(chunk), path, "bulk_insert", cfg, "scaling")
        spark.stop()
        return
    batch = args.rss_batches[0]
    df = spark.read.parquet(args.batch_dir)
    with _PeakWorkerRss(spark) as rss:
        t0 = time.perf_counter()
        result = upsert_dataframe(spark, df, path, "upsert", upsert_cfg, "scaling")
        upsert_s = time.perf_counter() - t0
    assert (result.updates, result.inserts) == (batch // 5, batch - batch // 5), result
    print(json.dumps({"upsert_s": round(upsert_s, 2), "files_written": result.files_written,
                      "peak_worker_rss_mb": round(rss.peak / 2**20, 1),
                      "peak_workers_total_rss_mb": round(rss.workers_total_peak / 2**20, 1),
                      "peak_jvm_rss_mb": round(rss.jvm_peak / 2**20, 1),
                      "jvm_rss_mb_before_upsert": round(rss.jvm_start / 2**20, 1),
                      "peak_driver_rss_mb": round(rss.driver_peak / 2**20, 1), **_jvm_heap(spark),
                      "peak_rss_mb_by_stage": rss.stage_peaks,
                      "stage_s": {k: round(b - a, 2) for k, (a, b) in rss.stage_times.items()}}), flush=True)
    spark.stop()


def _child(args: argparse.Namespace, role: str, *extra: str) -> dict[str, Any]:
    """Run a measured step in a fresh process (its own JVM and Python workers), as each
    Airflow task is a fresh spark-submit."""
    import json
    import subprocess

    cmd = [sys.executable, os.path.abspath(__file__), "--rss-child", role, "--master", args.master,
           "--sizes", str(args.sizes[0]), "--file-group-mb", str(args.file_group_mb),
           "--split-size", str(args.split_size), "--driver-memory", args.driver_memory, *extra]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def rss_by_batch(args: argparse.Namespace) -> None:
    """Peak RSS of a DataFrame-path upsert per batch size: the table is loaded once (in its
    own process), and each batch is upserted by a fresh process into a fresh copy of it."""
    size = args.sizes[0]
    loaded = os.path.join(args.dir, "rss-loaded")
    _child(args, "load", "--table", loaded)
    figures: dict[str, Any] = {"table_rows": size, "file_group_mb": args.file_group_mb or 120,
                               "split_size": args.split_size or 500_000, "master": args.master,
                               "driver_memory": args.driver_memory or "2g"}
    for batch in args.rss_batches:
        path, batch_dir = os.path.join(args.dir, f"rss-{batch}"), os.path.join(args.dir, f"rss-batch-{batch}")
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(loaded, path)
        _write_batch_files(batch_dir, size, batch)
        load = os.getloadavg()[0]
        figures[str(batch)] = {**_child(args, "upsert", "--table", path, "--batch-dir", batch_dir,
                                        "--rss-batches", str(batch)),
                               "load_avg_1min_before": round(load, 2), "load_avg_1min_after": round(os.getloadavg()[0], 2)}
        print(batch, figures[str(batch)], flush=True)
        shutil.rmtree(path, ignore_errors=True)
        shutil.rmtree(batch_dir, ignore_errors=True)
    shutil.rmtree(loaded, ignore_errors=True)
    _rss_report(args, figures)


_RSS_KEYS = (("peak_worker_rss_mb", "Python worker"), ("peak_jvm_rss_mb", "JVM"), ("peak_driver_rss_mb", "driver"))


def _rss_report(args: argparse.Namespace, figures: dict[str, Any]) -> None:
    """The curve and each batch's ratios against the smallest, printed and saved (JSON, PNG)."""
    small = str(args.rss_batches[0])
    print("| batch | Python worker | JVM | driver | JVM heap committed | upsert |\n|---|---|---|---|---|---|")
    rows = []
    for b in (str(x) for x in args.rss_batches):
        f = figures[b]
        f["ratio_vs_smallest"] = {k: round(f[k] / figures[small][k], 2) for k, _ in _RSS_KEYS}
        print(f"| {int(b):,} | " + " | ".join(f"{f[k]} MB ({f['ratio_vs_smallest'][k]}x)" for k, _ in _RSS_KEYS)
              + f" | {f['jvm_heap_committed_mb']} MB | {f['upsert_s']} s |")
        if b != small:
            rows += [(f"peak {label} RSS (MB/1000), {int(b):,} batch", f[k] / 1000, figures[small][k] / 1000,
                      f"{int(small):,} batch") for k, label in _RSS_KEYS]
    name = f"scaling_rss_{args.file_group_mb}mb" if args.file_group_mb else "scaling_rss"
    name += f"_heap{args.driver_memory}" if args.driver_memory else ""
    print(f"figures: {write_report(name, figures, rows)}")


if __name__ == "__main__":
    main()
