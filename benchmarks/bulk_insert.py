"""Benchmark (not a test): bulk_insert of 1M rows against Spark's own partitioned parquet
write of the same rows, the floor of any Spark writer (no keys, meta columns, bloom filters
or timeline). The same rows, layout and peer as the initial load of ``benchmarks/upsert.py``,
without its upserts, so a change to the row writer is measured in a minute.

    .venv/bin/python benchmarks/bulk_insert.py [--rows 1000000] [--repeat 3] [--codec snappy]

The two writers alternate (ours, Spark's, ours, ...) in one session, so both see the same
load on a shared machine; medians of wall seconds are compared, with the CPU seconds of
the whole process tree (driver, Spark's JVM, its Python workers: the figure the load on a
shared machine distorts least), split by process, and the Spark jobs of each write with
their durations.

``--handoff-floor`` also times, in the same alternation, a no-op ``mapInArrow`` over the
same repartition: the rows travel from Spark's JVM to its Python workers and nothing is
written. That is the cost any writer running on Spark's Python workers pays before its
first byte, and Spark's own writer does not (its parquet encoding runs in the JVM), so the
figures say how much of the gap is the handoff and how much is our write.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402
from benchmarks.upsert import make_rows  # noqa: E402


CPU_PARTS = ("driver", "jvm", "python_workers")


def _tree_cpu() -> dict[str, float]:
    """CPU seconds of this process (the driver), Spark's JVM and its Python workers (every
    other descendant), each with their reaped children: the gap to Spark's own writer is
    in the workers, the JVM's share is what both writers pay."""
    import psutil  # noqa: PLC0415 - benchmark-only dependency

    parts = dict.fromkeys(CPU_PARTS, 0.0)
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            part = "driver" if proc.pid == me.pid else "jvm" if proc.name() == "java" else "python_workers"
        except psutil.Error:
            continue
        parts[part] += t.user + t.system + t.children_user + t.children_system
    return parts


def _job_seconds(spark: Any, group: str) -> list[tuple[str, float]]:
    """(name, seconds) of each Spark job of ``group``, from the UI's REST API."""
    import json  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415
    from datetime import datetime  # noqa: PLC0415

    sc = spark.sparkContext
    ids = set(sc.statusTracker().getJobIdsForGroup(group))
    try:
        with urllib.request.urlopen(f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/jobs") as resp:
            jobs = json.load(resp)
    except OSError:
        return []

    def ts(text: str) -> datetime:
        return datetime.strptime(text.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f")

    return [(j["name"].split(" at ")[0], round((ts(j["completionTime"]) - ts(j["submissionTime"])).total_seconds(), 2))
            for j in sorted(jobs, key=lambda j: j["jobId"]) if j["jobId"] in ids and "completionTime" in j]


Timed = tuple[float, dict[str, float], int, list]


def _timed(spark: Any, group: str, fn: Callable[[], Any]) -> Timed:
    """(wall seconds, CPU seconds by process, Spark jobs, their durations) of one write."""
    spark.sparkContext.setJobGroup(group, group)
    c0, t0 = _tree_cpu(), time.perf_counter()
    fn()
    wall, c1 = time.perf_counter() - t0, _tree_cpu()
    spark.sparkContext.setJobGroup("bench", "other")
    cpu = {k: c1[k] - c0[k] for k in CPU_PARTS}
    return wall, cpu, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group)), _job_seconds(spark, group)


def _cpu_total(run: Timed) -> float:
    return sum(run[1].values())


def _cpu_figures(runs: list[Timed]) -> dict[str, float]:
    """Median CPU seconds of each process kind over ``runs``."""
    return {k: round(statistics.median(r[1][k] for r in runs), 3) for k in CPU_PARTS}


def _handoff_only(batches: Any) -> Any:
    """mapInArrow body that takes the task's rows and writes nothing (``--handoff-floor``)."""
    import pyarrow as pa  # noqa: PLC0415 - runs in Spark's Python workers

    rows = sum(b.num_rows for b in batches)
    yield pa.RecordBatch.from_pydict({"stat": pa.array([str(rows)], pa.string())})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dir", default="/tmp/hoodie-bench-bulk")
    ap.add_argument("--master", default="local[4]")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--codec", default="snappy")
    ap.add_argument("--table-type", default="COPY_ON_WRITE")
    ap.add_argument("--handoff-floor", action="store_true",
                    help="also time a no-op mapInArrow over the same repartition (rows to Python, nothing written)")
    args = ap.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    os.makedirs(args.dir)

    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.spark.session import get_or_create_session
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe
    from airflow_hoodie.table.read import read_table

    spark = get_or_create_session("hoodie-bench-bulk", master=args.master)
    base_df = spark.createDataFrame(make_rows(np.arange(args.rows), 1, 1)).repartition(8).cache()
    base_df.count()
    warm_cfg = HoodieConfig({"hoodie.datasource.write.recordkey.field": "id",
                             "hoodie.datasource.write.partitionpath.field": "p"})
    upsert_dataframe(spark, spark.createDataFrame(make_rows(np.arange(1000), 0, 0)),
                     os.path.join(args.dir, "warm-up"), "bulk_insert", warm_cfg, "warmup")
    base_df.repartition(10, "p").write.partitionBy("p").parquet(os.path.join(args.dir, "warm-up-parquet"))
    # the initial load of benchmarks/upsert.py: one file per partition, as delta-rs lays it out
    cfg = HoodieConfig({"hoodie.table.type": args.table_type, "hoodie.datasource.write.recordkey.field": "id",
                        "hoodie.datasource.write.precombine.field": "ts",
                        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "SIMPLE",
                        "hoodie.parquet.compression.codec": args.codec,
                        "hoodie.bulkinsert.sort.mode": "PARTITION_PATH_REPARTITION",
                        "hoodie.bulkinsert.shuffle.parallelism": "10"})
    load = os.getloadavg()[0]
    ours: list[Timed] = []
    peer: list[Timed] = []
    floor: list[Timed] = []
    for r in range(args.repeat):
        path = os.path.join(args.dir, f"hudi-{r}")
        ours.append(_timed(spark, f"ours-{r}", lambda: upsert_dataframe(spark, base_df, path, "bulk_insert", cfg,
                                                                         "bench")))
        peer.append(_timed(spark, f"peer-{r}", lambda: base_df.repartition(10, "p").write.partitionBy("p").option(
            "compression", args.codec).parquet(os.path.join(args.dir, f"spark-parquet-{r}"))))
        if args.handoff_floor:
            floor.append(_timed(spark, f"floor-{r}", lambda: base_df.repartition(10, "p").mapInArrow(
                _handoff_only, "stat string").collect()))
        assert read_table(path, columns=["id"]).num_rows == args.rows
    ours_s, peer_s = statistics.median(o[0] for o in ours), statistics.median(p[0] for p in peer)
    figures = {"rows": args.rows, "codec": args.codec, "table_type": args.table_type, "repeat": args.repeat,
               "ours_runs_s": [round(o[0], 3) for o in ours], "peer_runs_s": [round(p[0], 3) for p in peer],
               "ours_cpu_s": round(statistics.median(_cpu_total(o) for o in ours), 3),
               "peer_cpu_s": round(statistics.median(_cpu_total(p) for p in peer), 3),
               "ours_cpu_by_process_s": _cpu_figures(ours), "peer_cpu_by_process_s": _cpu_figures(peer),
               "ours_spark_jobs": ours[-1][2], "peer_spark_jobs": peer[-1][2],
               "ours_job_seconds": [o[3] for o in ours], "peer_job_seconds": [p[3] for p in peer],
               "load_avg_1m": [round(load, 2), round(os.getloadavg()[0], 2)]}
    if floor:
        figures.update({"handoff_floor_runs_s": [round(f[0], 3) for f in floor],
                        "handoff_floor_cpu_s": round(statistics.median(_cpu_total(f) for f in floor), 3),
                        "handoff_floor_cpu_by_process_s": _cpu_figures(floor)})
    print(figures)
    print(f"CPU seconds (process tree): ours {figures['ours_cpu_s']}, Spark {figures['peer_cpu_s']} "
          f"({figures['ours_cpu_s'] / figures['peer_cpu_s']:.2f}x); by process: ours "
          f"{figures['ours_cpu_by_process_s']}, Spark {figures['peer_cpu_by_process_s']}")
    if floor:
        print(f"no-op mapInArrow over the same repartition: {statistics.median(f[0] for f in floor):.2f} s, CPU "
              f"{figures['handoff_floor_cpu_s']} s {figures['handoff_floor_cpu_by_process_s']}")
    rows = [(f"bulk_insert {args.rows:,} rows, {args.table_type}", ours_s, peer_s,
             "Spark's partitioned df.write.parquet")]
    print_table(rows)
    print(f"figures: {write_report('bulk_insert', figures, rows)}")
    spark.stop()


if __name__ == "__main__":
    main()
