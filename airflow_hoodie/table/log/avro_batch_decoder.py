"""Decode the records of an Avro data block to Arrow in compiled code.

Per-record decoding in Python (``fastavro.schemaless_reader`` then ``Table.from_pylist``)
was most of the cost of MOR reads and compaction. A Hudi Avro data block's content is
``version, count`` followed by ``count`` times ``(int32 length, record bytes)``. Declaring
the 4-byte length as a leading ``fixed(4)`` field of the record turns that content,
unchanged and uncopied, into the body of one Avro object-container block, which Polars'
Rust Avro reader decodes straight to Arrow. Schemas it cannot decode exactly (maps,
unions of several types, time types, named-type references) are detected up front and
left to the per-record path, which stays the reference.
"""

from __future__ import annotations

import functools
import io
import json
import os
import struct
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from airflow_hoodie.table.metadata.avro_codec import avro_bytes, zigzag_long

_LEN_FIELD = "_hoodie_avro_record_length"
_PRIMITIVES = {"boolean", "int", "long", "float", "double", "bytes", "string"}
_LOGICAL = {"date", "timestamp-millis", "timestamp-micros", "decimal", "uuid"}
_SYNC = b"hoodie-avro-sync"  # any 16 bytes: the container is never written anywhere


def _decodable(schema: Any) -> bool:
    """Whether the compiled reader decodes ``schema`` to the same values as fastavro."""
    if isinstance(schema, str):
        return schema in _PRIMITIVES
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return len(branches) == 1 and len(schema) <= 2 and _decodable(branches[0])
    if not isinstance(schema, dict):
        return False
    logical = schema.get("logicalType")
    if logical is not None and logical not in _LOGICAL:
        return False
    kind = schema.get("type")
    if kind == "record":
        return all(_decodable(f.get("type")) for f in schema.get("fields", []))
    if kind == "array":
        return _decodable(schema.get("items"))
    if kind in ("fixed", "enum"):
        return True
    return kind in _PRIMITIVES


# Polars runs its work on a Rust thread pool that does not survive fork(): a child forked
# after the parent used it would hang on the first decode. Such a child (multiprocessing's
# fork start method, forking task runners) decodes with the per-record path instead.
_used_here = False
_forked_after_use = False


def _after_fork_in_child() -> None:
    global _forked_after_use
    _forked_after_use = _forked_after_use or _used_here


os.register_at_fork(after_in_child=_after_fork_in_child)


def supports(schema_json: str) -> bool:
    """True when :func:`decode` can decode blocks written with ``schema_json`` here."""
    return not _forked_after_use and _supports_schema(schema_json)


@functools.lru_cache(maxsize=256)
def _supports_schema(schema_json: str) -> bool:
    """Cached: every block of a file group (and of a table) usually carries the same schema."""
    try:
        schema = json.loads(schema_json)
    except ValueError:
        return False
    return isinstance(schema, dict) and schema.get("type") == "record" and _decodable(schema)


@functools.lru_cache(maxsize=256)
def _container_header(schema_json: str) -> bytes:
    """The object-container header up to the sync marker for blocks of ``schema_json``, with
    the record length declared as a leading ``fixed(4)`` field (built once per schema)."""
    schema = json.loads(schema_json)
    framed = dict(schema)
    framed["fields"] = [
        {"name": _LEN_FIELD, "type": {"type": "fixed", "name": "HoodieAvroRecordLength", "size": 4}},
        *schema["fields"],
    ]
    return b"".join([
        b"Obj\x01",
        zigzag_long(2),
        avro_bytes(b"avro.schema"), avro_bytes(json.dumps(framed).encode()),
        avro_bytes(b"avro.codec"), avro_bytes(b"null"),
        zigzag_long(0),
        _SYNC,
    ])


def is_decode_failure(exc: BaseException) -> bool:
    """Whether ``exc`` came from bytes the compiled reader could not decode. Polars
    reports some malformed input as a Rust panic, which reaches Python as a
    ``BaseException`` subclass; interrupts and exits are never failures of the bytes."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
        return False
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def decode(schema_json: str, content: bytes, columns: Sequence[str] | None = None) -> pa.Table:
    """The block's records as Arrow, in the reader's own types (cast by the caller).

    ``columns``: fields of the schema to decode (None: all), returned in schema order. The
    others are skipped over, not materialized: a compaction, which names each row's new
    file itself, leaves out the log records' ``_hoodie_file_name``.

    Raises whatever the compiled reader raises on bytes that do not match the schema;
    callers re-decode with the reference path to report corrupt data precisely.
    """
    import polars  # noqa: PLC0415 - heavy import, only when a log block is read

    global _used_here
    _used_here = True
    if len(content) < 8:
        raise ValueError("Avro data block content is shorter than its header")
    (count,) = struct.unpack_from(">i", content, 4)
    if count < 0:
        raise ValueError(f"Avro data block declares {count} records")
    body = memoryview(content)[8:]
    container = io.BytesIO()
    container.write(_container_header(schema_json))
    container.write(zigzag_long(count))
    container.write(zigzag_long(len(body)))
    container.write(body)
    container.write(_SYNC)
    container.seek(0)
    projection = None if columns is None else [_LEN_FIELD, *columns]
    table = polars.read_avro(container, columns=projection).to_arrow()
    _check_framing(table.column(_LEN_FIELD), count, len(body))
    return table.drop_columns([_LEN_FIELD])


def _check_framing(lengths: pa.ChunkedArray, count: int, body_size: int) -> None:
    """The decoded records must tile the block exactly as their length prefixes say;
    otherwise the bytes were not what the prefixes claim and nothing may be returned."""
    if len(lengths) != count:
        raise ValueError(f"decoded {len(lengths)} records where the block declares {count}")
    total = 0
    for chunk in lengths.chunks:
        chunk = chunk.cast(pa.binary(4)) if chunk.type != pa.binary(4) else chunk
        data = chunk.buffers()[1]
        start = chunk.offset * 4
        total += int(np.frombuffer(data, dtype=">i4", count=len(chunk), offset=start).sum(dtype=np.int64))
    if total + 4 * count != body_size:
        raise ValueError(
            f"record length prefixes cover {total + 4 * count} bytes of a {body_size}-byte block"
        )
