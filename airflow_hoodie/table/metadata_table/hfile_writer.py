"""Writing HFiles (version 3) as Hudi 1.x's own HFile writer lays them out.

The counterpart of :mod:`hfile_reader`: sorted cells in data blocks (uncompressed), a
single-level root data index, an empty meta index, the file info (with the values' Avro
schema under ``schema``) and the protobuf trailer. Cell keys are HBase KeyValue keys
(row, empty family and qualifier, ``Long.MAX_VALUE`` timestamp, type Put) followed by a
zero memstore timestamp, as Hudi writes them; blocks carry the 4-byte checksum slots of
checksum type NULL. The metadata table's base files and HFile log blocks are such files.
"""

from __future__ import annotations

import struct
import time
from typing import Iterable

from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.metadata_table.hfile_reader import (
    BLOCK_HEADER_SIZE,
    FILE_INFO_MAGIC,
    MAX_MEMSTORE_TS_KEY,
    PBUF_MAGIC,
    SCHEMA_KEY,
    TRAILER_MAGIC,
    TRAILER_SIZE,
)

DATA_MAGIC = b"DATABLK*"
ROOT_INDEX_MAGIC = b"IDXROOT2"
BYTES_PER_CHECKSUM = 16384
CHECKSUM_TYPE_NULL = 0
CODEC_NONE = 2
COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
#: Hudi's default HFile block size for the metadata table (hoodie.metadata... 1 MB)
DEFAULT_BLOCK_SIZE = 1024 * 1024
_KEY_SUFFIX = b"\x00" + struct.pack(">q", 0x7FFFFFFFFFFFFFFF) + b"\x04"  # family len 0, ts MAX, Put


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint((number << 3) | 2) + _varint(len(value)) + value


def _hadoop_vint(value: int) -> bytes:
    """Hadoop WritableUtils.writeVLong for the lengths in the root index."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length, neg = -112, value < 0
    if neg:
        value, length = ~value, -120
    size = (value.bit_length() + 7) // 8
    return struct.pack(">b", length - size) + value.to_bytes(size, "big")


def _block(magic: bytes, body: bytes, prev_offset: int) -> bytes:
    chunks = -(-(BLOCK_HEADER_SIZE + len(body)) // BYTES_PER_CHECKSUM)
    checksums = b"\x00" * (4 * chunks)
    header = struct.pack(">8siiqBii", magic, len(body) + len(checksums), len(body), prev_offset,
                         CHECKSUM_TYPE_NULL, BYTES_PER_CHECKSUM, BLOCK_HEADER_SIZE + len(body))
    return header + body + checksums


def _cell(row: bytes, value: bytes) -> bytes:
    key = struct.pack(">h", len(row)) + row + _KEY_SUFFIX
    return struct.pack(">ii", len(key), len(value)) + key + value + b"\x00"


def write_hfile(records: Iterable[tuple[bytes, bytes]], schema_json: str, block_size: int = DEFAULT_BLOCK_SIZE,
                extra_info: dict[bytes, bytes] | None = None) -> bytes:
    """An HFile holding ``records`` (row key, value), which must be sorted by key and unique."""
    out = bytearray()
    index: list[tuple[int, int, bytes]] = []  # (offset, on-disk size, first row)
    body = bytearray()
    first_row: bytes | None = None
    last_row: bytes | None = None
    prev_offset = -1
    count = key_bytes = value_bytes = 0
    uncompressed = 0

    def flush() -> None:
        nonlocal body, first_row, prev_offset, uncompressed
        if not body:
            return
        block = _block(DATA_MAGIC, bytes(body), prev_offset)
        index.append((len(out), len(block), first_row or b""))
        prev_offset = len(out)
        uncompressed += len(block)
        out.extend(block)
        body, first_row = bytearray(), None

    for row, value in records:
        if last_row is not None and row <= last_row:
            raise HoodieError(f"HFile records must be sorted and unique by key: {row!r} after {last_row!r}.")
        if first_row is None:
            first_row = row
        body += _cell(row, value)
        last_row = row
        count += 1
        key_bytes += len(row) + 2 + len(_KEY_SUFFIX)
        value_bytes += len(value)
        if len(body) >= block_size:
            flush()
    flush()
    last_data_offset = index[-1][0] if index else 0
    load_on_open = len(out)
    root = b"".join(struct.pack(">qi", off, size) + _hadoop_vint(len(k) + 2) + struct.pack(">h", len(k)) + k
                    for off, size, k in index)
    out += _block(ROOT_INDEX_MAGIC, root, -1)
    out += _block(ROOT_INDEX_MAGIC, b"", -1)  # no meta blocks (no bloom filter)
    info = {
        SCHEMA_KEY: schema_json.encode("utf-8"),
        b"hfile.LASTKEY": struct.pack(">h", len(last_row or b"")) + (last_row or b""),
        b"hfile.AVG_KEY_LEN": struct.pack(">i", key_bytes // count if count else 0),
        b"hfile.AVG_VALUE_LEN": struct.pack(">i", value_bytes // count if count else 0),
        b"KEY_VALUE_VERSION": struct.pack(">i", 1),
        MAX_MEMSTORE_TS_KEY: struct.pack(">q", 0),
        b"hfile.CREATE_TIME_TS": struct.pack(">q", int(time.time() * 1000)),
        **(extra_info or {}),
    }
    pairs = b"".join(_field(1, _field(1, k) + _field(2, v)) for k, v in info.items())
    file_info_offset = len(out)
    out += _block(FILE_INFO_MAGIC, PBUF_MAGIC + _varint(len(pairs)) + pairs, -1)
    trailer = b"".join([
        _field(1, file_info_offset), _field(2, load_on_open), _field(3, len(root)),
        _field(4, uncompressed), _field(5, len(index)), _field(6, 0), _field(7, count), _field(8, 1),
        _field(9, 0), _field(10, last_data_offset), _field(11, COMPARATOR.encode("utf-8")), _field(12, CODEC_NONE),
    ])
    raw = TRAILER_MAGIC + _varint(len(trailer)) + trailer
    out += raw + b"\x00" * (TRAILER_SIZE - 4 - len(raw)) + bytes([0]) + (3).to_bytes(3, "big")
    return bytes(out)
