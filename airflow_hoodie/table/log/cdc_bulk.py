"""Encode a CDC_DATA block's records column by column, as :mod:`avro_batch_encoder` does a data block.

Why: the per-record path (Arrow rows to Python dicts, then ``fastavro.schemaless_writer`` per
CDC record) was most of CDC logging's own time in a COW upsert (profile in
benchmarks/cdc_cost.py's history): two image dicts and one nested Avro encoding per changed
record. A CDC record is the concatenation of its fields' Avro encodings, and each field is
either the same for every record of a kind of change (``op``, ``ts_ms``, an image the mode does
not log, encoded as the null branch) or computable for a whole column at once: the record key
as a union string, an image as the union's record branch (``0x02``) then the row's Avro binary,
which the batch encoder builds for a table of primitive columns.

The per-record path (:func:`cdc_block.cdc_data_block`) stays the reference; this one gives the
same bytes (tests compare them) and declines (None) whenever the table's data schema is not
one the batch encoder takes (nested or logical types beyond what casts to a primitive,
decimals, maps), so the caller falls back to the reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieSchemaError
from airflow_hoodie.table.log import avro_batch_encoder as abe
from airflow_hoodie.table.schema.avro_convert import (
    avro_to_arrow_schema,
    conform_table,
    physical_arrow_type,
    strip_logical_types,
)


@dataclass(frozen=True)
class CdcSegment:
    """Changes of one kind (``op``) of a file group, in the order they are logged: their record
    keys and, row for row, their before and after images as tables of the data columns (None
    when this kind of change has no such image or the mode does not log it)."""

    op: str
    keys: pa.Array
    before: pa.Table | None = None
    after: pa.Table | None = None

    @property
    def num_rows(self) -> int:
        return len(self.keys)


def _union_string(value: str, branch: int) -> bytes:
    """A constant string in a two-branch union: the branch index, then the string."""
    data = value.encode("utf-8")
    return _varint(2 * branch) + _varint(2 * len(data)) + data


def _varint(zigzagged: int) -> bytes:
    out = bytearray()
    while zigzagged >= 0x80:
        out.append((zigzagged & 0x7F) | 0x80)
        zigzagged >>= 7
    out.append(zigzagged)
    return bytes(out)


def _image_rows(rows: pa.Table, data_schema: Mapping[str, Any]) -> pa.Array | None:
    """Each row's Avro binary under the table's data schema (as ``arrow_to_avro_records`` then
    fastavro would write it: the same conform and the same casts of logical types to their
    physical type), or None when the batch encoder cannot encode that schema."""
    arrow_schema = avro_to_arrow_schema(dict(data_schema))
    try:
        table = conform_table(rows.select(arrow_schema.names), arrow_schema)
    except (HoodieSchemaError, KeyError, pa.ArrowException):
        return None
    phys = pa.schema([f.with_type(physical_arrow_type(f.type)) for f in arrow_schema])
    if phys != arrow_schema:
        table = pa.Table.from_arrays([c.cast(t) if c.type != t else c for c, t in zip(table.columns, phys.types)],
                                     schema=phys)
    fields = abe.plan(strip_logical_types(dict(data_schema)), table)
    if fields is None:
        return None
    pieces: list[pa.Array] = []
    for name, kind, branch in fields:
        pieces.extend(abe.column_pieces(table.column(name), kind, branch)[0])
    if not pieces:
        return pa.array([b""] * table.num_rows, pa.binary())
    return pc.binary_join_element_wise(*pieces, b"", null_handling="skip")


def _segment_bytes(segment: CdcSegment, head: Sequence[bytes], with_key: int | None, images: Sequence[str],
                   data_schema: Mapping[str, Any]) -> bytes | None:
    """The length-prefixed CDC records of one segment: ``head`` constant fields first, then the
    record key (a union string of branch ``with_key``) if the mode logs it, then each image in
    ``images`` (``before``/``after``) as a nullable record."""
    n = segment.num_rows
    pieces: list[Any] = [pa.scalar(b"".join(head), pa.binary())]
    lengths = np.full(n, len(pieces[0].as_py()), np.int64)
    if with_key is not None:
        key_pieces, key_lengths = abe.column_pieces(pa.chunked_array([segment.keys.cast(pa.string())]), "string",
                                                    with_key)
        pieces.extend(key_pieces)
        lengths += key_lengths
    for which in images:
        rows = segment.before if which == "before" else segment.after
        if rows is None:
            pieces.append(pa.scalar(b"\x00", pa.binary()))
            lengths += 1
            continue
        encoded = _image_rows(rows, data_schema)
        if encoded is None:
            return None
        pieces.extend([pa.scalar(b"\x02", pa.binary()), encoded])
        lengths += 1 + pc.binary_length(encoded).to_numpy(zero_copy_only=False).astype(np.int64)
    prefix = abe.binary_rows(lengths.astype(">i4").view(np.uint8), np.full(n, 4, np.int64))
    joined = pc.binary_join_element_wise(prefix, *pieces, b"", null_handling="skip")
    offsets = np.frombuffer(joined.buffers()[1], np.int32, n + 1, joined.offset * 4)
    return joined.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]]


def cdc_records_content(instant_time: str, data_schema: Mapping[str, Any], mode: str,
                        segments: Sequence[CdcSegment], header: bytes) -> bytes | None:
    """``header`` then the CDC records of ``segments`` in ``mode``'s schema (HoodieCDCUtils:
    ``{op, ts_ms, before, after}``, ``{op, record_key, before}`` or OP_KEY_ONLY's
    ``{op, record_key}`` with its string-first unions); None when an image cannot be encoded
    in bulk (the caller takes the per-record path)."""
    out = [header]
    for segment in segments:
        if not segment.num_rows:
            continue
        if mode == "DATA_BEFORE_AFTER":
            body = _segment_bytes(segment, [_union_string(segment.op, 1), _union_string(instant_time, 1)], None,
                                  ("before", "after"), data_schema)
        elif mode == "DATA_BEFORE":
            body = _segment_bytes(segment, [_union_string(segment.op, 1)], 1, ("before",), data_schema)
        else:  # OP_KEY_ONLY: unions ["string", "null"]
            body = _segment_bytes(segment, [_union_string(segment.op, 0)], 0, (), data_schema)
        if body is None:
            return None
        out.append(body)
    return b"".join(out)


__all__ = ["CdcSegment", "cdc_records_content"]
