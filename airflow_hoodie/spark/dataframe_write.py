"""Writing a Spark DataFrame into a Hudi table (any table version: 6, 8 or 9): the one entry
of the Spark side, which picks the path the batch takes.

* ``bulk_insert``: Hudi's row-writer path (:mod:`bulk_insert`): no index, its own layout.
* a batch small enough by Spark's size estimate (the limit: :mod:`write_path`'s rule): held
  as Arrow on the driver (:class:`~airflow_hoodie.spark.upsert.DriverBatchEngine`).
* otherwise the DataFrame engine (:class:`~airflow_hoodie.spark.upsert.SparkWriteEngine`).

The last two are engines of the one write flow, :func:`airflow_hoodie.actions.write.run_write`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from airflow_hoodie.actions.write import (
    begin_write,
    check_bucket_layout,
    open_for_write,
    run_write,
)
from airflow_hoodie.actions.write_client import WriteClient, WriteResult
from airflow_hoodie.actions.write_settings import WriteRequest
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.spark.bulk_insert import bulk_insert_dataframe
from airflow_hoodie.spark.keyed_records import arrow_schema
from airflow_hoodie.spark.upsert import DriverBatchEngine, SparkWriteEngine
from airflow_hoodie.spark.write_path import driver_limits
from airflow_hoodie.table.schema.meta_fields import META_COLUMNS


def driver_batch(df: Any, limit: int, size_bytes: int | None = None) -> pa.Table | None:
    """The batch as Arrow when Spark's own size estimate (the one it uses to choose a
    broadcast join), or ``size_bytes`` where Spark cannot estimate it, is at most ``limit``
    (``hoodie.airflow.write.driver.batch.max.bytes``); else None."""
    if limit <= 0:
        return None
    estimate = size_bytes
    if estimate is None:
        try:
            estimate = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
        except Exception:  # noqa: BLE001 - no estimate (e.g. Spark Connect): keep the DataFrame path
            return None
    return df.toArrow() if estimate <= limit else None


def upsert_dataframe(
    spark: Any,
    df: Any,
    base_uri: str,
    operation: str | WriteRequest,
    config: HoodieConfig,
    table_name: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    size_bytes: int | None = None,
) -> WriteResult:
    """Write ``df`` into the Hudi table at ``base_uri``; returns the committed instant's totals.
    ``size_bytes``: the batch's size where Spark cannot estimate it (:class:`SourceBatch`).
    ``operation``: the operation, or the job's :class:`WriteRequest` when it checked it already."""
    request = operation if isinstance(operation, WriteRequest) else WriteRequest.from_config(config, operation)
    operation = request.operation
    client = WriteClient(base_uri, config, storage_options, table_name, request)
    df = df.drop(*[c for c in df.columns if c in META_COLUMNS])
    in_schema = arrow_schema(df)
    if operation == "bulk_insert":  # Hudi's row-writer path: no index, its own layout
        settings, avro = begin_write(client, in_schema, operation)
        if settings.bucket is None:
            # its new groups are random-UUID named: never into a table laid out by bucket (the
            # batch's partitions are not known yet, so the whole table's groups are judged)
            check_bucket_layout(client, settings, [])
            # the row writer meets each record only in its write task, which checks its keys,
            # partition paths and ordering values before it writes; a first write refused there
            # is rolled back and takes the table it created with it
            first_write = client.table is None
            rolled = open_for_write(client, avro)
            return bulk_insert_dataframe(spark, df, in_schema, client, settings, avro, rolled, first_write)
        # a bucket-index bulk_insert writes each bucket's group, as Hudi's bucket bulk-insert
        # writers do: the write flow below routes it by bucket
    batch_max, files_max = driver_limits(spark, request)
    small = driver_batch(df, batch_max, size_bytes)
    if small is not None:
        engine = DriverBatchEngine(spark, small, files_max)
        return run_write(client, engine, small.schema, operation)
    return run_write(client, SparkWriteEngine(spark, df, in_schema), in_schema, operation)
