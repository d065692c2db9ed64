"""Delete blocks: the keys a write deleted, with the ordering value each delete carries.

Hudi serializes ``DeleteRecord[]`` as an Avro ``HoodieDeleteRecordList`` whose ordering
value is a union of wrapper records (BooleanWrapper, IntWrapper, ...); readers compare it to
the ordering field of base records, so its type must survive the round trip.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import io
import struct
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import fastavro
import pyarrow as pa

from airflow_hoodie.errors import (
    HoodieNotSupportedError,
    HoodieSchemaError,
)
from airflow_hoodie.table.log.log_block import (
    INT32,
    LOG_BLOCK_CONTENT_VERSION,
    BlockType,
    HeaderKey,
    HoodieCorruptedLogError,
    LogBlock,
    base_headers,
    writer_schema_json,
)


@dataclass(frozen=True)
class DeleteRecord:
    """``DeleteRecord``: key, partition path and ordering value of a deleted record."""

    record_key: str | None
    partition_path: str | None
    ordering_value: Any = None


_WRAPPERS = [
    ("BooleanWrapper", "boolean"),
    ("IntWrapper", "int"),
    ("LongWrapper", "long"),
    ("FloatWrapper", "float"),
    ("DoubleWrapper", "double"),
    ("BytesWrapper", "bytes"),
    ("StringWrapper", "string"),
    ("DateWrapper", "int"),
    ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    ("TimestampMicrosWrapper", "long"),
]


#: ``HoodieDeleteRecordList`` as Hudi 0.14/0.15 defines it (wrapper records inlined).
DELETE_RECORD_LIST_SCHEMA: dict = {
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {
            "name": "deleteRecordList",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieDeleteRecord",
                    "fields": [
                        {"name": "recordKey", "type": ["null", "string"], "default": None},
                        {"name": "partitionPath", "type": ["null", "string"], "default": None},
                        {
                            "name": "orderingVal",
                            "type": ["null"]
                            + [
                                {
                                    "type": "record",
                                    "name": name,
                                    "namespace": "org.apache.hudi.avro.model",
                                    "fields": [{"name": "value", "type": t}],
                                }
                                for name, t in _WRAPPERS
                            ],
                            "default": None,
                        },
                    ],
                },
            },
        }
    ],
}


_DELETE_PARSED = fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)


_EPOCH = _dt.date(1970, 1, 1)


_EPOCH_DT = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _wrap_ordering(value: Any, type_hint: pa.DataType | None) -> Any:
    """``HoodieAvroUtils.wrapValueIntoAvro`` — (wrapper name, value) for fastavro.

    No ordering value is Hudi's "natural order" ``0``, written as ``IntWrapper{0}``: a hard
    delete carries exactly that (Java readers fail on a null ordering value)."""
    ns = "org.apache.hudi.avro.model."
    if value is None:
        return (ns + "IntWrapper", {"value": 0})
    if type_hint is not None:
        t = type_hint
        if pa.types.is_boolean(t):
            return (ns + "BooleanWrapper", {"value": bool(value)})
        if pa.types.is_integer(t) and t.bit_width <= 32 and not pa.types.is_uint32(t):
            return (ns + "IntWrapper", {"value": int(value)})
        if pa.types.is_integer(t):
            return (ns + "LongWrapper", {"value": int(value)})
        if pa.types.is_float32(t) or pa.types.is_float16(t):
            return (ns + "FloatWrapper", {"value": float(value)})
        if pa.types.is_floating(t):
            return (ns + "DoubleWrapper", {"value": float(value)})
    if isinstance(value, bool):
        return (ns + "BooleanWrapper", {"value": value})
    if isinstance(value, int):
        return (ns + "LongWrapper", {"value": value})
    if isinstance(value, float):
        return (ns + "DoubleWrapper", {"value": value})
    if isinstance(value, str):
        return (ns + "StringWrapper", {"value": value})
    if isinstance(value, (bytes, bytearray, memoryview)):
        return (ns + "BytesWrapper", {"value": bytes(value)})
    if isinstance(value, decimal.Decimal):
        return (ns + "DecimalWrapper", {"value": value.quantize(decimal.Decimal(1).scaleb(-15))})
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        micros = (value - _EPOCH_DT) // _dt.timedelta(microseconds=1)
        return (ns + "TimestampMicrosWrapper", {"value": micros})
    if isinstance(value, _dt.date):
        return (ns + "DateWrapper", {"value": (value - _EPOCH).days})
    if isinstance(value, _dt.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        return (ns + "TimeMicrosWrapper", {"value": micros})
    raise HoodieSchemaError(
        f"Ordering value {value!r} of type {type(value).__name__} cannot be stored in a "
        "delete block; use a number, string, bytes, decimal, date or timestamp."
    )


def _unwrap_ordering(wrapped: Any) -> Any:
    """``unwrapAvroValueWrapper``: the plain value of a wrapper record."""
    if wrapped is None:
        return None
    name, rec = wrapped
    value = rec["value"]
    short = name.rsplit(".", 1)[-1]
    if short == "DateWrapper":
        return _EPOCH + _dt.timedelta(days=value)
    if short == "TimestampMicrosWrapper":
        return _EPOCH_DT + _dt.timedelta(microseconds=value)
    if short == "TimeMicrosWrapper" and isinstance(value, int):
        return (_dt.datetime.min + _dt.timedelta(microseconds=value)).time()
    return value


def delete_block(
    keys: Iterable[DeleteRecord],
    instant_time: str,
    ordering_type: pa.DataType | None = None,
    extra_headers: Mapping[HeaderKey | int, str] | None = None,
    schema: dict | str | None = None,
) -> LogBlock:
    """A DELETE block (content version 3) for ``keys``.

    ``ordering_type`` is the Arrow type of the table's precombine field; it decides the
    wrapper (Int vs Long ...) so Hudi compares the value with the field's (Hudi only lets
    an older record win over a delete when both ordering values have the same class).
    Without it, Python ints become LongWrapper and floats DoubleWrapper. ``schema``: Hudi's
    append handle gives a delete block the same headers as its data block, i.e. also the
    writer schema in ``SCHEMA``; pass it to match byte for byte.
    """
    recs = [
        {
            "recordKey": k.record_key,
            "partitionPath": k.partition_path,
            "orderingVal": _wrap_ordering(k.ordering_value, ordering_type),
        }
        for k in keys
    ]
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, _DELETE_PARSED, {"deleteRecordList": recs})
    except (ValueError, TypeError) as exc:
        raise HoodieSchemaError(f"Cannot encode delete records: {exc}") from exc
    data = buf.getvalue()
    content = INT32.pack(LOG_BLOCK_CONTENT_VERSION) + INT32.pack(len(data)) + data
    schema_json = writer_schema_json(schema) if schema is not None else None
    return LogBlock(BlockType.DELETE, base_headers(instant_time, schema_json, extra_headers), {},
                    content)


def decode_delete_block(block: LogBlock) -> list[DeleteRecord]:
    """The deleted keys of a DELETE block (content version 3)."""
    if block.block_type != BlockType.DELETE:
        raise HoodieNotSupportedError(f"{block.type_name} block is not a delete block")
    c = block.content
    if len(c) < 8:
        raise HoodieCorruptedLogError(f"delete block at byte {block.offset} content is truncated")
    version, n = struct.unpack_from(">ii", c, 0)
    if n < 0 or 8 + n > len(c):
        raise HoodieCorruptedLogError(
            f"delete block at byte {block.offset} declares {n} bytes of keys but has {len(c) - 8}"
        )
    if version < 3:
        raise HoodieNotSupportedError(
            f"delete block at byte {block.offset} uses content version {version} (Java/Kryo "
            "serialization from Hudi < 0.11); compact the file group with Hudi first."
        )
    try:
        rec = fastavro.schemaless_reader(
            io.BytesIO(c[8 : 8 + n]), _DELETE_PARSED, None, return_record_name=True
        )
    except (EOFError, ValueError, IndexError, KeyError, TypeError, OverflowError, MemoryError) as exc:
        raise HoodieCorruptedLogError(
            f"delete block at byte {block.offset} cannot be decoded: {exc!r}"
        ) from exc
    return [
        DeleteRecord(r["recordKey"], r["partitionPath"], _unwrap_ordering(r["orderingVal"]))
        for r in rec["deleteRecordList"]
    ]


def delete_records_to_arrow(records: Sequence[DeleteRecord]) -> pa.Table:
    """Columns record_key, partition_path (strings) and ordering_value (Python objects
    coerced by Arrow; mixed types become strings)."""
    keys = pa.array([r.record_key for r in records], pa.string())
    parts = pa.array([r.partition_path for r in records], pa.string())
    vals = [r.ordering_value for r in records]
    try:
        ov = pa.array(vals)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        ov = pa.array([None if v is None else str(v) for v in vals], pa.string())
    return pa.table({"record_key": keys, "partition_path": parts, "ordering_value": ov})
