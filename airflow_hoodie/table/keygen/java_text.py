"""A field value as Java prints it: the text Hudi's key generators put in record keys
and partition paths (Double.toString, BigDecimal.toString, java.sql.Timestamp, Hive's
path escaping), vectorized over Arrow columns, so our keys equal the keys Hudi wrote.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import (
    HoodieError,
    HoodieKeyError,
    HoodieNotSupportedError,
)
from airflow_hoodie.table.keygen import timestamp_format as tf
from airflow_hoodie.table.keygen.keygen_config import DEFAULT_PARTITION_PATH
from airflow_hoodie.table.schema.avro_convert import arrow_schema_to_avro, avro_to_arrow_schema


def _java_float_text(value: float, digits_repr: str) -> str:
    """``Double.toString``/``Float.toString`` given the shortest round-trip repr digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digits, exp = Decimal(digits_repr).normalize().as_tuple()
    ds = "".join(map(str, digits))
    e = len(ds) - 1 + exp  # value = d.ddd x 10^e
    neg = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if e >= 0:
            whole = ds[: e + 1].ljust(e + 1, "0")
            frac = ds[e + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-e - 1) + ds
        return f"{neg}{whole}.{frac}"
    return f"{neg}{ds[0]}.{ds[1:] or '0'}E{e}"


def _java_double(v: float) -> str:
    return _java_float_text(v, repr(float(v)))


def _java_float(v: float) -> str:
    return _java_float_text(float(v), str(np.float32(v)))


def _java_floating_text(arr: pa.Array) -> pa.Array:
    """Java ``Double/Float.toString`` for a whole column.

    Arrow's cast prints the same shortest round-trip digits as Java; inside Java's plain
    range ``[1e-3, 1e7)`` (and for zeros) only a missing ``.0`` differs, so those rows are
    fixed with string kernels and only the rest (scientific notation, NaN, infinities)
    goes through Python, one distinct value at a time.
    """
    if pa.types.is_float16(arr.type):
        arr = arr.cast(pa.float32())
    single = pa.types.is_float32(arr.type)
    text = arr.cast(pa.string())
    mag = pc.abs(arr)
    plain = pc.or_(pc.and_(pc.greater_equal(mag, 1e-3), pc.less(mag, 1e7)), pc.equal(mag, 0))
    plain = pc.fill_null(plain, True)
    has_point = pc.match_substring(text, ".")
    fixed = pc.if_else(has_point, text, pc.binary_join_element_wise(text, ".0", ""))
    if pc.all(plain).as_py():
        return fixed
    other = pc.invert(plain)
    slow = _map_distinct(pc.filter(arr, other), _java_float if single else _java_double)
    idx = np.flatnonzero(np.asarray(other.to_numpy(zero_copy_only=False), dtype=bool))
    out = np.asarray(fixed.to_pylist(), dtype=object) if len(idx) * 4 > len(arr) else None
    if out is not None:
        out[idx] = slow.to_pylist()
        return pa.array(out.tolist(), pa.string())
    # few rows need Python: splice them in with a take over [fixed rows..., slow rows...]
    take = np.arange(len(arr), dtype=np.int64)
    take[idx] = len(arr) + np.arange(len(idx), dtype=np.int64)
    return pa.concat_arrays([fixed, slow]).take(pa.array(take))


def _java_decimal(v: Decimal) -> str:
    return str(v)  # Python's Decimal.__str__ and BigDecimal.toString follow the same spec


def _map_distinct(arr: pa.Array, fn: Callable[[Any], str]) -> pa.Array:
    """Apply a Python formatter to each distinct value only, then broadcast (nulls stay null)."""
    enc = arr.dictionary_encode()
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    dictionary = enc.dictionary.to_pylist()
    texts = pa.array([fn(v) for v in dictionary], pa.string())
    return texts.take(enc.indices)


def _timestamp_text(arr: pa.Array) -> pa.Array:
    """``java.sql.Timestamp.toString`` (``yyyy-mm-dd hh:mm:ss.f``), assuming a UTC JVM."""
    ms = pc.cast(arr, pa.timestamp(arr.type.unit)).cast(pa.int64())
    if arr.type.unit == "us":
        ms = pc.divide(ms, 1000)  # Hudi divides micros by 1000 (truncating) before new Timestamp(ms)
    elif arr.type.unit == "ns":
        ms = pc.divide(ms, 1_000_000)
    elif arr.type.unit == "s":
        ms = pc.multiply(ms, 1000)
    ms_np = ms.to_numpy(zero_copy_only=False)
    valid = ~np.asarray(pc.is_null(ms).to_numpy(zero_copy_only=False), dtype=bool)
    vals = np.where(valid, np.nan_to_num(ms_np).astype(np.int64), 0)
    base = tf.JodaPattern("yyyy-MM-dd HH:mm:ss").format(np.floor_divide(vals, 1000) * 1000)
    frac = pa.array([("." + f"{i:03d}".rstrip("0")) if i else ".0" for i in range(1000)], pa.string())
    text = pc.binary_join_element_wise(base, frac.take(pa.array(np.mod(vals, 1000))), "")
    return pc.if_else(pa.array(valid), text, pa.nulls(len(text), pa.string()))


def java_string(arr: pa.Array | pa.ChunkedArray, field: str = "?", consistent_logical_timestamp: bool = False) -> pa.Array:
    """Text of each value as Hudi's ``HoodieAvroUtils.getNestedFieldValAsString`` renders it."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return arr.cast(pa.string())
    if getattr(pa.types, "is_string_view", lambda _t: False)(t):
        return arr.cast(pa.string())
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return arr.cast(pa.string())
    if pa.types.is_floating(t):
        return _java_floating_text(arr)
    if pa.types.is_decimal(t):
        return _map_distinct(arr, _java_decimal)
    if pa.types.is_date(t):
        return arr.cast(pa.date32()).cast(pa.string())
    if pa.types.is_timestamp(t):
        if consistent_logical_timestamp and t.unit in ("ms", "us"):
            return _timestamp_text(arr)
        return pc.cast(arr, pa.int64()).cast(pa.string())
    if pa.types.is_time(t):
        return pc.cast(arr, pa.int64() if pa.types.is_time64(t) else pa.int32()).cast(pa.string())
    if pa.types.is_null(t):
        return pa.nulls(len(arr), pa.string())
    raise HoodieNotSupportedError(
        f"Key field {field!r} has type {t}; record keys and partition paths can only be built from "
        "primitive fields (strings, numbers, booleans, decimals, dates, timestamps)."
    )


@functools.lru_cache(maxsize=None)
def _stored_type(t: pa.DataType) -> pa.DataType | None:
    """The Arrow type of the value a file stores for a column of type ``t`` (the Avro type
    the table's schema gives it, read back), or None when that schema cannot hold ``t``
    (the write refuses such a column with its own message). A timestamp without a zone
    keeps none: the unit rule is the same for local timestamps."""
    if pa.types.is_timestamp(t) and t.tz is None:
        zoned = _stored_type(pa.timestamp(t.unit, "UTC"))
        return None if zoned is None else pa.timestamp(zoned.unit)
    try:
        return avro_to_arrow_schema(arrow_schema_to_avro(pa.schema([pa.field("v", t)]), "k")).field("v").type
    except HoodieError:
        return None


def as_stored(col: pa.Array) -> pa.Array:
    """``col`` cast as the write casts it for its files (``align_to_schema``): Hudi derives keys
    and partition paths from the stored Avro value, so a ``timestamp[ms]`` (or s, ns) column
    keys by its timestamp-micros long, as the same record written by Spark does. Values the
    file could not hold are left as they are: the write refuses them when it casts."""
    stored = _stored_type(col.type)
    if stored is None or stored == col.type:
        return col
    try:
        return col.cast(stored)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return col


def column_of(batch: pa.Table | pa.RecordBatch, path: str) -> pa.Array:
    """Value of a (possibly nested ``a.b.c``) field as its file stores it (:func:`as_stored`);
    raises naming the field when it is absent."""
    parts = path.split(".")
    names = batch.schema.names
    if parts[0] not in names:
        raise HoodieKeyError(
            f"Key field {path!r} is not a column of the input (columns: {', '.join(names)}). "
            "Check hoodie.datasource.write.recordkey.field / partitionpath.field."
        )
    col = batch.column(parts[0])
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    for depth, name in enumerate(parts[1:], start=1):
        if not pa.types.is_struct(col.type) or col.type.get_field_index(name) < 0:
            raise HoodieKeyError(f"Key field {path!r}: {'.'.join(parts[:depth])!r} has no field {name!r}.")
        child = pc.struct_field(col, name)
        # a null parent struct makes the nested value null
        col = pc.if_else(col.is_valid(), child, pa.nulls(len(child), child.type)) if col.null_count else child
    return as_stored(col)


def field_text(batch: pa.Table | pa.RecordBatch, path: str, consistent_ts: bool) -> pa.Array:
    return java_string(column_of(batch, path), path, consistent_ts)


_ESCAPED = set(chr(c) for c in range(0x20)) | set('"#%\'*/:=?\\\x7f{[]^')


_ESCAPE_RE = "[" + "".join("\\x%02x" % ord(c) for c in sorted(_ESCAPED)) + "]"


def escape_path_name(value: str) -> str:
    """One value escaped like Hudi's ``PartitionPathEncodeUtils.escapePathName``."""
    if not value:
        return DEFAULT_PARTITION_PATH
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def unescape_path_name(path: str) -> str:
    """Inverse of :func:`escape_path_name` (``%XX`` sequences back to characters)."""
    out = []
    i = 0
    while i < len(path):
        c = path[i]
        if c == "%" and i + 2 < len(path):
            try:
                out.append(chr(int(path[i + 1 : i + 3], 16)))
                i += 3
                continue
            except ValueError:
                pass
        out.append(c)
        i += 1
    return "".join(out)


def escape_array(arr: pa.Array) -> pa.Array:
    needs = pc.match_substring_regex(arr, _ESCAPE_RE)
    if not pc.any(needs).as_py():
        return arr
    return _map_distinct(arr, lambda v: v if v is None else escape_path_name(v))
