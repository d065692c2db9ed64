"""Data blocks: a batch of records in a log file, as Avro (Hudi's default) or parquet.

An Avro data block holds the writer schema in its header and the records as Avro binary,
each prefixed by its length; a parquet block holds a whole parquet file. Both decode to
Arrow tables, the form every reader and compaction merges.
"""

from __future__ import annotations

import functools
import io
import json
import struct
from typing import Any, Mapping, Sequence

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.errors import (
    HoodieNotSupportedError,
    HoodieSchemaError,
)
from airflow_hoodie.table.log import avro_batch_decoder, avro_batch_encoder
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
from airflow_hoodie.table.schema.avro_convert import (
    arrow_to_avro_records,
    avro_records_to_arrow,
    avro_to_arrow_schema,
    conform_table,
    strip_logical_types,
)


def _parsed(avro_schema: Any) -> Any:
    try:
        return fastavro.parse_schema(strip_logical_types(avro_schema))
    except Exception as exc:  # fastavro raises SchemaParseException/ValueError/KeyError
        raise HoodieSchemaError(f"Invalid Avro schema: {exc}") from exc


def encode_avro_records(records: Sequence[dict], avro_schema: Any) -> bytes:
    """Avro data block content for already-converted record dicts."""
    parsed = _parsed(avro_schema)
    buf = io.BytesIO()
    write = fastavro.schemaless_writer
    buf.write(INT32.pack(LOG_BLOCK_CONTENT_VERSION))
    buf.write(INT32.pack(len(records)))
    try:
        for rec in records:
            start = buf.tell()
            buf.write(b"\0\0\0\0")
            write(buf, parsed, rec)
            end = buf.tell()
            buf.seek(start)
            buf.write(INT32.pack(end - start - 4))
            buf.seek(end)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise HoodieSchemaError(f"A record does not match the Avro schema: {exc}") from exc
    return buf.getvalue()


def avro_data_block(
    records: pa.Table,
    avro_schema: dict | str,
    instant_time: str,
    extra_headers: Mapping[HeaderKey | int, str] | None = None,
) -> LogBlock:
    """An AVRO_DATA block holding ``records`` (converted to ``avro_schema``)."""
    schema_json = writer_schema_json(avro_schema)
    content = _bulk_avro_content(records, schema_json)
    if content is None:
        content = encode_avro_records(arrow_to_avro_records(records, schema_json), schema_json)
    return LogBlock(BlockType.AVRO_DATA, base_headers(instant_time, schema_json, extra_headers),
                    {}, content)


def _bulk_avro_content(records: pa.Table, schema_json: str) -> bytes | None:
    """The block content of ``records`` encoded column by column (:mod:`avro_batch_encoder`)
    when the schema's fields are all primitives; None otherwise, or when the records do not
    conform (the per-record path then encodes them, or says why it cannot)."""
    try:
        table = conform_table(records, _arrow_schema_of(schema_json))
    except HoodieSchemaError:
        return None
    fields = avro_batch_encoder.plan(_stripped_schema(schema_json), table)
    if fields is None:
        return None
    return avro_batch_encoder.encode(table, fields, INT32.pack(LOG_BLOCK_CONTENT_VERSION) + INT32.pack(table.num_rows))


@functools.lru_cache(maxsize=256)
def _stripped_schema(schema: str) -> Any:
    """Cached, as :func:`_arrow_schema_of`; callers only read it."""
    return strip_logical_types(schema)


def _require_schema(block: LogBlock) -> str:
    schema = block.schema
    if not schema:
        raise HoodieCorruptedLogError(
            f"{block.type_name} block at byte {block.offset} has no SCHEMA header"
        )
    if not _is_record_schema(schema):
        raise HoodieCorruptedLogError(
            f"{block.type_name} block at byte {block.offset} has a corrupt SCHEMA header: not an Avro record "
            f"schema with fields ({schema[:120]!r}...); its records cannot be decoded. Put the log file back "
            "from a backup, or restore the table to a savepoint before the block's instant."
        )
    return schema


@functools.lru_cache(maxsize=256)
def _is_record_schema(schema: str) -> bool:
    """Hudi writes a record schema with a non-empty field list: anything else (a damaged
    key such as ``fieldz``) would decode every record as empty and drop its update."""
    try:
        obj = json.loads(schema)
    except ValueError:
        return False
    fields = obj.get("fields") if isinstance(obj, dict) else None
    return isinstance(obj, dict) and obj.get("type") == "record" and isinstance(fields, list) and bool(fields)


@functools.lru_cache(maxsize=256)
def _arrow_schema_of(schema: str) -> pa.Schema:
    """Cached: the blocks of a file group usually share one SCHEMA header, and converting it
    per block cost about 1 ms of a compaction's 100k-row file group (pa.Schema is immutable)."""
    return avro_to_arrow_schema(schema)


def _block_arrow_schema(block: LogBlock, schema: str) -> pa.Schema:
    """Arrow schema of a block's SCHEMA header; a broken header is corrupt data."""
    try:
        return _arrow_schema_of(schema)
    except (HoodieSchemaError, HoodieNotSupportedError) as exc:
        raise HoodieCorruptedLogError(
            f"{block.type_name} block at byte {block.offset} has an unusable SCHEMA header: {exc}"
        ) from exc


def iter_avro_record_bytes(content: bytes) -> tuple[int, list[memoryview]]:
    """(content version, per-record Avro byte slices) of an Avro data block's content."""
    mv = memoryview(content)
    if len(mv) < 8:
        raise HoodieCorruptedLogError("Avro data block content is shorter than its header")
    version, count = struct.unpack_from(">ii", mv, 0)
    if count < 0:
        raise HoodieCorruptedLogError(f"Avro data block declares {count} records")
    pos = 8
    out = []
    n = len(mv)
    unpack = INT32.unpack_from
    for _ in range(count):
        if pos + 4 > n:
            raise HoodieCorruptedLogError("Avro data block ends before its declared record count")
        (ln,) = unpack(mv, pos)
        pos += 4
        if ln < 0 or pos + ln > n:
            raise HoodieCorruptedLogError(f"Avro record length {ln} runs past the block content")
        out.append(mv[pos : pos + ln])
        pos += ln
    return version, out


def decode_avro_records(block: LogBlock) -> list[dict]:
    """Record dicts of an AVRO_DATA/CDC_DATA block (timestamps/dates as plain ints)."""
    schema = _require_schema(block)
    _block_arrow_schema(block, schema)
    try:
        parsed = _parsed(schema)
    except HoodieSchemaError as exc:
        raise HoodieCorruptedLogError(
            f"{block.type_name} block at byte {block.offset} has an unusable SCHEMA header: {exc}"
        ) from exc
    _, slices = iter_avro_record_bytes(block.content)
    reader = fastavro.schemaless_reader
    try:
        return [reader(io.BytesIO(s), parsed, None) for s in slices]
    except (EOFError, ValueError, IndexError, KeyError, TypeError, OverflowError, MemoryError) as exc:
        raise HoodieCorruptedLogError(
            f"Avro record in block at byte {block.offset} cannot be decoded with the "
            f"block's schema: {exc!r}"
        ) from exc


def _projected(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    """``schema``'s fields named in ``columns`` (None: all), in schema order."""
    if columns is None:
        return schema
    wanted = set(columns)
    return pa.schema([f for f in schema if f.name in wanted], metadata=schema.metadata)


def decode_avro_data_block(block: LogBlock, columns: Sequence[str] | None = None) -> pa.Table:
    """The records of an AVRO_DATA (or CDC_DATA) block as a table in schema order, with
    Arrow types derived from the block's writer schema. ``columns``: the fields to return
    (None: all; names the block lacks are left out)."""
    if block.block_type not in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        raise HoodieNotSupportedError(f"{block.type_name} block is not an Avro data block")
    schema = _require_schema(block)
    if avro_batch_decoder.supports(schema):
        target = _block_arrow_schema(block, schema)
        projected = _projected(target, columns)
        # a projection the block has no field of still returns its row count
        names = projected.names if columns is not None and len(projected) else None
        try:
            table = conform_table(avro_batch_decoder.decode(schema, block.content, names),
                                  target if names is None else projected)
            return table if names is not None or columns is None else table.select([])
        except BaseException as exc:  # noqa: BLE001 - a Rust panic is a BaseException
            if not avro_batch_decoder.is_decode_failure(exc):
                raise
            # corrupt bytes: the per-record path below names them precisely
    records = decode_avro_records(block)
    try:
        table = avro_records_to_arrow(records, schema)
    except HoodieSchemaError as exc:
        raise HoodieCorruptedLogError(
            f"records of block at byte {block.offset} do not match its schema: {exc}"
        ) from exc
    return table if columns is None else table.select(_projected(table.schema, columns).names)


def parquet_data_block(
    records: pa.Table,
    avro_schema: dict | str,
    instant_time: str,
    compression: str = "gzip",
    extra_headers: Mapping[HeaderKey | int, str] | None = None,
) -> LogBlock:
    """A PARQUET_DATA block; ``compression`` defaults to Hudi's
    ``hoodie.parquet.compression.codec`` default (gzip)."""
    schema_json = writer_schema_json(avro_schema)
    arrow_schema = avro_to_arrow_schema(schema_json)
    table = conform_table(records, arrow_schema)
    table = table.replace_schema_metadata({"parquet.avro.schema": schema_json,
                                           "writer.model.name": "avro"})
    content = b""
    if table.num_rows:
        sink = io.BytesIO()
        pq.write_table(table, sink, compression=compression, store_schema=False)
        content = sink.getvalue()
    return LogBlock(BlockType.PARQUET_DATA,
                    base_headers(instant_time, schema_json, extra_headers), {}, content)


def decode_parquet_data_block(block: LogBlock, columns: Sequence[str] | None = None) -> pa.Table:
    """The records of a PARQUET_DATA block, cast to the block's writer schema. ``columns``:
    as :func:`decode_avro_data_block`."""
    table = _decode_parquet_data_block(block)
    return table if columns is None else table.select(_projected(table.schema, columns).names)


def _decode_parquet_data_block(block: LogBlock) -> pa.Table:
    if block.block_type != BlockType.PARQUET_DATA:
        raise HoodieNotSupportedError(f"{block.type_name} block is not a parquet data block")
    schema = block.schema
    target = _block_arrow_schema(block, schema) if schema else None
    if not block.content:
        return target.empty_table() if target is not None else pa.table({})
    try:
        table = pq.read_table(pa.BufferReader(block.content))
        table = table.replace_schema_metadata(None)
        return conform_table(table, target) if target is not None else table
    except (pa.ArrowException, OSError, ValueError, HoodieSchemaError) as exc:
        raise HoodieCorruptedLogError(
            f"parquet data block at byte {block.offset} is not a readable parquet file "
            f"matching its SCHEMA header: {exc}"
        ) from exc


def decode_data_block(block: LogBlock, columns: Sequence[str] | None = None) -> pa.Table:
    """Records of any supported data block type (``columns``: as :func:`decode_avro_data_block`)."""
    if block.block_type in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        return decode_avro_data_block(block, columns)
    if block.block_type == BlockType.PARQUET_DATA:
        return decode_parquet_data_block(block, columns)
    raise HoodieNotSupportedError(
        f"{block.type_name} blocks (at byte {block.offset}) are not supported; HFile blocks "
        "only occur in Hudi's metadata table."
    )
