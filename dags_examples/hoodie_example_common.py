"""Settings the example DAGs share: where the demo table lives and how it is written.

Everything runs on the embedded default: no connection needed (local Spark through the
``spark_default`` fallback), the table under a local directory. Override the location
with the Airflow Variable ``hoodie_example_base_path`` or the environment variable
``HOODIE_EXAMPLE_BASE_PATH`` (default: ``$HOODIE_EXAMPLE_BASE_DIR/tables/trips``, with
``HOODIE_EXAMPLE_BASE_DIR`` defaulting to ``$AIRFLOW_HOME/hoodie_example``).
``HOODIE_EXAMPLE_TABLE_VERSION`` (6, 8 or 9) picks the Hudi table version of a new table.

The path is resolved when the DAG file is parsed because the table's Asset (which
schedules the downstream DAG) must be known then.
"""

from __future__ import annotations

import os

TABLE_NAME = "trips"


def example_base_dir() -> str:
    airflow_home = os.environ.get("AIRFLOW_HOME", os.path.expanduser("~/airflow"))
    return os.environ.get("HOODIE_EXAMPLE_BASE_DIR", os.path.join(airflow_home, "hoodie_example"))


def example_table_path() -> str:
    path = None
    try:
        from airflow.sdk import Variable

        path = Variable.get("hoodie_example_base_path", default=None)
    except Exception:  # noqa: BLE001 - no metadata DB / API at parse time: fall back to env
        path = None
    return path or os.environ.get("HOODIE_EXAMPLE_BASE_PATH") or os.path.join(example_base_dir(), "tables", TABLE_NAME)


def incoming_dir() -> str:
    return os.path.join(example_base_dir(), "incoming")


#: the ingest and maintenance DAGs may run at the same time on the table: optimistic
#: concurrency with the file-system lock (a local or HDFS table; on S3 use the
#: StorageBasedLockProvider, on GCS the ZooKeeper or DynamoDB provider). Failed writes are
#: rolled back by clean.
CONCURRENCY_CONF = {
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "hoodie.cleaner.policy.failed.writes": "LAZY",
}

#: the Hudi table version a new demo table is created at: 6 (Hudi 0.14/0.15, the default),
#: 8 (Hudi 1.0) or 9 (Hudi 1.1); an existing table keeps its own
TABLE_VERSION = os.environ.get("HOODIE_EXAMPLE_TABLE_VERSION", "6")

#: how the demo table is written: MERGE_ON_READ, keyed by uuid, latest ts wins, by city; a CDC
#: table (a table property fixed at creation), so the downstream DAG can consume its changes
WRITE_CONF = {
    **CONCURRENCY_CONF,
    "hoodie.write.table.version": TABLE_VERSION,
    "hoodie.table.name": TABLE_NAME,
    "hoodie.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "uuid",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.hive_style_partitioning": "false",
    "hoodie.table.cdc.enabled": "true",
}

#: the record key field of the demo table (the downstream DAG keys its mirror by it)
RECORD_KEY_FIELD = WRITE_CONF["hoodie.datasource.write.recordkey.field"]


def downstream_mirror_path() -> str:
    """Where the downstream DAG keeps its copy of the table, rebuilt from the CDC stream."""
    return os.environ.get("HOODIE_EXAMPLE_MIRROR_PATH") or os.path.join(example_base_dir(), "downstream",
                                                                         f"{TABLE_NAME}_mirror.json")

#: table services tuned so a short demo shows every one of them doing something
SERVICE_CONF = {
    "compaction": {**CONCURRENCY_CONF, "hoodie.compact.inline.max.delta.commits": "1"},
    "clustering": {
        **CONCURRENCY_CONF,
        "hoodie.clustering.plan.strategy.small.file.limit": str(64 * 1024 * 1024),
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(128 * 1024 * 1024),
        "hoodie.clustering.plan.strategy.sort.columns": "uuid",
    },
    "clean": {**CONCURRENCY_CONF, "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
              "hoodie.cleaner.commits.retained": "2"},
    "archive": {**CONCURRENCY_CONF, "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4",
                "hoodie.cleaner.commits.retained": "2"},
}
