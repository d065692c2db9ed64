"""The one place a SparkSession is built.

Spark's Python workers must run the same interpreter as the driver (ours has pyarrow and
fastavro; the system python may not), so we pin ``PYSPARK_PYTHON`` before Spark starts.
"""

from __future__ import annotations

import os
import sys
from typing import Mapping

DEFAULT_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.driver.memory": "2g",
    "spark.sql.adaptive.enabled": "true",
}


def pin_python_workers() -> None:
    """Make Spark's workers use this interpreter unless the user chose another."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def get_or_create_session(
    app_name: str = "airflow-hoodie",
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
):
    """Return the active SparkSession or build one.

    Under ``spark-submit`` the master and resources come from the submit command; run
    as plain ``python`` we default to ``local[*]`` so every job script works without a
    cluster.
    """
    pin_python_workers()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    submitted = "SPARK_SUBMIT" in os.environ or os.environ.get("SPARK_ENV_LOADED")
    chosen_master = master or os.environ.get("HOODIE_SPARK_MASTER")
    if chosen_master:
        builder = builder.master(chosen_master)
    elif not submitted:
        builder = builder.master("local[*]")
    merged = dict(DEFAULT_CONF)
    merged.update(conf or {})
    for key, value in merged.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
