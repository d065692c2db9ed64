"""A batch's records keyed on the executors, for every Spark write path (the DataFrame
engine of upsert.py and bulk_insert.py's row writer): record key, partition path and
operation columns computed with ``mapInArrow`` by the same code as the Arrow engine
(:func:`airflow_hoodie.actions.write_records.prepare_batch`), and deduplicated by a window
as Hudi's preCombine does."""

from __future__ import annotations

from functools import partial
from typing import Any, Sequence

import pyarrow as pa
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from airflow_hoodie.actions.write_records import OP_COL, OrderingFields, prepare_batch
from airflow_hoodie.spark.worker_heap import freeze_worker_heap
from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH, RECORD_KEY


def arrow_schema(df: Any) -> pa.Schema:
    """The Arrow schema Spark's own Arrow batches carry: timestamps in the session time zone
    (PySpark 4 cannot convert a timestamp column without one: every batch with a timestamp
    failed with a bare AssertionError)."""
    return to_arrow_schema(df.schema, timezone=df.sparkSession.conf.get("spark.sql.session.timeZone"))


def _prepare_batches(props: dict[str, str], operation: str, ordering_field: OrderingFields, batches,
                     sizes: Any = None):  # executors
    freeze_worker_heap()
    for b in batches:
        t = prepare_batch(pa.Table.from_batches([b]), props, operation, ordering_field)
        if sizes is not None:
            g = t.group_by([PARTITION_PATH, OP_COL]).aggregate([([], "count_all")])
            sizes.add(dict(zip(zip(g.column(PARTITION_PATH).to_pylist(), g.column(OP_COL).to_pylist()),
                               g.column("count_all").to_pylist())))
        yield from t.to_batches()


def keyed_dataframe(df: Any, in_schema: pa.Schema, props: dict[str, str], operation: str,
                    ordering_field: OrderingFields = None, sizes: Any = None) -> Any:
    """``df`` with the record key, partition path and operation columns, computed on the
    executors (which also refuse null ``ordering_field`` values). ``sizes``: an accumulator
    of :class:`airflow_hoodie.spark.upsert._SummedCounts` that gets the records per (partition path, operation)."""

    out_schema = pa.schema(list(in_schema) + [pa.field(RECORD_KEY, pa.string()), pa.field(PARTITION_PATH, pa.string()),
                                              pa.field(OP_COL, pa.string())])
    return df.mapInArrow(partial(_prepare_batches, props, operation, ordering_field, sizes=sizes),
                         from_arrow_schema(out_schema))


def deduplicated(prepared: Any, ordering_fields: Sequence[str], global_keys: bool) -> Any:
    """One row per key (per key and partition unless ``global_keys``): the greatest
    ordering value wins, ties go to the later input row, as Hudi's preCombine does."""

    # several ordering fields compare as a tuple; none under commit-time ordering (later row wins)
    order = [F.col(f).desc_nulls_last() for f in ordering_fields if f in prepared.columns]
    order.append(F.monotonically_increasing_id().desc())
    part_by = [RECORD_KEY] if global_keys else [RECORD_KEY, PARTITION_PATH]
    return (prepared.withColumn("__rn", F.row_number().over(Window.partitionBy(*part_by).orderBy(*order)))
            .filter("__rn = 1").drop("__rn"))
