"""Avro <-> Arrow schema and record conversion with Hudi's naming conventions.

Hudi hands every log data block the writer's Avro schema (``SCHEMA`` header), and
derives that schema from the Spark schema the way Spark's ``SchemaConverters`` does
(Hudi's ``AvroConversionUtils``): the top record is ``<table>_record`` in namespace
``hoodie.<table>``; a nested struct is a record named after its field, in the namespace
``<parent namespace>.<parent record name>``; a decimal is a ``fixed`` named ``fixed`` in
the namespace ``<record namespace>.<record name>.<field name>`` of the smallest size
that holds its precision; a nullable type is the union ``["null", T]`` with default
``null``; Hudi's meta columns carry ``"doc": ""``. Matching these names matters because
Avro schema resolution and Hudi's schema-evolution checks compare full names.

Record conversion goes through fastavro's compiled codec. Logical types whose Python
form would be a per-value object (timestamps, dates, times, uuid) are stripped from the
schema handed to fastavro, so values travel as plain ints/strings and Arrow casts them
in bulk.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Iterable

import pyarrow as pa

from airflow_hoodie.errors import HoodieNotSupportedError, HoodieSchemaError
from airflow_hoodie.table.schema.meta_fields import META_COLUMNS

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}

#: logical types we strip before fastavro sees a schema (Arrow casts them in bulk).
_STRIPPED_LOGICAL = {
    "date",
    "time-millis",
    "time-micros",
    "timestamp-millis",
    "timestamp-micros",
    "timestamp-nanos",
    "local-timestamp-millis",
    "local-timestamp-micros",
    "local-timestamp-nanos",
    "uuid",
}


def table_record_name(table_name: str) -> tuple[str, str]:
    """``(record name, namespace)`` Hudi uses for a table's Avro schema."""
    return f"{table_name}_record", f"hoodie.{table_name}"


def min_bytes_for_precision(precision: int) -> int:
    """Smallest fixed size holding a signed decimal of ``precision`` digits (as Spark)."""
    n = 1
    while 2 ** (8 * n - 1) < 10**precision:
        n += 1
    return n


# ----------------------------------------------------------------------------------
# Arrow -> Avro
# ----------------------------------------------------------------------------------


def arrow_schema_to_avro(
    schema: pa.Schema, record_name: str, namespace: str = ""
) -> dict[str, Any]:
    """The Avro schema (as a dict) Hudi would write for an Arrow/Spark schema.

    ``record_name``/``namespace`` are normally :func:`table_record_name` of the table.
    """
    child_ns = f"{namespace}.{record_name}" if namespace else record_name
    fields = [_field_to_avro(f, child_ns, top_level=True) for f in schema]
    rec: dict[str, Any] = {"type": "record", "name": record_name}
    if namespace:
        rec["namespace"] = namespace
    rec["fields"] = fields
    return rec


def _field_to_avro(field: pa.Field, namespace: str, top_level: bool = False) -> dict[str, Any]:
    avro_type = _type_to_avro(field.type, field.name, namespace)
    out: dict[str, Any] = {"name": field.name}
    if field.nullable and avro_type != "null":
        out["type"] = ["null", avro_type]
        if top_level and field.name in META_COLUMNS:
            out["doc"] = ""
        out["default"] = None
    else:
        out["type"] = avro_type
        if top_level and field.name in META_COLUMNS:
            out["doc"] = ""
    return out


def _nullable(avro_type: Any, nullable: bool) -> Any:
    return ["null", avro_type] if nullable and avro_type != "null" else avro_type


def _type_to_avro(t: pa.DataType, name: str, namespace: str) -> Any:
    """Avro type of Arrow type ``t`` for a field called ``name`` whose record's child
    namespace is ``namespace`` (Spark's ``recordName``/``nameSpace`` arguments)."""
    if pa.types.is_dictionary(t):
        return _type_to_avro(t.value_type, name, namespace)
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t) or pa.types.is_uint64(t):
        return "long"
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or _is_string_view(t):
        return "string"
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or _is_binary_view(t)
    ):
        return "bytes"
    if pa.types.is_decimal(t):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{name}",
            "size": min_bytes_for_precision(t.precision),
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if pa.types.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t):
        if t.tz is None:
            # Hudi 0.14 has no TIMESTAMP_NTZ: it never writes local-timestamp-*, and hudi-rs
            # fails on tables that carry it. Guessing a zone would shift the values silently.
            raise HoodieNotSupportedError(
                f"Column {name!r} is a timestamp without time zone ({t}); Hudi 0.14/0.15 tables store "
                "timestamps as UTC instants (timestamp-micros). Convert the column first, e.g. "
                "pyarrow.compute.assume_timezone(col, 'UTC') or a Spark TIMESTAMP (not TIMESTAMP_NTZ).")
        return {"type": "long", "logicalType": "timestamp-micros"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        vf = t.value_field
        items = _type_to_avro(vf.type, name, namespace)
        return {"type": "array", "items": _nullable(items, vf.nullable)}
    if pa.types.is_map(t):
        if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
            raise HoodieSchemaError(
                f"Map column {name!r} has key type {t.key_type}; Avro (and Hudi) maps need "
                "string keys. Cast the keys to string first."
            )
        vf = t.item_field
        values = _type_to_avro(vf.type, name, namespace)
        return {"type": "map", "values": _nullable(values, vf.nullable)}
    if pa.types.is_struct(t):
        child_ns = f"{namespace}.{name}" if namespace else name
        return {
            "type": "record",
            "name": name,
            "namespace": namespace,
            "fields": [_field_to_avro(t.field(i), child_ns) for i in range(t.num_fields)],
        }
    raise HoodieSchemaError(
        f"Column {name!r} has Arrow type {t}, which Hudi's Avro schemas cannot express; "
        "cast it to a supported type (numbers, strings, binary, decimal, date, timestamp, "
        "list, map with string keys, struct)."
    )


def _is_string_view(t: pa.DataType) -> bool:
    f = getattr(pa.types, "is_string_view", None)
    return bool(f and f(t))


def _is_binary_view(t: pa.DataType) -> bool:
    f = getattr(pa.types, "is_binary_view", None)
    return bool(f and f(t))


# ----------------------------------------------------------------------------------
# Avro -> Arrow
# ----------------------------------------------------------------------------------


def parse_avro_schema(avro_schema: str | dict | list) -> Any:
    """A JSON-decoded Avro schema; raises :class:`HoodieSchemaError` on bad JSON."""
    if isinstance(avro_schema, (str, bytes)):
        try:
            return json.loads(avro_schema)
        except ValueError as exc:
            raise HoodieSchemaError(f"Avro schema is not valid JSON: {exc}") from exc
    return avro_schema


def avro_to_arrow_schema(avro_schema: str | dict) -> pa.Schema:
    """The Arrow schema for records of a (record-typed) Avro schema.

    Logical types map to their Arrow counterparts (decimal -> decimal128/256,
    date -> date32, timestamp-millis/micros -> timestamp[ms/us, UTC], local-timestamp ->
    naive timestamp, time -> time32/time64, uuid -> string); ``["null", T]`` makes a
    nullable field; other unions are not supported.
    """
    schema = parse_avro_schema(avro_schema)
    named: dict[str, Any] = {}
    try:
        t = _avro_to_arrow(schema, named, "")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise HoodieSchemaError(f"Malformed Avro schema ({type(exc).__name__}: {exc})") from exc
    if not pa.types.is_struct(t):
        raise HoodieSchemaError("Expected an Avro record schema at the top level.")
    return pa.schema([t.field(i) for i in range(t.num_fields)])


def _full_name(name: str, namespace: str) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def _avro_to_arrow(s: Any, named: dict[str, Any], ns: str) -> pa.DataType:
    nullable_type, _ = _avro_field_type(s, named, ns)
    return nullable_type


def _avro_field_type(s: Any, named: dict[str, Any], ns: str) -> tuple[pa.DataType, bool]:
    """(arrow type, nullable) of Avro schema ``s``."""
    if isinstance(s, list):
        non_null = [b for b in s if b != "null"]
        has_null = len(non_null) != len(s)
        if len(non_null) == 1:
            t, _ = _avro_field_type(non_null[0], named, ns)
            return t, has_null
        if not non_null:
            return pa.null(), True
        raise HoodieNotSupportedError(
            f"Avro union {json.dumps(s)[:200]} has several non-null branches; only "
            '["null", T] unions map to Arrow.'
        )
    if isinstance(s, str):
        if s in _PRIMITIVES:
            return _primitive(s), s == "null"
        full = _full_name(s, ns)
        ref = named.get(full, named.get(s))
        if ref is None:
            raise HoodieSchemaError(f"Avro schema references unknown named type {s!r}.")
        return ref, False
    if not isinstance(s, dict):
        raise HoodieSchemaError(f"Malformed Avro schema element: {s!r}")
    typ = s.get("type")
    logical = s.get("logicalType")
    if isinstance(typ, (dict, list)):
        return _avro_field_type(typ, named, ns)
    if typ == "record" or typ == "error":
        name = s.get("name", "")
        rec_ns = s.get("namespace", ns) if "." not in name else name.rsplit(".", 1)[0]
        full = _full_name(name, rec_ns)
        fields = []
        for f in s.get("fields", []):
            ft, fnull = _avro_field_type(f["type"], named, rec_ns)
            fields.append(pa.field(f["name"], ft, nullable=fnull))
        st = pa.struct(fields)
        named[full] = st
        return st, False
    if typ == "enum":
        name = s.get("name", "")
        named[_full_name(name, s.get("namespace", ns))] = pa.string()
        return pa.string(), False
    if typ == "fixed":
        name = s.get("name", "")
        t: pa.DataType = _decimal(s) if logical == "decimal" else pa.binary(int(s["size"]))
        named[_full_name(name, s.get("namespace", ns))] = t
        return t, False
    if typ == "array":
        it, inull = _avro_field_type(s["items"], named, ns)
        return pa.list_(pa.field("element", it, nullable=inull)), False
    if typ == "map":
        vt, vnull = _avro_field_type(s["values"], named, ns)
        return pa.map_(pa.field("key", pa.string(), nullable=False),
                       pa.field("value", vt, nullable=vnull)), False
    if typ in _PRIMITIVES:
        if logical == "decimal" and typ == "bytes":
            return _decimal(s), False
        if logical == "date" and typ == "int":
            return pa.date32(), False
        if logical == "time-millis" and typ == "int":
            return pa.time32("ms"), False
        if logical == "time-micros" and typ == "long":
            return pa.time64("us"), False
        if typ == "long" and logical in (
            "timestamp-millis", "timestamp-micros", "timestamp-nanos",
            "local-timestamp-millis", "local-timestamp-micros", "local-timestamp-nanos",
        ):
            unit = {"millis": "ms", "micros": "us", "nanos": "ns"}[logical.rsplit("-", 1)[1]]
            tz = None if logical.startswith("local-") else "UTC"
            return pa.timestamp(unit, tz=tz), False
        return _primitive(typ), typ == "null"
    raise HoodieSchemaError(f"Unsupported Avro type {typ!r} in schema element {s!r}")


def _decimal(s: dict) -> pa.DataType:
    p = int(s.get("precision", 38))
    sc = int(s.get("scale", 0))
    return pa.decimal128(p, sc) if p <= 38 else pa.decimal256(p, sc)


def _primitive(name: str) -> pa.DataType:
    return {
        "null": pa.null(),
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "bytes": pa.binary(),
        "string": pa.string(),
    }[name]


# ----------------------------------------------------------------------------------
# Schema helpers for fastavro
# ----------------------------------------------------------------------------------


def strip_logical_types(avro_schema: Any) -> Any:
    """A copy of the schema without the logical types Arrow converts in bulk.

    fastavro then yields/accepts plain ints (epoch days/millis/micros) and strings,
    instead of building a ``datetime``/``date``/``UUID`` per value. Decimals stay (fastavro
    decodes the two's-complement bytes in C).
    """
    return _strip(copy.deepcopy(parse_avro_schema(avro_schema)))


def _strip(s: Any) -> Any:
    if isinstance(s, list):
        return [_strip(b) for b in s]
    if isinstance(s, dict):
        if s.get("logicalType") in _STRIPPED_LOGICAL and s.get("type") in ("int", "long", "string"):
            return s["type"]
        out = dict(s)
        if "fields" in out:
            out["fields"] = [dict(f, type=_strip(f["type"])) for f in out["fields"]]
        if "items" in out:
            out["items"] = _strip(out["items"])
        if "values" in out:
            out["values"] = _strip(out["values"])
        if isinstance(out.get("type"), (dict, list)):
            out["type"] = _strip(out["type"])
        return out
    return s


def physical_arrow_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type whose Python values fastavro accepts for the stripped schema."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return pa.int32()
    if pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_time64(t):
        return pa.int64()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        vf = t.value_field
        return pa.list_(vf.with_type(physical_arrow_type(vf.type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field, t.item_field.with_type(physical_arrow_type(t.item_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(physical_arrow_type(f.type)) for f in t])
    return t


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_map(t.value_type)
    if pa.types.is_struct(t):
        return any(_has_map(f.type) for f in t)
    return False


def _maps_to_dicts(value: Any, t: pa.DataType) -> Any:
    """Arrow's Python form of a map is a list of pairs; Avro wants a dict."""
    if value is None:
        return None
    if pa.types.is_map(t):
        return {k: _maps_to_dicts(v, t.item_type) for k, v in value}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_maps_to_dicts(v, t.value_type) for v in value]
    if pa.types.is_struct(t):
        return {f.name: _maps_to_dicts(value.get(f.name), f.type) for f in t}
    return value


# ----------------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------------


def conform_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns and types (missing columns as nulls).

    Raises :class:`HoodieSchemaError` if a column cannot be cast, or a non-nullable
    target column is missing.
    """
    cols = []
    n = table.num_rows
    names = set(table.column_names)
    for field in schema:
        if field.name in names:
            col = table.column(field.name)
            if col.type != field.type:
                try:
                    col = col.cast(field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                    raise HoodieSchemaError(
                        f"Column {field.name!r} of type {col.type} cannot be converted to "
                        f"{field.type} required by the Avro schema: {exc}"
                    ) from exc
        else:
            if not field.nullable:
                raise HoodieSchemaError(
                    f"Column {field.name!r} is required by the Avro schema but missing "
                    "from the records."
                )
            col = pa.nulls(n, field.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema) if cols else pa.table({})


def arrow_to_avro_records(table: pa.Table, avro_schema: str | dict) -> list[dict[str, Any]]:
    """Python dicts for ``table`` ready for fastavro (timestamps/dates as ints in the Avro
    unit, decimals as Decimal, maps as dicts). They encode under ``avro_schema`` itself and,
    faster, under :func:`strip_logical_types` of it."""
    arrow_schema = avro_to_arrow_schema(avro_schema)
    table = conform_table(table, arrow_schema)
    phys = pa.schema([f.with_type(physical_arrow_type(f.type)) for f in arrow_schema])
    arrays = []
    for field, col in zip(arrow_schema, table.columns):
        target = phys.field(field.name).type
        if target != field.type:
            col = col.cast(target)
        arrays.append(col)
    table = pa.Table.from_arrays(arrays, schema=phys)
    rows = table.to_pylist()
    map_fields = [f for f in phys if _has_map(f.type)]
    if map_fields:
        for row in rows:
            for f in map_fields:
                row[f.name] = _maps_to_dicts(row[f.name], f.type)
    return rows


def avro_records_to_arrow(records: Iterable[dict[str, Any]], avro_schema: str | dict) -> pa.Table:
    """The Arrow table of Avro record dicts, typed by :func:`avro_to_arrow_schema`.

    Fastest for dicts decoded with :func:`strip_logical_types` of the schema (plain ints
    for timestamps/dates); dicts holding ``datetime``/``date`` objects (decoded with
    logical types) work too.
    """
    arrow_schema = avro_to_arrow_schema(avro_schema)
    phys = pa.schema([f.with_type(physical_arrow_type(f.type)) for f in arrow_schema])
    records = list(records)
    try:
        table = pa.Table.from_pylist(records, schema=phys)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        # records decoded with logical types (datetime/date objects) convert directly
        try:
            return pa.Table.from_pylist(records, schema=arrow_schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
        raise HoodieSchemaError(f"Avro records do not match their schema: {exc}") from exc
    if phys != arrow_schema:
        table = pa.Table.from_arrays(
            [c if c.type == f.type else c.cast(f.type) for c, f in zip(table.columns, arrow_schema)],
            schema=arrow_schema,
        )
    return table


__all__ = [
    "META_COLUMNS",
    "arrow_schema_to_avro",
    "avro_to_arrow_schema",
    "arrow_to_avro_records",
    "avro_records_to_arrow",
    "conform_table",
    "min_bytes_for_precision",
    "parse_avro_schema",
    "physical_arrow_type",
    "strip_logical_types",
    "table_record_name",
]
