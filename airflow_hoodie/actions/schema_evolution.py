"""Schema evolution on write: which incoming column types the stored schema accepts.

Checked before anything is written, so an incompatible batch leaves the table as it was;
new nullable columns are appended and the stored field definitions kept byte for byte.
"""

from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa

from airflow_hoodie.actions.write_records import INTERNAL_COLS
from airflow_hoodie.config_keys.write import ALLOW_COLUMN_DROP, SET_NULL_FOR_MISSING_COLUMNS
from airflow_hoodie.errors import (
    HoodieNotSupportedError,
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


#: Avro's type promotions: a reader of the wider type reads values written as the narrower
#: one, so Hudi accepts a batch that widens a column this way and the table's column becomes
#: the wider type (HoodieSchemaUtils / AvroSchemaCompatibility, Hudi 0.14)
_AVRO_PROMOTIONS = {"int": ("long", "float", "double"), "long": ("float", "double"), "float": ("double",)}
_AVRO_PRIMITIVE = {pa.int8(): "int", pa.int16(): "int", pa.int32(): "int", pa.int64(): "long",
                   pa.float32(): "float", pa.float64(): "double"}


def _promotion(incoming: pa.DataType, stored: pa.DataType) -> str | None:
    """The Avro type a stored column is promoted to by an incoming wider one, else None."""
    if pa.types.is_dictionary(incoming):
        incoming = incoming.value_type
    to, frm = _AVRO_PRIMITIVE.get(incoming), _AVRO_PRIMITIVE.get(stored)
    return to if frm is not None and to in _AVRO_PROMOTIONS.get(frm, ()) else None


def _promoted_field(field: Mapping[str, Any], avro_type: str) -> dict[str, Any]:
    """``field`` with its primitive type (plain or inside a nullable union) widened."""
    out = dict(field)
    t = field["type"]
    if isinstance(t, list):
        out["type"] = [avro_type if isinstance(b, str) and b != "null" else b for b in t]
    else:
        out["type"] = avro_type
    return out


def _timestamp_mismatch(incoming: pa.DataType, stored: pa.DataType) -> str | None:
    """Why a timestamp column cannot go into the stored one: a naive wall-clock time read as a
    UTC instant (or an instant read as wall-clock) would shift every value silently."""
    if pa.types.is_dictionary(incoming):
        incoming = incoming.value_type
    if not (pa.types.is_timestamp(incoming) and pa.types.is_timestamp(stored)):
        return None
    if (incoming.tz is None) == (stored.tz is None):
        return None
    if incoming.tz is None:
        return ("is a timestamp without time zone, but the table stores UTC instants (timestamp-micros); "
                "storing it would read its wall-clock times as UTC. Give the column its time zone first "
                "(pandas: Series.dt.tz_localize; Spark: a TIMESTAMP column instead of TIMESTAMP_NTZ, or "
                "to_utc_timestamp)")
    return ("is a timestamp with a time zone, but the table stores wall-clock times without one "
            "(local-timestamp); convert it to the table's local time and drop the zone first")


def _compatible(incoming: pa.DataType, stored: pa.DataType) -> bool:
    if incoming == stored or pa.types.is_null(incoming):
        return True
    if pa.types.is_timestamp(incoming) and pa.types.is_timestamp(stored):
        return (incoming.tz is None) == (stored.tz is None)
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


def evolve_schema(table_avro: Mapping[str, Any] | None, incoming: pa.Schema, table_name: str,
                  fill_missing: bool = False, drop_missing: bool = False) -> dict[str, Any]:
    """The table's Avro schema after this batch: old fields kept (widened where the batch
    promotes them), new nullable columns appended.

    A column whose type cannot be read as the stored type raises HoodieSchemaError before
    anything is written, so an incompatible batch leaves the table untouched. So does a
    batch that lacks a stored column, unless ``fill_missing`` (Hudi's
    ``hoodie.write.set.null.for.missing.columns``): updated records would otherwise lose
    that column's stored values to nulls. ``drop_missing`` (Hudi's
    ``hoodie.datasource.write.schema.allow.auto.evolution.column.drop``) would drop such
    columns from the table's schema; we do not support that and say so.
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
    bad, promoted = [], {}
    for f in incoming:
        if f.name in stored.names:
            st = stored.field(f.name).type
            zone = _timestamp_mismatch(f.type, st)
            if zone:
                raise HoodieSchemaError(f"Column {f.name!r} {zone}; the table was not changed.")
            if _compatible(f.type, st):
                continue
            widened = _promotion(f.type, st)
            if widened:
                promoted[f.name] = widened
            else:
                bad.append(f"{f.name}: {f.type} (table has {st})")
    if bad:
        raise HoodieSchemaError(
            "The batch is not compatible with the table schema: " + "; ".join(bad)
            + ". Cast the columns to the stored types; a column may only widen as Avro promotes (int to "
            "long, float or double; long to float or double; float to double). The table was not changed.")
    missing = [n for n in stored.names if n not in incoming.names]
    if missing and not fill_missing and drop_missing:
        raise HoodieNotSupportedError(
            f"{ALLOW_COLUMN_DROP}=true would drop the column(s) {', '.join(missing)} from the table's schema; "
            "airflow-hoodie does not drop columns. Add them to the batch, or set "
            f"{SET_NULL_FOR_MISSING_COLUMNS}=true to write nulls for them. The table was not changed.")
    if missing and not fill_missing:
        raise HoodieSchemaError(
            f"The batch lacks the table's column(s) {', '.join(missing)}; writing it would replace their stored "
            f"values with nulls in every updated record. Add the columns to the batch, or set "
            f"{SET_NULL_FOR_MISSING_COLUMNS}=true to write nulls for them, as Hudi requires. The table was not "
            "changed.")
    added = [f for f in incoming if f.name not in stored.names and f.name not in META_COLUMNS]
    if not added and not promoted:
        return dict(table_avro)
    evolved = pa.schema(list(stored) + [pa.field(f.name, pa.string() if pa.types.is_null(f.type) else f.type, True)
                                        for f in added])
    out = arrow_schema_to_avro(evolved, rec, ns)
    # keep the stored field definitions byte for byte, but for the promoted type
    old = {f["name"]: f for f in table_avro.get("fields", [])}
    old.update({name: _promoted_field(old[name], t) for name, t in promoted.items() if name in old})
    out["fields"] = [old.get(f["name"], f) for f in out["fields"]]
    return out

