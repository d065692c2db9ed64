"""The Python worker's heap as a write task finds it: moved out of the garbage collector's way.

PySpark's daemon runs a full ``gc.collect()`` after every task of a reused Python worker. A
full collection walks every container object the process tracks, and a worker that has
imported airflow_hoodie (with pyarrow, numpy and pyspark) tracks about 85,000 of them, almost
all module-level: 44 ms per task, measured in the workers of ``benchmarks/bulk_insert.py``,
where the whole write of a 100k-row task costs about 100 ms. Over the benchmark's 10 tasks that
was 0.45 s of CPU per 1M rows, a tenth of the write's CPU, spent finding no garbage.
"""

from __future__ import annotations

import gc


def freeze_worker_heap() -> None:
    """Move every object the worker holds when a task starts into the collector's permanent
    generation, so that the collections during and after the task walk only what the task
    made. Called at the start of a task, the heap is the modules and caches of earlier tasks:
    the daemon's collection after the previous task already removed its garbage. What is
    frozen is never collected by the cycle collector again; reference counting still frees it.

    Only inside a Spark task (a Python worker's process): a driver or an in-process write
    keeps its collector as it is."""
    from pyspark import TaskContext  # noqa: PLC0415 - exists on executors only

    if TaskContext.get() is None:
        return
    gc.freeze()
