"""A write's checks before spark-submit: the ones that need only the batch's schema and the
table, run in the Airflow worker in a second or two instead of 25 to 40 s into a job, once
Spark has started.

The batch's schema comes from its files' footers (parquet, orc), read as Spark will read
them; the checks themselves are the write flow's own (:func:`airflow_hoodie.actions.write.begin_write`):
operation, table type and index, record key, ordering and partition columns, the table
name, and the batch's schema against the table's, time zones of timestamps included. A
batch whose schema only Spark can tell (json, csv) is checked by the job.
"""

from __future__ import annotations

from typing import Mapping

import pyarrow as pa

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.schema.spark_types import as_spark_reads as _as_spark_reads
from airflow_hoodie.table.storage.storage import Storage

#: the formats whose schema sits in their files' footers
FOOTER_FORMATS = ("parquet", "orc")


def source_schema(source: str, source_format: str, storage_options: Mapping[str, str] | None) -> pa.Schema | None:
    """The batch's schema from its files' footers, or None when it cannot be known here
    (a format without footers, or files this worker cannot read: the job then decides)."""
    fmt = (source_format or "parquet").lower()
    if fmt not in FOOTER_FORMATS:
        return None
    import pyarrow.dataset as ds

    try:
        storage, path = Storage.for_uri(source, dict(storage_options or {}) or None)
        schema = ds.dataset(path, format=fmt, filesystem=storage.fs).schema
    except Exception:  # noqa: BLE001 - unreadable here is not an error: the job reads it with Spark
        return None
    return pa.schema([pa.field(f.name, _as_spark_reads(f.type), f.nullable) for f in schema])


def check_write(base_uri: str, storage_options: Mapping[str, str] | None, config: HoodieConfig, source: str,
                source_format: str, operation: str, table_name: str | None,
                source_storage_options: Mapping[str, str] | None = None) -> bool:
    """Raise the write flow's own HoodieError for a batch it would refuse; True when the
    batch's schema was known and checked, False when only the job can check it. The source
    is read with ``source_storage_options``, by default the table's, as the job reads it."""
    from airflow_hoodie.actions.write import begin_write, check_bucket_layout
    from airflow_hoodie.actions.write_client import WriteClient

    config.check_spelling()
    schema = source_schema(source, source_format, source_storage_options or storage_options)
    if schema is None:
        return False
    client = WriteClient(base_uri, config, storage_options, table_name)
    settings, _ = begin_write(client, schema, operation)
    # the bucket-layout refusals (a default-index write into a bucket table and the reverse),
    # judged on the whole table as the batch's partitions are not known here
    check_bucket_layout(client, settings, [])
    return True
