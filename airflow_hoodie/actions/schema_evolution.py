"""Schema evolution on write: which incoming column types the stored schema accepts.

Checked before anything is written, so an incompatible batch leaves the table as it was;
new nullable columns are appended and the stored field definitions kept byte for byte.
"""

from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa

from airflow_hoodie.actions.write_records import INTERNAL_COLS
from airflow_hoodie.errors import (
    HoodieSchemaError,
)
from airflow_hoodie.table.schema.avro_convert import (
    arrow_schema_to_avro,
    avro_to_arrow_schema,
    table_record_name,
)
from airflow_hoodie.table.schema.meta_fields import (
    META_COLUMNS,
    PARTITION_PATH,
    RECORD_KEY,
)


def align_to_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Columns of ``schema`` in its order; missing ones null-filled, types cast (safe only)."""
    cols = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name)
            if col.type != f.type:
                try:
                    col = col.cast(f.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise HoodieSchemaError(
                        f"Column {f.name!r} has type {col.type} but the table stores {f.type}: {exc}. "
                        "Write a compatible type or evolve the table schema explicitly."
                    ) from exc
            cols.append(col)
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=pa.schema([pa.field(f.name, f.type) for f in schema]))
_WIDENINGS = {
    pa.int8(): (pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64()),
    pa.int16(): (pa.int32(), pa.int64(), pa.float32(), pa.float64()),
    pa.int32(): (pa.int64(), pa.float32(), pa.float64()),
    pa.int64(): (pa.float32(), pa.float64()),
    pa.float32(): (pa.float64(),),
    pa.string(): (pa.large_string(),),
    pa.large_string(): (pa.string(),),
}


def _compatible(incoming: pa.DataType, stored: pa.DataType) -> bool:
    if incoming == stored or pa.types.is_null(incoming):
        return True
    if pa.types.is_timestamp(incoming) and pa.types.is_timestamp(stored):
        return True
    if pa.types.is_decimal(incoming) and pa.types.is_decimal(stored):
        return incoming.scale == stored.scale and incoming.precision <= stored.precision
    if pa.types.is_dictionary(incoming):
        return _compatible(incoming.value_type, stored)
    if pa.types.is_struct(incoming) and pa.types.is_struct(stored):
        names = {stored.field(i).name: stored.field(i).type for i in range(stored.num_fields)}
        return all(incoming.field(i).name not in names or _compatible(incoming.field(i).type, names[incoming.field(i).name])
                   for i in range(incoming.num_fields))
    if (pa.types.is_list(incoming) or pa.types.is_large_list(incoming)) and (pa.types.is_list(stored) or pa.types.is_large_list(stored)):
        return _compatible(incoming.value_type, stored.value_type)
    if pa.types.is_map(incoming) and pa.types.is_map(stored):
        return _compatible(incoming.item_type, stored.item_type)
    return stored in _WIDENINGS.get(incoming, ())


def evolve_schema(table_avro: Mapping[str, Any] | None, incoming: pa.Schema, table_name: str) -> dict[str, Any]:
    """The table's Avro schema after this batch: old fields kept, new nullable columns appended.

    A column whose type cannot be read as the stored type raises HoodieSchemaError before
    anything is written, so an incompatible batch leaves the table untouched.
    """

    incoming = pa.schema([f for f in incoming if f.name not in META_COLUMNS and f.name not in INTERNAL_COLS
                          and f.name != PARTITION_PATH and f.name != RECORD_KEY])
    rec, ns = table_record_name(table_name)
    if table_avro is None:
        fields = [pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type, True)
                  for f in incoming if f.name not in META_COLUMNS]
        fields = [pa.field(f.name, pa.string(), True) if pa.types.is_null(f.type) else f for f in fields]
        return arrow_schema_to_avro(pa.schema(fields), rec, ns)
    stored = avro_to_arrow_schema(table_avro)
    stored = pa.schema([f for f in stored if f.name not in META_COLUMNS])
    bad = []
    for f in incoming:
        if f.name in stored.names:
            st = stored.field(f.name).type
            if not _compatible(f.type, st):
                bad.append(f"{f.name}: {f.type} (table has {st})")
    if bad:
        raise HoodieSchemaError(
            "The batch is not compatible with the table schema: " + "; ".join(bad)
            + ". Cast the columns to the stored types (only widening such as int->long is allowed); "
            "the table was not changed.")
    added = [f for f in incoming if f.name not in stored.names and f.name not in META_COLUMNS]
    if not added:
        return dict(table_avro)
    evolved = pa.schema(list(stored) + [pa.field(f.name, pa.string() if pa.types.is_null(f.type) else f.type, True)
                                        for f in added])
    out = arrow_schema_to_avro(evolved, rec, ns)
    # keep the stored field definitions byte for byte
    old = {f["name"]: f for f in table_avro.get("fields", [])}
    out["fields"] = [old.get(f["name"], f) for f in out["fields"]]
    return out

