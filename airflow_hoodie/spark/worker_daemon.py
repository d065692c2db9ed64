"""Spark's Python worker daemon with our write path imported once, before it forks workers.

PySpark forks a worker per concurrent task from its daemon; each worker imported our write
path (pyarrow's dataset and parquet modules, pandas through them, our table format) on its
first task: about a second of CPU per worker, paid by every executor core of every job, as
each Airflow task is a fresh ``spark-submit``. Imported here, the forked workers share the
modules (each task then freezes them out of the collector's way: ``worker_heap.py``).
``session.py`` names this module as ``spark.python.daemon.module`` unless the user set one."""

from __future__ import annotations

import importlib

from pyspark import daemon

#: what every write task imports (the Spark engines pull in the file-group writer, the
#: index, the table format, pyarrow's dataset and parquet modules)
PRELOADED = ("airflow_hoodie.spark.upsert", "airflow_hoodie.spark.bulk_insert")


def _preload() -> None:
    try:
        for name in PRELOADED:
            importlib.import_module(name)
    except ImportError:  # a worker without our wheel: the task that needs it says so itself
        pass


if __name__ == "__main__":
    _preload()
    daemon.manager()
