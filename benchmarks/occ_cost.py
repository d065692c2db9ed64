"""Benchmark (not a test): what optimistic concurrency control costs a write.

    .venv/bin/python benchmarks/occ_cost.py [--rows 1000000] [--batch 100000] [--repeat 3] [--spark]

Upserts the same 100k batch (20% updates) into copies of one 1M-row COPY_ON_WRITE table,
in-process (Arrow engine), with hoodie.write.concurrency.mode=SINGLE_WRITER and with
OPTIMISTIC_CONCURRENCY_CONTROL + the file-system lock; medians compared. Then the parts
OCC adds, timed alone: taking and releasing the lock, and the conflict check at commit.
With ``--spark`` the same comparison through the Spark engine (spark/upsert.py,
``--master``, default local[2]).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402

OCC = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
       "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"}


def _rows(ids: np.ndarray, ts: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "ts": pa.array(np.full(len(ids), ts), pa.int64()),
                     "p": pa.array([f"p{i % 10}" for i in ids]), "amount": pa.array(np.random.default_rng(ts).random(len(ids)))})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spark", action="store_true", help="also time the Spark engine")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()

    from airflow_hoodie.actions.transaction.conflict_resolution import TimelineSnapshot, check_no_conflict
    from airflow_hoodie.actions.transaction.transaction_manager import TransactionManager
    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.settings.lock import LockSettings
    from airflow_hoodie.table.hoodie_table import HoodieTable
    from airflow_hoodie.table.timeline.instant import Instant, State

    work = tempfile.mkdtemp(prefix="occ-bench-")
    base = os.path.join(work, "base")
    cfg = {"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.parquet.compression.codec": "snappy"}
    write_arrow(base, _rows(np.arange(args.rows), 1), "bulk_insert", cfg, table_name="bench")
    n_upd = args.batch // 5
    upd = np.random.default_rng(2).choice(args.rows, n_upd, replace=False)
    batch = _rows(np.concatenate([upd, np.arange(args.rows, args.rows + args.batch - n_upd)]), 2)

    def upsert(settings: dict[str, str], k: int) -> float:
        path = os.path.join(work, f"run{k}")
        shutil.copytree(base, path)
        t0 = time.perf_counter()
        write_arrow(path, batch, "upsert", {**cfg, **settings})
        elapsed = time.perf_counter() - t0
        shutil.rmtree(path)
        return elapsed

    single, occ = _alternating(upsert, args.repeat)

    table = HoodieTable.load(base)
    tm = TransactionManager(LockSettings.from_config(HoodieConfig(OCC)), base, table.storage, table.base_path)
    t0 = time.perf_counter()
    for _ in range(200):
        with tm.transaction("bench"):
            pass
    lock_ms = (time.perf_counter() - t0) / 200 * 1000
    snapshot = TimelineSnapshot.of(table.timeline)
    own = Instant("99991231235959999", "commit", State.INFLIGHT)
    groups = {("p1", "f")}
    t0 = time.perf_counter()
    for _ in range(50):
        check_no_conflict(table.reload_timeline(), own, groups, snapshot)
    check_ms = (time.perf_counter() - t0) / 50 * 1000

    s_med, o_med = statistics.median(single), statistics.median(occ)
    rows = [(f"upsert {args.batch:,} into {args.rows:,} (COW, in-process): OCC + file-system lock", o_med, s_med,
             "SINGLE_WRITER")]
    figures = {"single_writer_s": single, "occ_s": occ, "lock_ms": round(lock_ms, 3),
               "conflict_check_ms": round(check_ms, 3)}
    if args.spark:
        spark_single, spark_occ = _spark_runs(args, work, cfg, batch)
        figures.update(spark_single_writer_s=spark_single, spark_occ_s=spark_occ, spark_master=args.master)
        rows.append((f"upsert {args.batch:,} into {args.rows:,} (COW, Spark {args.master}): OCC + file-system lock",
                     statistics.median(spark_occ), statistics.median(spark_single), "SINGLE_WRITER"))
    print_table(rows)
    print(f"lock take+release: {lock_ms:.2f} ms; conflict check at commit (reload + compare): {check_ms:.2f} ms")
    print(f"figures: {write_report('occ_cost', figures, rows)}")
    shutil.rmtree(work)


def _alternating(run: Any, repeat: int) -> tuple[list[float], list[float]]:
    """SINGLE_WRITER and OCC runs taken in turn, so drift on a shared machine (other
    jobs, a JVM still warming up) falls on both alike: (SINGLE_WRITER times, OCC times)."""
    single: list[float] = []
    occ: list[float] = []
    for k in range(repeat):
        single.append(run({}, k))
        occ.append(run(OCC, 100 + k))
    return single, occ


def _spark_runs(args: argparse.Namespace, work: str, cfg: dict[str, str],
                batch: pa.Table) -> tuple[list[float], list[float]]:
    """The same upsert through spark/upsert.py: (SINGLE_WRITER times, OCC times)."""
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.spark.session import get_or_create_session
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    spark = get_or_create_session("hoodie-occ-bench", master=args.master)
    try:
        base = os.path.join(work, "spark-base")
        base_df = spark.createDataFrame(_rows(np.arange(args.rows), 1).to_pandas())
        upsert_dataframe(spark, base_df, base, "bulk_insert", HoodieConfig(cfg), "bench")
        batch_df = spark.createDataFrame(batch.to_pandas()).cache()
        batch_df.count()

        def run(settings: dict[str, str], k: int) -> float:
            path = os.path.join(work, f"spark-run{k}")
            shutil.copytree(base, path)
            t0 = time.perf_counter()
            upsert_dataframe(spark, batch_df, path, "upsert", HoodieConfig({**cfg, **settings}), "bench")
            elapsed = time.perf_counter() - t0
            shutil.rmtree(path)
            return elapsed

        run({}, 999)  # warm-up: the JVM's first job compiles the code paths
        return _alternating(run, args.repeat)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
