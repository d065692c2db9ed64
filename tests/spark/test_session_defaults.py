"""What the job session fills in when nobody set it."""

from __future__ import annotations

import os

from airflow_hoodie.spark.session import _local_cores


def test_local_masters_get_a_few_shuffle_partitions_per_core_clusters_none():
    assert _local_cores("local[4]") == 4
    assert _local_cores("local") == 1
    assert _local_cores("local[*]") == (os.cpu_count() or 1)
    assert _local_cores("local[2,3]") == 2  # local[N,maxFailures]
    assert _local_cores("spark://host:7077") is None
    assert _local_cores("yarn") is None
    assert _local_cores(None) is None


def test_the_shared_session_starts_adaptive_execution_from_few_partitions(spark):
    # the test session sets spark.sql.shuffle.partitions itself, so nothing else is filled in
    conf = spark.conf
    assert conf.get("spark.sql.adaptive.enabled") == "true"
    assert conf.get("spark.sql.shuffle.partitions") != "200"


def _modules_at_task_start(batches):  # executors: what the worker had imported before this task
    import sys

    import pyarrow as pa

    loaded = "airflow_hoodie.actions.file_group_write" in sys.modules
    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"loaded": [loaded]})


def test_python_workers_fork_with_the_write_path_already_imported(spark):
    """Each worker imported our write path on its first task (about a second of CPU per
    executor core of every job); the job session's daemon imports it once before forking."""
    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == "airflow_hoodie.spark.worker_daemon"
    rows = spark.range(4, numPartitions=2).mapInArrow(_modules_at_task_start, "loaded boolean").collect()
    assert rows and all(r.loaded for r in rows)


def _frozen_objects(_item: object) -> int:  # executors
    import gc

    return gc.get_freeze_count()


def test_file_work_sent_to_spark_tasks_starts_with_the_worker_heap_frozen(spark):
    """PySpark collects garbage after every task; what the worker held before the task
    (our modules, earlier tasks' caches) is frozen first, so that walk skips it."""
    from airflow_hoodie.spark.executor import SparkExecutor

    assert all(n > 10_000 for n in SparkExecutor(spark).map(_frozen_objects, [1, 2, 3]))
