"""Benchmark (not a test): what Spark's Python workers cost before a write task does any work.

Each Airflow task is a fresh ``spark-submit``, so its Python workers start cold: each one
imports our write path on its first task. PySpark then runs a full garbage collection after
every task, walking every object those imports made. The job session names our own daemon
module (``airflow_hoodie/spark/worker_daemon.py``), which imports the write path once before
it forks workers, and each of our tasks first freezes what the worker holds out of the
collector's way (``worker_heap.py``). Measured here against PySpark's own daemon and a task
that does not freeze, each variant in a fresh process (a new JVM and new workers), the
variants alternated ``--repeat`` times:

* the first job of a session: 8 tasks over ``local[4]`` whose function lives in our modules;
* 200 more tasks of that kind on the warm workers (``local[2]``).

    .venv/bin/python benchmarks/python_workers.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.report import print_table, write_report  # noqa: E402

DAEMON = "airflow_hoodie.spark.worker_daemon"


def _tasks(batches):  # executors: a task whose function needs our write path, as before
    import importlib  # noqa: PLC0415

    importlib.import_module("airflow_hoodie.actions.file_group_write")
    yield from batches


def _our_tasks(batches):  # executors: the same as our write tasks start now
    from airflow_hoodie.spark.worker_heap import freeze_worker_heap  # noqa: PLC0415

    freeze_worker_heap()
    yield from _tasks(batches)


def _one_session(daemon: str | None) -> dict[str, float]:
    """Runs in a child process: a session with ``daemon`` (None: PySpark's own)."""
    from pyspark.sql import SparkSession

    from benchmarks.upsert import process_tree_cpu

    b = (SparkSession.builder.master("local[4]").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    if daemon:
        b = b.config("spark.python.daemon.module", daemon)
    spark = b.getOrCreate()
    task = _our_tasks if daemon else _tasks
    df = spark.range(0, 400_000, numPartitions=8)
    cpu, t = process_tree_cpu(), time.perf_counter()
    df.mapInArrow(task, df.schema).count()
    out = {"first_job_s": time.perf_counter() - t, "first_job_cpu_s": process_tree_cpu() - cpu}
    small = spark.range(0, 200, numPartitions=200)
    cpu, t = process_tree_cpu(), time.perf_counter()
    small.mapInArrow(task, small.schema).count()
    out.update({"tasks_200_s": time.perf_counter() - t, "tasks_200_cpu_s": process_tree_cpu() - cpu})
    spark.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", choices=["pyspark", "ours"])
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_one_session(DAEMON if args.child == "ours" else None)))
        return
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    runs: dict[str, list[dict[str, float]]] = {"pyspark": [], "ours": []}
    for _ in range(args.repeat):
        for variant in runs:
            out = subprocess.run([sys.executable, __file__, "--child", variant], env=env, check=True,
                                 capture_output=True, text=True).stdout
            runs[variant].append(json.loads(out.strip().splitlines()[-1]))

    def median(variant: str, key: str) -> float:
        values = sorted(r[key] for r in runs[variant])
        return values[len(values) // 2]

    keys = ("first_job_s", "first_job_cpu_s", "tasks_200_s", "tasks_200_cpu_s")
    figures = {f"{v}_{k}": round(median(v, k), 2) for v in runs for k in keys}
    figures.update({"repeat": args.repeat, "load_avg_1min": os.getloadavg()[0], "runs": runs})
    rows = [("first job, 8 cold workers' tasks (wall)", median("ours", "first_job_s"), median("pyspark", "first_job_s"),
             "PySpark's daemon, no freeze"),
            ("first job (CPU, process tree)", median("ours", "first_job_cpu_s"), median("pyspark", "first_job_cpu_s"),
             "PySpark's daemon, no freeze"),
            ("200 tasks on warm workers (wall)", median("ours", "tasks_200_s"), median("pyspark", "tasks_200_s"),
             "PySpark's daemon, no freeze"),
            ("200 tasks (CPU, process tree)", median("ours", "tasks_200_cpu_s"), median("pyspark", "tasks_200_cpu_s"),
             "PySpark's daemon, no freeze")]
    print(json.dumps({k: v for k, v in figures.items() if k != "runs"}, indent=1))
    print_table(rows)
    print(write_report("python_workers", figures, rows))


if __name__ == "__main__":
    main()
