"""The Arrow types a column has after Spark read it: a schema read from files' footers by
pyarrow is compared (the write checks before spark-submit) and cast (sources on object stores,
read by Spark tasks through our storage) to what Spark's own reader would have produced."""

from __future__ import annotations

import pyarrow as pa


def as_spark_reads(t: pa.DataType) -> pa.DataType:
    """One string, binary and list representation, microsecond timestamps (zone kept or not),
    no dictionaries: Spark has one type for each."""
    if pa.types.is_dictionary(t):
        return as_spark_reads(t.value_type)
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(as_spark_reads(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, as_spark_reads(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(as_spark_reads(t.key_type), as_spark_reads(t.item_type))
    return t


def as_spark_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, as_spark_reads(f.type), f.nullable) for f in schema])
