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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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


def _cells(rows: pa.Array, values: pa.Array) -> tuple[memoryview, np.ndarray]:
    """Every cell laid end to end (key length, value length, the KeyValue key, the value and
    a zero memstore timestamp each), built in Arrow rather than one Python object per cell,
    and the end offset of each cell in that buffer."""
    row_len = pc.binary_length(rows).to_numpy(zero_copy_only=False).astype(np.int64)
    value_len = pc.binary_length(values).to_numpy(zero_copy_only=False).astype(np.int64)
    head = np.empty(len(rows), dtype=[("key", ">i4"), ("value", ">i4"), ("row", ">i2")])
    head["key"], head["value"], head["row"] = row_len + 2 + len(_KEY_SUFFIX), value_len, row_len
    heads = pa.FixedSizeBinaryArray.from_buffers(pa.binary(10), len(rows), [None, pa.py_buffer(head.tobytes())])
    cells = pc.binary_join_element_wise(heads.cast(pa.large_binary()), rows, pa.scalar(_KEY_SUFFIX, pa.large_binary()),
                                        values, pa.scalar(b"\x00", pa.large_binary()),
                                        pa.scalar(b"", pa.large_binary()))
    offsets = np.frombuffer(cells.buffers()[1], np.int64)[cells.offset:cells.offset + len(cells) + 1]
    data = cells.buffers()[2]
    return memoryview(data if data is not None else b""), offsets


def write_hfile(records: Iterable[tuple[bytes, bytes]], schema_json: str, block_size: int = DEFAULT_BLOCK_SIZE,
                extra_info: dict[bytes, bytes] | None = None) -> bytes:
    """An HFile holding ``records`` (row key, value), which must be sorted by key and unique."""
    pairs = list(records)
    return write_hfile_arrays(pa.array([r for r, _ in pairs], pa.large_binary()),
                              pa.array([v for _, v in pairs], pa.large_binary()), schema_json, block_size, extra_info)


def write_hfile_arrays(rows: pa.Array, values: pa.Array, schema_json: str, block_size: int = DEFAULT_BLOCK_SIZE,
                       extra_info: dict[bytes, bytes] | None = None) -> bytes:
    """:func:`write_hfile` of row keys and values given as two binary arrays (a large index
    change is encoded without a Python object per cell)."""
    rows, values = rows.cast(pa.large_binary()), values.cast(pa.large_binary())
    count = len(rows)
    if count > 1:
        ordered = pc.less(rows.slice(0, count - 1), rows.slice(1))
        if not pc.all(ordered).as_py():
            at = pc.index(ordered, False).as_py()
            raise HoodieError(f"HFile records must be sorted and unique by key: {rows[at + 1].as_py()!r} after "
                              f"{rows[at].as_py()!r}.")
    out = bytearray()
    index: list[tuple[int, int, bytes]] = []  # (offset, on-disk size, first row)
    prev_offset = -1
    uncompressed = 0
    data, ends = _cells(rows, values) if count else (memoryview(b""), np.zeros(1, np.int64))
    start = 0
    while start < count:
        # a block takes cells until its body reaches the block size, the cell that crosses included
        stop = min(int(np.searchsorted(ends[1:], ends[start] + block_size, side="left")) + 1, count)
        block = _block(DATA_MAGIC, bytes(data[ends[start]:ends[stop]]), prev_offset)
        index.append((len(out), len(block), rows[start].as_py()))
        prev_offset = len(out)
        uncompressed += len(block)
        out.extend(block)
        start = stop
    last_row = rows[count - 1].as_py() if count else None
    key_bytes = int(pc.sum(pc.binary_length(rows)).as_py() or 0) + count * (2 + len(_KEY_SUFFIX))
    value_bytes = int(pc.sum(pc.binary_length(values)).as_py() or 0)
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
