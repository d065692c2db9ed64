"""Hudi log blocks: the framing of one block and the content codecs of each block type.

A block on disk (log format version 1, as Hudi 0.14/0.15 writes it)::

    "#HUDI#"                      magic, 6 bytes
    int64  block size             everything after this field, i.e. total - 14
    int32  log format version     1
    int32  block type             ordinal of BlockType
    header map                    int32 count, then per entry int32 key ordinal,
                                  int32 value length, value bytes (UTF-8)
    int64  content length
    content
    footer map                    same encoding as the header map
    int64  reverse pointer        total - 8 (block size + 6); lets a reader check a block
                                  is complete and walk the file backwards

All integers are big-endian (Java ``DataOutputStream``). Content per type:

* AVRO_DATA / CDC_DATA: int32 content version (3), int32 record count, then per record
  int32 length + schemaless Avro binary of the record under the ``SCHEMA`` header.
* PARQUET_DATA: a complete parquet file.
* DELETE: int32 content version (3), int32 length, Avro binary of a
  ``HoodieDeleteRecordList`` (version 2 used Java serialization; not readable here).
* COMMAND: no content; ``COMMAND_BLOCK_TYPE`` header "0" = rollback of the blocks whose
  ``INSTANT_TIME`` equals the ``TARGET_INSTANT_TIME`` header.
* CORRUPT: never written; a reader yields the bytes it had to skip as one.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import functools
import io
import json
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Iterable, Mapping, Sequence

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.table.log import avro_batch_decoder
from airflow_hoodie.errors import (
    HoodieCorruptedDataError,
    HoodieNotSupportedError,
    HoodieSchemaError,
)
from airflow_hoodie.table.schema.avro_convert import (
    arrow_to_avro_records,
    avro_records_to_arrow,
    avro_to_arrow_schema,
    conform_table,
    parse_avro_schema,
    strip_logical_types,
)

MAGIC = b"#HUDI#"
#: Log format version written by Hudi 0.x (``HoodieLogFormat.CURRENT_VERSION``).
LOG_FORMAT_VERSION = 1
#: Content version of data and delete blocks (``HoodieLogBlock.version`` in 0.14/0.15).
LOG_BLOCK_CONTENT_VERSION = 3


class HoodieCorruptedLogError(HoodieCorruptedDataError):
    """A log file or block cannot be decoded (bad framing, content or metadata)."""


class HoodieUnknownLogBlockError(HoodieCorruptedLogError, HoodieNotSupportedError):
    """A block whose type ordinal we do not know: a newer Hudi's block type, or corruption
    (the bytes cannot tell which), so it is both -- never skipped as if it held nothing."""


class BlockType(IntEnum):
    """``HoodieLogBlockType``; serialized as the ordinal."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    """``HeaderMetadataType``; serialized as the ordinal."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    #: Hudi 1.x partial updates: the block's records carry only the changed columns
    IS_PARTIAL = 7


class CommandType(IntEnum):
    """``HoodieCommandBlockTypeEnum``."""

    ROLLBACK_BLOCK = 0


DATA_BLOCK_TYPES = frozenset(
    {BlockType.AVRO_DATA, BlockType.HFILE_DATA, BlockType.PARQUET_DATA, BlockType.CDC_DATA}
)

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def _key(k: int) -> HeaderKey | int:
    try:
        return HeaderKey(k)
    except ValueError:
        return k


@dataclass
class LogBlock:
    """One block of a log file.

    ``offset`` is where the block's magic starts in its file (for a corrupt block: the
    magic that preceded the skipped bytes, or the first skipped byte if there was none),
    ``size`` the bytes it occupies there. Blocks built in memory have offset -1 until
    written. ``content`` holds the raw content bytes (for a corrupt block: the skipped
    bytes).
    """

    block_type: BlockType | int
    headers: dict[HeaderKey | int, str] = field(default_factory=dict)
    footers: dict[HeaderKey | int, str] = field(default_factory=dict)
    content: bytes = b""
    offset: int = -1
    size: int = 0
    version: int = LOG_FORMAT_VERSION
    corrupt: bool = False

    # -- convenience ---------------------------------------------------------
    @property
    def instant_time(self) -> str | None:
        return self.headers.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        return self.headers.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        return self.headers.get(HeaderKey.SCHEMA)

    @property
    def is_data(self) -> bool:
        return self.block_type in DATA_BLOCK_TYPES

    @property
    def is_delete(self) -> bool:
        return self.block_type == BlockType.DELETE

    @property
    def is_command(self) -> bool:
        return self.block_type == BlockType.COMMAND

    @property
    def is_rollback(self) -> bool:
        return (
            self.block_type == BlockType.COMMAND
            and self.headers.get(HeaderKey.COMMAND_BLOCK_TYPE, "").strip()
            == str(int(CommandType.ROLLBACK_BLOCK))
        )

    @property
    def type_name(self) -> str:
        try:
            return BlockType(self.block_type).name
        except ValueError:
            return f"UNKNOWN({int(self.block_type)})"

    def to_bytes(self) -> bytes:
        """The block as it appears on disk (see :func:`serialize_block`)."""
        return serialize_block(self)


# ----------------------------------------------------------------------------------
# framing
# ----------------------------------------------------------------------------------


def encode_metadata(metadata: Mapping[HeaderKey | int, str]) -> bytes:
    """Hudi's header/footer map encoding (``HoodieLogBlock.getLogMetadataBytes``)."""
    parts = [_I32.pack(len(metadata))]
    for k, v in metadata.items():
        data = v.encode("utf-8")
        parts.append(_I32.pack(int(k)))
        parts.append(_I32.pack(len(data)))
        parts.append(data)
    return b"".join(parts)


def decode_metadata(buf: bytes | memoryview, pos: int, end: int | None = None) -> tuple[dict, int]:
    """Decode a header/footer map at ``pos``; returns (map, position after it).

    Raises :class:`HoodieCorruptedLogError` if the map runs past ``end``.
    """
    end = len(buf) if end is None else end

    def need(n: int) -> None:
        if pos + n > end:
            raise HoodieCorruptedLogError(
                f"log block metadata at byte {pos} runs past the end of its block"
            )

    need(4)
    (count,) = _I32.unpack_from(buf, pos)
    pos += 4
    if count < 0 or count > 1024:
        raise HoodieCorruptedLogError(f"log block metadata count {count} is not plausible")
    out: dict[HeaderKey | int, str] = {}
    for _ in range(count):
        need(8)
        k, n = struct.unpack_from(">ii", buf, pos)
        pos += 8
        if n < 0:
            raise HoodieCorruptedLogError(f"negative metadata value length {n}")
        need(n)
        try:
            out[_key(k)] = bytes(buf[pos : pos + n]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HoodieCorruptedLogError(f"log block metadata value is not UTF-8: {exc}") from exc
        pos += n
    return out, pos


def serialize_block(block: LogBlock) -> bytes:
    """Frame ``block`` exactly as ``HoodieLogFormatWriter.appendBlocks`` does."""
    if block.block_type == BlockType.CORRUPT:
        raise HoodieNotSupportedError("Corrupt blocks are only ever read, never written.")
    header = encode_metadata(block.headers)
    footer = encode_metadata(block.footers)
    content = block.content
    # version + type + header + content length + content + footer + reverse pointer
    block_size = 4 + 4 + len(header) + 8 + len(content) + len(footer) + 8
    return b"".join(
        (
            MAGIC,
            _I64.pack(block_size),
            _I32.pack(block.version),
            _I32.pack(int(block.block_type)),
            header,
            _I64.pack(len(content)),
            content,
            footer,
            _I64.pack(block_size + len(MAGIC)),
        )
    )


def parse_block_body(
    buf: bytes | memoryview,
    offset: int,
    *,
    where: str = "log file",
    file_offset: int | None = None,
) -> LogBlock:
    """Parse a block whose framing was already validated; ``buf[offset:]`` starts at
    its magic and holds the whole block. ``file_offset`` is where that is in the file
    (defaults to ``offset``), used for messages and :attr:`LogBlock.offset`. Raises
    :class:`HoodieCorruptedLogError` when the inside of the block is inconsistent."""
    start = offset
    offset = start if file_offset is None else file_offset
    pos = start + len(MAGIC)
    end = pos
    try:
        if bytes(buf[start : start + len(MAGIC)]) != MAGIC:
            raise HoodieCorruptedLogError(f"{where}: no '#HUDI#' magic at byte {offset}")
        (block_size,) = _I64.unpack_from(buf, pos)
        pos += 8
        end = pos + block_size
        if block_size < 0 or end > len(buf):
            raise HoodieCorruptedLogError(
                f"{where}: block at byte {offset} declares {block_size} bytes but only "
                f"{len(buf) - pos} follow"
            )
        version, btype = struct.unpack_from(">ii", buf, pos)
        pos += 8
        if version == 0:
            raise HoodieNotSupportedError(
                f"{where}: block at byte {offset} uses log format version 0 (pre-0.5 Hudi); "
                "rewrite the table with a current Hudi version."
            )
        if btype < 0 or btype >= len(BlockType):
            raise HoodieUnknownLogBlockError(
                f"{where}: invalid block type {btype} in block at byte {offset}: airflow-hoodie knows log block "
                f"types {', '.join(f'{t.value}={t.name}' for t in BlockType)}. Either a newer Hudi wrote this "
                "block or the file is corrupt; nothing past it is read. Read the table with the Hudi version "
                "that wrote it, or compact the file group."
            )
        headers, pos = decode_metadata(buf, pos, end)
        if pos + 8 > end:
            raise HoodieCorruptedLogError(f"{where}: block at byte {offset} is truncated")
        (clen,) = _I64.unpack_from(buf, pos)
        pos += 8
        if clen < 0 or pos + clen > end - 8:
            raise HoodieCorruptedLogError(
                f"{where}: content length {clen} of block at byte {offset} exceeds the block"
            )
        content = bytes(buf[pos : pos + clen])
        pos += clen
        footers, pos = decode_metadata(buf, pos, end)
        if pos + 8 != end:
            raise HoodieCorruptedLogError(
                f"{where}: block at byte {offset} has {end - pos - 8} unexpected bytes "
                "before its reverse pointer"
            )
    except HoodieCorruptedLogError as exc:
        if str(exc).startswith(where):
            raise
        raise HoodieCorruptedLogError(f"{where}: block at byte {offset}: {exc}") from exc
    except struct.error as exc:
        raise HoodieCorruptedLogError(
            f"{where}: block at byte {offset} is truncated ({exc})"
        ) from exc
    return LogBlock(
        block_type=BlockType(btype),
        headers=headers,
        footers=footers,
        content=content,
        offset=offset,
        size=end - start,
        version=version,
    )


# ----------------------------------------------------------------------------------
# Avro data blocks
# ----------------------------------------------------------------------------------


def _schema_json(avro_schema: dict | str) -> str:
    if isinstance(avro_schema, str):
        parse_avro_schema(avro_schema)  # validate
        return avro_schema
    return json.dumps(avro_schema, separators=(",", ":"))


def _parsed(avro_schema: Any) -> Any:
    try:
        return fastavro.parse_schema(strip_logical_types(avro_schema))
    except Exception as exc:  # fastavro raises SchemaParseException/ValueError/KeyError
        raise HoodieSchemaError(f"Invalid Avro schema: {exc}") from exc


def _base_headers(instant_time: str, schema_json: str | None, extra: Mapping | None) -> dict:
    headers: dict[HeaderKey | int, str] = {HeaderKey.INSTANT_TIME: instant_time}
    if schema_json is not None:
        headers[HeaderKey.SCHEMA] = schema_json
    if extra:
        headers.update(extra)
    return headers


def encode_avro_records(records: Sequence[dict], avro_schema: Any) -> bytes:
    """Avro data block content for already-converted record dicts."""
    parsed = _parsed(avro_schema)
    buf = io.BytesIO()
    write = fastavro.schemaless_writer
    buf.write(_I32.pack(LOG_BLOCK_CONTENT_VERSION))
    buf.write(_I32.pack(len(records)))
    try:
        for rec in records:
            start = buf.tell()
            buf.write(b"\0\0\0\0")
            write(buf, parsed, rec)
            end = buf.tell()
            buf.seek(start)
            buf.write(_I32.pack(end - start - 4))
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
    schema_json = _schema_json(avro_schema)
    rows = arrow_to_avro_records(records, schema_json)
    content = encode_avro_records(rows, schema_json)
    return LogBlock(BlockType.AVRO_DATA, _base_headers(instant_time, schema_json, extra_headers),
                    {}, content)


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


def _block_arrow_schema(block: LogBlock, schema: str) -> pa.Schema:
    """Arrow schema of a block's SCHEMA header; a broken header is corrupt data."""
    try:
        return avro_to_arrow_schema(schema)
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
    unpack = _I32.unpack_from
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


def decode_avro_data_block(block: LogBlock) -> pa.Table:
    """The records of an AVRO_DATA (or CDC_DATA) block as a table in schema order, with
    Arrow types derived from the block's writer schema."""
    if block.block_type not in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        raise HoodieNotSupportedError(f"{block.type_name} block is not an Avro data block")
    schema = _require_schema(block)
    if avro_batch_decoder.supports(schema):
        target = _block_arrow_schema(block, schema)
        try:
            return conform_table(avro_batch_decoder.decode(schema, block.content), target)
        except BaseException as exc:  # noqa: BLE001 - a Rust panic is a BaseException
            if not avro_batch_decoder.is_decode_failure(exc):
                raise
            # corrupt bytes: the per-record path below names them precisely
    records = decode_avro_records(block)
    try:
        return avro_records_to_arrow(records, schema)
    except HoodieSchemaError as exc:
        raise HoodieCorruptedLogError(
            f"records of block at byte {block.offset} do not match its schema: {exc}"
        ) from exc


# ----------------------------------------------------------------------------------
# Parquet data blocks
# ----------------------------------------------------------------------------------


def parquet_data_block(
    records: pa.Table,
    avro_schema: dict | str,
    instant_time: str,
    compression: str = "gzip",
    extra_headers: Mapping[HeaderKey | int, str] | None = None,
) -> LogBlock:
    """A PARQUET_DATA block; ``compression`` defaults to Hudi's
    ``hoodie.parquet.compression.codec`` default (gzip)."""
    schema_json = _schema_json(avro_schema)
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
                    _base_headers(instant_time, schema_json, extra_headers), {}, content)


def decode_parquet_data_block(block: LogBlock) -> pa.Table:
    """The records of a PARQUET_DATA block, cast to the block's writer schema."""
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


def decode_data_block(block: LogBlock) -> pa.Table:
    """Records of any supported data block type."""
    if block.block_type in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        return decode_avro_data_block(block)
    if block.block_type == BlockType.PARQUET_DATA:
        return decode_parquet_data_block(block)
    raise HoodieNotSupportedError(
        f"{block.type_name} blocks (at byte {block.offset}) are not supported; HFile blocks "
        "only occur in Hudi's metadata table."
    )


# ----------------------------------------------------------------------------------
# Delete blocks
# ----------------------------------------------------------------------------------


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
    content = _I32.pack(LOG_BLOCK_CONTENT_VERSION) + _I32.pack(len(data)) + data
    schema_json = _schema_json(schema) if schema is not None else None
    return LogBlock(BlockType.DELETE, _base_headers(instant_time, schema_json, extra_headers), {},
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


# ----------------------------------------------------------------------------------
# Command blocks
# ----------------------------------------------------------------------------------


def rollback_command_block(instant_time: str, target_instant_time: str) -> LogBlock:
    """A COMMAND block rolling back the blocks written by ``target_instant_time``."""
    headers: dict[HeaderKey | int, str] = {
        HeaderKey.INSTANT_TIME: instant_time,
        HeaderKey.TARGET_INSTANT_TIME: target_instant_time,
        HeaderKey.COMMAND_BLOCK_TYPE: str(int(CommandType.ROLLBACK_BLOCK)),
    }
    return LogBlock(BlockType.COMMAND, headers, {}, b"")


def header_names(headers: Mapping[HeaderKey | int, str]) -> dict[str, str]:
    """Headers keyed by name (``INSTANT_TIME`` ...), unknown ordinals as ``"KEY_<n>"``."""
    return {(k.name if isinstance(k, HeaderKey) else f"KEY_{int(k)}"): v for k, v in headers.items()}


__all__ = [
    "BlockType",
    "CommandType",
    "DATA_BLOCK_TYPES",
    "DELETE_RECORD_LIST_SCHEMA",
    "DeleteRecord",
    "HeaderKey",
    "HoodieCorruptedLogError",
    "LOG_BLOCK_CONTENT_VERSION",
    "LOG_FORMAT_VERSION",
    "LogBlock",
    "MAGIC",
    "avro_data_block",
    "decode_avro_data_block",
    "decode_avro_records",
    "decode_data_block",
    "decode_delete_block",
    "decode_metadata",
    "decode_parquet_data_block",
    "delete_block",
    "delete_records_to_arrow",
    "encode_avro_records",
    "encode_metadata",
    "header_names",
    "iter_avro_record_bytes",
    "parquet_data_block",
    "parse_block_body",
    "rollback_command_block",
    "serialize_block",
]
