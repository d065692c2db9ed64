"""Hudi log blocks: the framing of one block, its headers, and the command block.

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

* AVRO_DATA / CDC_DATA (:mod:`data_block`): int32 content version (3), int32 record count, then per record
  int32 length + schemaless Avro binary of the record under the ``SCHEMA`` header.
* PARQUET_DATA: a complete parquet file.
* DELETE (:mod:`delete_block`): int32 content version (3), int32 length, Avro binary of a
  ``HoodieDeleteRecordList`` (version 2 used Java serialization; not readable here).
* COMMAND: no content; ``COMMAND_BLOCK_TYPE`` header "0" = rollback of the blocks whose
  ``INSTANT_TIME`` equals the ``TARGET_INSTANT_TIME`` header.
* CORRUPT: never written; a reader yields the bytes it had to skip as one.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Mapping

from airflow_hoodie.errors import (
    HoodieCorruptedDataError,
    HoodieNotSupportedError,
)
from airflow_hoodie.table.schema.avro_convert import parse_avro_schema

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
    #: Hudi 1.x: the base file instant ``RECORD_POSITIONS`` refer to (written only with
    #: ``hoodie.write.record.positions``; a delta commit's blocks carry INSTANT_TIME and
    #: SCHEMA by default, in table version 8/9 as in 6)
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class CommandType(IntEnum):
    """``HoodieCommandBlockTypeEnum``."""

    ROLLBACK_BLOCK = 0


DATA_BLOCK_TYPES = frozenset(
    {BlockType.AVRO_DATA, BlockType.HFILE_DATA, BlockType.PARQUET_DATA, BlockType.CDC_DATA}
)

INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")


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
    parts = [INT32.pack(len(metadata))]
    for k, v in metadata.items():
        data = v.encode("utf-8")
        parts.append(INT32.pack(int(k)))
        parts.append(INT32.pack(len(data)))
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
    (count,) = INT32.unpack_from(buf, pos)
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
            INT64.pack(block_size),
            INT32.pack(block.version),
            INT32.pack(int(block.block_type)),
            header,
            INT64.pack(len(content)),
            content,
            footer,
            INT64.pack(block_size + len(MAGIC)),
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
        (block_size,) = INT64.unpack_from(buf, pos)
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
        (clen,) = INT64.unpack_from(buf, pos)
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


def writer_schema_json(avro_schema: dict | str) -> str:
    if isinstance(avro_schema, str):
        parse_avro_schema(avro_schema)  # validate
        return avro_schema
    return json.dumps(avro_schema, separators=(",", ":"))


def base_headers(instant_time: str, schema_json: str | None, extra: Mapping | None) -> dict:
    headers: dict[HeaderKey | int, str] = {HeaderKey.INSTANT_TIME: instant_time}
    if schema_json is not None:
        headers[HeaderKey.SCHEMA] = schema_json
    if extra:
        headers.update(extra)
    return headers



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


