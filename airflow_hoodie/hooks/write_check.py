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
from airflow_hoodie.table.storage.storage import Storage

#: the formats whose schema sits in their files' footers
FOOTER_FORMATS = ("parquet", "orc")


def _as_spark_reads(t: pa.DataType) -> pa.DataType:
    """The Arrow type a column reaches the write flow with after Spark read it: one string,
    binary and list representation, microsecond timestamps (zone kept or not), no dictionaries."""
    if pa.types.is_dictionary(t):
        return _as_spark_reads(t.value_type)
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_as_spark_reads(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _as_spark_reads(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_as_spark_reads(t.key_type), _as_spark_reads(t.item_type))
    return t


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
                source_format: str, operation: str, table_name: str | None) -> bool:
    """Raise the write flow's own HoodieError for a batch it would refuse; True when the
    batch's schema was known and checked, False when only the job can check it."""
    from airflow_hoodie.actions.write import begin_write
    from airflow_hoodie.actions.write_client import WriteClient

    config.check_spelling()
    schema = source_schema(source, source_format, storage_options)
    if schema is None:
        return False
    begin_write(WriteClient(base_uri, config, storage_options, table_name), schema, operation)
    return True
