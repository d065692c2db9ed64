"""Column values as space-curve coordinates, the way Hudi maps them (per Arrow type).

Hudi's ``direct`` build method maps each value of a sort column to a fixed-width key:

- for the z-order curve, 8 bytes compared unsigned (``BinaryUtil``): a long with its sign bit
  flipped; an int (and a short, a boolean as 0/1) as 4 bytes with the sign bit flipped, left-padded
  to 8 (so its top 32 bits are zero); a byte as itself, unflipped, left-padded; a double's raw
  bits with the sign bit flipped when positive, every bit inverted when negative and untouched
  when zero or NaN; a string's (or binary's) UTF-8 bytes, the first 8, or left-padded with zeros
  when shorter; dates and timestamps as epoch milliseconds, decimals as their truncated long,
  both as longs;
- for the Hilbert curve, a long: ints as themselves, doubles as ``doubleToLongBits``, strings and
  binaries as the big-endian long of their 8 padded bytes, booleans as ``Long.MAX_VALUE``/0.

Nulls take Hudi's sentinels (the type's MAX_VALUE, an empty string, ``false``). Here those keys
are uint64 arrays (the 8 bytes read big-endian), so an unsigned comparison of two keys is Hudi's
byte comparison. The ``sample`` method ranks values instead; :func:`sample_values` gives the
values it ranks (longs, or strings). Everything is vectorised over whole columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieNotSupportedError

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
SIGN64 = np.uint64(1 << 63)
MS_PER_DAY = 86_400_000
_UNIT_PER_MS = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}


def _column(data: pa.Table | pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = data.combine_chunks() if isinstance(data, pa.ChunkedArray) else data
    return arr


def _unsupported(name: str, type_: pa.DataType, method: str) -> HoodieNotSupportedError:
    return HoodieNotSupportedError(
        f"Column {name!r} of type {type_} cannot be ordered on a space-filling curve ({method}): Hudi maps only "
        "numbers, strings, binaries, booleans, dates, timestamps and decimals. Sort by other columns "
        "(hoodie.clustering.plan.strategy.sort.columns) or use hoodie.layout.optimize.strategy=linear.")


def _ints(arr: pa.Array, null: int) -> np.ndarray:
    """An integer-valued column as int64, nulls replaced by ``null``."""
    return np.asarray(pc.fill_null(pc.cast(arr, pa.int64()), null).to_numpy(zero_copy_only=False), np.int64)


def _epoch_ms(arr: pa.Array) -> pa.Array:
    """Dates and timestamps as epoch milliseconds (java.sql.Date/Timestamp.getTime in UTC)."""
    t = arr.type
    if pa.types.is_date32(t):
        return pc.multiply(pc.cast(arr.view(pa.int32()), pa.int64()), MS_PER_DAY)
    if pa.types.is_date64(t):
        return arr.view(pa.int64())
    raw = pc.cast(arr.view(pa.int64()), pa.int64())
    per_ms = _UNIT_PER_MS[t.unit]
    if per_ms is None:
        return pc.multiply(raw, 1000)
    if per_ms == 1:
        return raw
    ms = np.floor_divide(np.asarray(raw.fill_null(0).to_numpy(zero_copy_only=False), np.int64), per_ms)
    return pa.array(ms, pa.int64(), mask=pc.is_null(raw).to_numpy(zero_copy_only=False))


def _doubles(arr: pa.Array, null: float) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.cast(arr, pa.float64()), null).to_numpy(zero_copy_only=False), np.float64)


def _first_8_bytes(arr: pa.Array, null: bytes) -> np.ndarray:
    """The big-endian value of each value's first 8 bytes, shorter values left-padded with zeros
    (Hudi's ``paddingTo8Byte``): the uint64 whose 8 bytes are the padded bytes."""
    binary = pc.cast(arr, pa.large_binary()) if not pa.types.is_large_binary(arr.type) else arr
    binary = pc.fill_null(binary, pa.scalar(null, pa.large_binary()))
    binary = pc.binary_slice(binary, 0, 8).combine_chunks() if isinstance(binary, pa.ChunkedArray) \
        else pc.binary_slice(binary, 0, 8)
    offsets = np.frombuffer(binary.buffers()[1], np.int64)[binary.offset:binary.offset + len(binary) + 1]
    values = np.frombuffer(binary.buffers()[2], np.uint8) if binary.buffers()[2] is not None \
        else np.zeros(1, np.uint8)
    lengths = offsets[1:] - offsets[:-1]
    key = np.zeros(len(binary), np.uint64)
    for j in range(8):
        has = lengths > j
        idx = np.minimum(offsets[:-1] + j, max(len(values) - 1, 0))
        key = np.where(has, (key << np.uint64(8)) | values[idx].astype(np.uint64), key)
    return key


def _double_to_8_bytes(x: np.ndarray) -> np.ndarray:
    bits = x.view(np.uint64)
    return np.where(x > 0, bits ^ SIGN64, np.where(x < 0, ~bits, bits))


def _double_to_long_bits(x: np.ndarray) -> np.ndarray:
    """Java's ``doubleToLongBits``: the raw bits, every NaN as the canonical one."""
    bits = x.view(np.int64).copy()
    bits[np.isnan(x)] = 0x7FF8000000000000
    return bits


def z_key(data: pa.ChunkedArray | pa.Array, name: str = "") -> np.ndarray:
    """Hudi's 8-byte z-order key of each value (``mapColumnValueTo8Bytes``), as uint64."""
    arr = _column(data)
    t = arr.type
    if pa.types.is_int64(t) or pa.types.is_uint64(t):
        return _ints(arr, LONG_MAX).view(np.uint64) ^ SIGN64
    if pa.types.is_int8(t):
        return (_ints(arr, 127) & 0xFF).astype(np.uint64)
    if pa.types.is_integer(t):  # int32, int16 and the smaller unsigned: intTo8Byte
        null = 32767 if pa.types.is_int16(t) else INT_MAX
        return ((_ints(arr, null) & 0xFFFFFFFF) ^ (1 << 31)).astype(np.uint64)
    if pa.types.is_boolean(t):
        return ((_ints(pc.fill_null(arr, False), 0) & 1) ^ (1 << 31)).astype(np.uint64)
    if pa.types.is_floating(t):
        null = float(np.finfo(np.float32).max) if not pa.types.is_float64(t) else float(np.finfo(np.float64).max)
        return _double_to_8_bytes(_doubles(arr, null))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _first_8_bytes(arr, b"")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return _first_8_bytes(arr, b"\x00")
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return _ints(_epoch_ms(arr), LONG_MAX).view(np.uint64) ^ SIGN64
    if pa.types.is_decimal(t):
        return _ints(pc.cast(arr, pa.int64(), safe=False), LONG_MAX).view(np.uint64) ^ SIGN64
    raise _unsupported(name, t, "z-order")


def hilbert_long(data: pa.ChunkedArray | pa.Array, name: str = "") -> np.ndarray:
    """Hudi's long of each value for the Hilbert curve (``mapColumnValueToLong``), as int64."""
    arr = _column(data)
    t = arr.type
    nulls = pc.is_null(arr).to_numpy(zero_copy_only=False)
    if pa.types.is_int8(t):
        out = _ints(arr, 0) & 0xFF
    elif pa.types.is_integer(t):
        out = _ints(arr, 0)
    elif pa.types.is_boolean(t):
        out = np.where(_ints(pc.fill_null(arr, False), 0) == 1, LONG_MAX, 0).astype(np.int64)
        nulls = np.zeros(len(arr), bool)  # a null boolean is false
    elif pa.types.is_floating(t):
        out = _double_to_long_bits(_doubles(arr, 0.0))
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        out = _first_8_bytes(arr, b"").view(np.int64)
    elif pa.types.is_date(t) or pa.types.is_timestamp(t):
        out = _ints(_epoch_ms(arr), 0)
    elif pa.types.is_decimal(t):
        out = _ints(pc.cast(arr, pa.int64(), safe=False), 0)
    else:
        raise _unsupported(name, t, "hilbert")
    return np.where(nulls, LONG_MAX, out).astype(np.int64)


def sample_values(data: pa.ChunkedArray | pa.Array, name: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(values, nulls) that Hudi's ``sample`` method ranks: longs (ints as themselves, doubles
    as ``doubleToLongBits`` compared as signed longs, dates and timestamps as epoch
    milliseconds, decimals truncated) or, for strings, an object array of ``str``."""
    arr = _column(data)
    t = arr.type
    nulls = np.asarray(pc.is_null(arr).to_numpy(zero_copy_only=False), bool)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        values: Any = np.asarray(pc.fill_null(arr, "").to_numpy(zero_copy_only=False), object)
        return values, nulls
    if pa.types.is_integer(t):
        return _ints(arr, LONG_MAX), nulls
    if pa.types.is_floating(t):
        return _double_to_long_bits(_doubles(arr, 0.0)), nulls
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return _ints(_epoch_ms(arr), LONG_MAX), nulls
    if pa.types.is_decimal(t):
        return _ints(pc.cast(arr, pa.int64(), safe=False), LONG_MAX), nulls
    raise HoodieNotSupportedError(
        f"Column {name!r} of type {t} cannot be ranked by hoodie.layout.optimize.curve.build.method=sample: it "
        "ranks numbers, strings, dates, timestamps and decimals. Use hoodie.layout.optimize.curve.build.method=direct "
        "for this column, or sort by other columns.")
