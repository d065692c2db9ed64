"""Reading a Hudi table into a Spark DataFrame through our reader.

The rows come from ``read_table`` (the same merge code every reader of ours uses), read
on the driver and handed to Spark as Arrow; fine for the batch sizes a DAG task inspects.
A distributed per-slice read is future work.
"""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa

from airflow_hoodie.table.read import read_table


def read(spark: Any, base_path: str, query_type: str = "snapshot", as_of: str | None = None,
         start: str | None = None, end: str | None = None, columns: Sequence[str] | None = None,
         filters: Any = None, storage_options: dict | None = None) -> Any:
    """The table as a DataFrame with the same rows as :func:`airflow_hoodie.table.read_table`."""
    table = read_table(base_path, query_type=query_type, as_of=as_of, start=start, end=end,
                       columns=list(columns) if columns else None, filters=filters,
                       storage_options=storage_options)
    return spark.createDataFrame(_spark_safe(table))


def _spark_safe(table: pa.Table) -> pa.Table:
    """Spark has no unsigned / large types: cast to ones createDataFrame understands."""
    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_large_string(t):
            t = pa.string()
        elif pa.types.is_large_binary(t):
            t = pa.binary()
        fields.append(pa.field(f.name, t, f.nullable))
    return table.cast(pa.schema(fields))
