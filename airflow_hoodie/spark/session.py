"""The one place a SparkSession is built.

The user's Spark settings win: a value from spark-submit ``--conf``, ``spark-defaults.conf``
or the Spark connection is never replaced. We only fill in what nobody set, and tune with
adaptive query execution (AQE coalesces shuffle partitions to the data's size) instead of
fixed partition counts that are right for a laptop and fatal at real sizes.

Spark's Python workers must run the same interpreter as the driver (ours has pyarrow and
fastavro; the system python may not), so we pin ``PYSPARK_PYTHON`` before Spark starts.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

#: filled in only when neither the submit command, spark-defaults.conf nor ``conf=`` set them
DEFAULT_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    # workers forked with our write path already imported (worker_daemon.py)
    "spark.python.daemon.module": "airflow_hoodie.spark.worker_daemon",
}

#: only for plain ``python job.py`` runs, where no submit command sized the driver JVM
PLAIN_PYTHON_CONF: dict[str, str] = {"spark.driver.memory": "2g"}

#: set in a job's environment (e.g. ``INFO``) to change Spark's log level once the session
#: exists; the hook's log4j2 configuration (WARN) covers the JVM's start-up
LOG_LEVEL_ENV = "HOODIE_SPARK_LOG_LEVEL"


def pin_python_workers() -> None:
    """Make Spark's workers use this interpreter unless the user chose another."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def _is_submitted() -> bool:
    return "SPARK_SUBMIT" in os.environ or bool(os.environ.get("SPARK_ENV_LOADED")) \
        or "PYSPARK_GATEWAY_PORT" in os.environ


def _settings_already_made() -> set[str]:
    """Keys the submit command (``--conf``, spark-defaults.conf, the connection) has set.

    Under spark-submit they are the driver JVM's system properties, which a default-loading
    SparkConf reads through the gateway spark-submit started for us.
    """
    if not _is_submitted():
        return set()
    SparkContext._ensure_initialized()
    return {key for key, _ in SparkConf(loadDefaults=True).getAll()}


INITIAL_PARTITIONS = "spark.sql.adaptive.coalescePartitions.initialPartitionNum"


def _local_cores(master: str | None) -> int | None:
    """Cores of a ``local``/``local[N]``/``local[*]`` master; None for any other master."""
    if not master or not master.startswith("local"):
        return None
    inside = master[master.find("[") + 1: master.find("]")] if "[" in master else "1"
    count = inside.split(",")[0].strip()
    return os.cpu_count() or 1 if count == "*" else max(1, int(count)) if count.isdigit() else None


def get_or_create_session(
    app_name: str = "airflow-hoodie",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return the active SparkSession or build one.

    Under ``spark-submit`` the master and resources come from the submit command; run
    as plain ``python`` we default to ``local[*]`` so every job script works without a
    cluster. ``conf`` is the caller's explicit choice and is applied as given.
    """
    pin_python_workers()
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    chosen_master = master or os.environ.get("HOODIE_SPARK_MASTER")
    if chosen_master:
        builder = builder.master(chosen_master)
    elif not _is_submitted():
        builder = builder.master("local[*]")
    taken = _settings_already_made() | set(conf or {})
    defaults = dict(DEFAULT_CONF)
    if not _is_submitted():
        defaults.update(PLAIN_PYTHON_CONF)
    local_cores = _local_cores(chosen_master if chosen_master else (None if _is_submitted() else "local[*]"))
    if local_cores and not taken & {"spark.sql.shuffle.partitions", INITIAL_PARTITIONS}:
        # On a local master Spark's 200 shuffle partitions are 200 tiny Python tasks per stage
        # (measured: an upsert of 100k into 1M rows took 19-30 s instead of 9 s). AQE starts
        # from a few partitions per core instead; clusters keep Spark's and the user's settings.
        defaults[INITIAL_PARTITIONS] = str(2 * local_cores)
    for key, value in defaults.items():
        if key not in taken:
            builder = builder.config(key, value)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if os.environ.get(LOG_LEVEL_ENV):  # otherwise the log4j2 configuration decides
        session.sparkContext.setLogLevel(os.environ[LOG_LEVEL_ENV])
    return session


def session_summary(session: SparkSession) -> dict[str, Any]:
    """What a job reports about the Spark it ran on: master, application, UI, key settings."""
    sc = session.sparkContext
    return {
        "master": sc.master,
        "app_id": sc.applicationId,
        "ui_url": sc.uiWebUrl,
        "shuffle_partitions": session.conf.get("spark.sql.shuffle.partitions"),
        "adaptive": session.conf.get("spark.sql.adaptive.enabled"),
    }


def active_session_summary() -> dict[str, Any] | None:
    """:func:`session_summary` of the session this process started, if it started one."""
    active = SparkSession.getActiveSession()
    return None if active is None else session_summary(active)
