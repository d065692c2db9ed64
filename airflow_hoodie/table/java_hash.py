"""Java's ``String.hashCode``, the one hash every Hudi layout decision made by a Java writer
rests on: which metadata-table file group a record-index or secondary-index key lives in,
which bucket a record hashes to, the iteration order of a Java ``HashMap`` in commit JSON.

Writers of any engine must agree on every bit, so it is computed exactly: ``h = 31*h + c``
over UTF-16 code units, wrapping as Java's int does. A batch of keys is hashed in numpy (the
work is one vector step per character position) when it is ASCII, the common case of keys;
other strings go one by one through the scalar definition.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_MASK32 = 0xFFFFFFFF


def java_string_hash(value: str) -> int:
    """``String.hashCode()``: UTF-16 code units, a signed 32-bit result."""
    h = 0
    data = value.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def _ascii_hashes(values: pa.Array) -> np.ndarray:
    """Unsigned 32-bit hashes of ASCII strings, by character position: step ``j`` folds the
    ``j``-th byte into every string longer than ``j``. Strings are visited longest first, so a
    step touches only those that still have characters."""
    values = values.cast(pa.large_string())
    offsets = np.frombuffer(values.buffers()[1], np.int64)[values.offset:values.offset + len(values) + 1]
    data = values.buffers()[2]
    data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    order = np.argsort(-lengths, kind="stable")
    by_length = lengths[order]
    starts = starts[order]
    h = np.zeros(len(values), np.uint32)
    thirty_one = np.uint32(31)
    for j in range(int(by_length[0]) if len(by_length) else 0):
        n = int(np.searchsorted(-by_length, -j, side="left"))  # strings longer than j come first
        h[:n] = h[:n] * thirty_one + data[starts[:n] + j]
    out = np.empty(len(values), np.uint32)
    out[order] = h
    return out


def java_string_hashes(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``String.hashCode()`` of each of ``values`` (no nulls), as unsigned 32-bit integers
    (``& 0xFFFFFFFF`` of Java's int)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.null_count:
        raise ValueError("java_string_hashes: Java hashes no null strings")
    if not len(values):
        return np.zeros(0, np.uint32)
    ascii_ = pc.string_is_ascii(values).to_numpy(zero_copy_only=False)
    if ascii_.all():
        return _ascii_hashes(values)
    out = np.zeros(len(values), np.uint32)
    if ascii_.any():
        out[ascii_] = _ascii_hashes(values.filter(pa.array(ascii_)))
    rest = np.flatnonzero(~ascii_)
    out[rest] = [java_string_hash(v) & _MASK32 for v in values.take(pa.array(rest)).to_pylist()]
    return out


def file_group_indexes(keys: pa.Array | pa.ChunkedArray, file_group_count: int) -> np.ndarray:
    """Hudi's ``mapRecordKeyToFileGroupIndex`` of each key: ``abs(abs(h) % n)`` of the
    signed hash. Java's inner ``abs(Integer.MIN_VALUE)`` stays negative and its ``%``
    truncates toward zero, so the outer ``abs`` gives ``2^31 % n`` there: exactly the
    remainder of the magnitude, which int64 arithmetic computes directly."""
    signed = java_string_hashes(keys).astype(np.int64)
    signed = np.where(signed >= 1 << 31, signed - (1 << 32), signed)
    return (np.abs(signed) % file_group_count).astype(np.int64)


__all__ = ["file_group_indexes", "java_string_hash", "java_string_hashes"]
