"""Hudi's key generators over arrow batches: ``_hoodie_record_key`` and ``_hoodie_partition_path``.

Every record Hudi writes is addressed by (record key, partition path), both derived from data
columns by the table's key generator (``org.apache.hudi.keygen``). An upsert only finds the
existing copy of a record if we derive exactly the same strings Hudi did, so this module
follows Hudi 0.14's Avro key generators value for value:

* a field value becomes text the way Java's ``toString`` prints the Avro value: ints and
  longs in decimal, booleans ``true``/``false``, doubles/floats as ``Double.toString`` /
  ``Float.toString`` (``1.0``, ``1.0E10``), decimals as ``BigDecimal.toString``, dates as
  ``yyyy-MM-dd``, timestamps as their raw epoch micros/millis (unless
  ``hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled``);
* simple keys must be non-null and non-empty; complex keys are ``f1:v1,f2:v2`` with
  ``__null__``/``__empty__`` placeholders and fail only when every part is null/empty;
* partition paths join fields with ``/``; null or empty values become
  ``__HIVE_DEFAULT_PARTITION__``; hive style prefixes ``field=``; url-encoding escapes
  like Hive's ``FileUtils.escapePathName``;
* the timestamp-based generator formats the partition field with Joda patterns
  (:mod:`airflow_hoodie.table.keygen.timestamp_format`).

Everything works on whole columns with ``pyarrow.compute``; Python only touches the distinct
values of columns whose Java formatting has no arrow kernel (floats, decimals, url-encoding).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.config import ConfigKey, HoodieConfig, register
from airflow_hoodie.errors import HoodieConfigError, HoodieKeyError, HoodieNotSupportedError
from airflow_hoodie.table.keygen import timestamp_format as tf

__all__ = [
    "DEFAULT_PARTITION_PATH",
    "NULL_RECORDKEY_PLACEHOLDER",
    "EMPTY_RECORDKEY_PLACEHOLDER",
    "KeyGenerator",
    "SimpleKeyGenerator",
    "ComplexKeyGenerator",
    "NonpartitionedKeyGenerator",
    "GlobalDeleteKeyGenerator",
    "TimestampBasedKeyGenerator",
    "CustomKeyGenerator",
    "escape_path_name",
    "unescape_path_name",
    "java_string",
]

DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"
NULL_RECORDKEY_PLACEHOLDER = "__null__"
EMPTY_RECORDKEY_PLACEHOLDER = "__empty__"
RECORD_KEY_PARTS_SEPARATOR = ","
COMPOSITE_KEY_VALUE_SEPARATOR = ":"
PARTITION_PATH_SEPARATOR = "/"

# ---------------------------------------------------------------------------------------
# Configuration (Hudi names and defaults)
# ---------------------------------------------------------------------------------------

RECORDKEY_FIELD = ConfigKey(
    "hoodie.datasource.write.recordkey.field",
    None,
    "Comma-separated record key field(s); nested fields as a.b.",
    ("hoodie.table.recordkey.fields",),
)
PARTITIONPATH_FIELD = ConfigKey(
    "hoodie.datasource.write.partitionpath.field",
    None,
    "Comma-separated partition path field(s); for CustomKeyGenerator each as field:SIMPLE|TIMESTAMP.",
    ("hoodie.table.partition.fields",),
)
KEYGENERATOR_CLASS = ConfigKey(
    "hoodie.datasource.write.keygenerator.class",
    None,
    "Key generator class (org.apache.hudi.keygen.*); inferred from the key fields when unset.",
    ("hoodie.table.keygenerator.class", "hoodie.bootstrap.keygen.class"),
)
KEYGENERATOR_TYPE = ConfigKey(
    "hoodie.datasource.write.keygenerator.type",
    None,
    "Key generator type: SIMPLE, COMPLEX, TIMESTAMP, CUSTOM, NON_PARTITION, GLOBAL_DELETE.",
    ("hoodie.table.keygenerator.type", "hoodie.bootstrap.keygen.type"),
)
HIVE_STYLE = ConfigKey(
    "hoodie.datasource.write.hive_style_partitioning",
    "false",
    "Partition directories named field=value.",
)
URL_ENCODE = ConfigKey(
    "hoodie.datasource.write.partitionpath.urlencode",
    "false",
    "Escape partition path values like Hive's FileUtils.escapePathName.",
)
CONSISTENT_LOGICAL_TIMESTAMP = ConfigKey(
    "hoodie.datasource.write.keygenerator.consistent.logical.timestamp.enabled",
    "false",
    "Render timestamp-millis/micros key fields as java.sql.Timestamp text instead of raw numbers.",
)
COMPLEX_NEW_ENCODING = ConfigKey(
    "hoodie.write.complex.keygen.new.encoding",
    "false",
    "ComplexKeyGenerator with one record key field: true writes the bare value (Hudi 0.14.1/0.15.0 "
    "behaviour), false writes field:value (Hudi 0.14.0 and the fixed releases).",
)
COMPLEX_TABLE_ENCODING = ConfigKey(
    "hoodie.table.complex.keygen.encoding",
    None,
    "Table-recorded single-field complex key encoding: FIELD_PREFIXED or VALUE_ONLY (wins over the writer flag).",
)
TS_TYPE = ConfigKey(
    "hoodie.keygen.timebased.timestamp.type",
    None,
    "UNIX_TIMESTAMP, DATE_STRING, MIXED, EPOCHMILLISECONDS, EPOCHMICROSECONDS or SCALAR.",
    ("hoodie.deltastreamer.keygen.timebased.timestamp.type",),
)
TS_SCALAR_UNIT = ConfigKey(
    "hoodie.keygen.timebased.timestamp.scalar.time.unit",
    "SECONDS",
    "Time unit of SCALAR timestamps (java.util.concurrent.TimeUnit name).",
    ("hoodie.deltastreamer.keygen.timebased.timestamp.scalar.time.unit",),
)
TS_INPUT_FORMAT = ConfigKey(
    "hoodie.keygen.timebased.input.dateformat",
    "",
    "Joda pattern(s) of DATE_STRING/MIXED partition values.",
    ("hoodie.deltastreamer.keygen.timebased.input.dateformat",),
)
TS_INPUT_FORMAT_DELIMITER = ConfigKey(
    "hoodie.keygen.timebased.input.dateformat.list.delimiter.regex",
    ",",
    "Regex separating several input date formats.",
    ("hoodie.deltastreamer.keygen.timebased.input.dateformat.list.delimiter.regex",),
)
TS_INPUT_TZ = ConfigKey(
    "hoodie.keygen.timebased.input.timezone",
    "",
    "Time zone of input date strings without an offset.",
    ("hoodie.deltastreamer.keygen.timebased.input.timezone",),
)
TS_OUTPUT_FORMAT = ConfigKey(
    "hoodie.keygen.timebased.output.dateformat",
    "",
    "Joda pattern of the partition path.",
    ("hoodie.deltastreamer.keygen.timebased.output.dateformat",),
)
TS_OUTPUT_TZ = ConfigKey(
    "hoodie.keygen.timebased.output.timezone",
    "",
    "Time zone the partition path is rendered in.",
    ("hoodie.deltastreamer.keygen.timebased.output.timezone",),
)
TS_TZ = ConfigKey(
    "hoodie.keygen.timebased.timezone",
    "",
    "Time zone of both input and output (wins over input/output time zone).",
    ("hoodie.deltastreamer.keygen.timebased.timezone",),
)
DATETIME_PARSER = ConfigKey(
    "hoodie.keygen.datetime.parser.class",
    "org.apache.hudi.keygen.parser.HoodieDateTimeParser",
    "Date time parser class; only Hudi's default is supported.",
    ("hoodie.deltastreamer.keygen.datetime.parser.class",),
)

register(
    RECORDKEY_FIELD,
    PARTITIONPATH_FIELD,
    KEYGENERATOR_CLASS,
    KEYGENERATOR_TYPE,
    HIVE_STYLE,
    URL_ENCODE,
    CONSISTENT_LOGICAL_TIMESTAMP,
    COMPLEX_NEW_ENCODING,
    COMPLEX_TABLE_ENCODING,
    TS_TYPE,
    TS_SCALAR_UNIT,
    TS_INPUT_FORMAT,
    TS_INPUT_FORMAT_DELIMITER,
    TS_INPUT_TZ,
    TS_OUTPUT_FORMAT,
    TS_OUTPUT_TZ,
    TS_TZ,
    DATETIME_PARSER,
)

_PKG = "org.apache.hudi.keygen."
_CLASS_TO_TYPE = {
    "SimpleKeyGenerator": "SIMPLE",
    "SimpleAvroKeyGenerator": "SIMPLE",
    "ComplexKeyGenerator": "COMPLEX",
    "ComplexAvroKeyGenerator": "COMPLEX",
    "NonpartitionedKeyGenerator": "NON_PARTITION",
    "NonpartitionedAvroKeyGenerator": "NON_PARTITION",
    "TimestampBasedKeyGenerator": "TIMESTAMP",
    "TimestampBasedAvroKeyGenerator": "TIMESTAMP",
    "CustomKeyGenerator": "CUSTOM",
    "CustomAvroKeyGenerator": "CUSTOM",
    "GlobalDeleteKeyGenerator": "GLOBAL_DELETE",
    "GlobalAvroDeleteKeyGenerator": "GLOBAL_DELETE",
}


# ---------------------------------------------------------------------------------------
# Java text of values
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# Field access
# ---------------------------------------------------------------------------------------


def _column(batch: pa.Table | pa.RecordBatch, path: str) -> pa.Array:
    """Value of a (possibly nested ``a.b.c``) field; raises naming the field when it is absent."""
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
    return col


def _field_text(batch: pa.Table | pa.RecordBatch, path: str, consistent_ts: bool) -> pa.Array:
    return java_string(_column(batch, path), path, consistent_ts)


# ---------------------------------------------------------------------------------------
# Partition path escaping (Hive FileUtils.escapePathName)
# ---------------------------------------------------------------------------------------

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


def _escape_array(arr: pa.Array) -> pa.Array:
    needs = pc.match_substring_regex(arr, _ESCAPE_RE)
    if not pc.any(needs).as_py():
        return arr
    return _map_distinct(arr, lambda v: v if v is None else escape_path_name(v))


# ---------------------------------------------------------------------------------------
# Key generators
# ---------------------------------------------------------------------------------------


def _explicit(cfg: HoodieConfig, key: ConfigKey) -> str | None:
    """A setting only if the user (or hoodie.properties) gave it, under its name or an alternative.

    Field lists and generator names must not come from registry defaults: the registry is
    process-wide and another module may register a different default for the same key.
    """
    for name in (key.key, *key.alternatives):
        if name in cfg:
            return cfg.get(name)
    return None


def _split_fields(raw: str | None) -> list[str]:
    if raw is None:
        return []
    return [f.strip() for f in raw.split(",") if f.strip()]


def _null_or_empty(text: pa.Array) -> np.ndarray:
    mask = pc.or_kleene(pc.is_null(text), pc.equal(pc.utf8_length(text), 0))
    return np.asarray(pc.fill_null(mask, True).to_numpy(zero_copy_only=False), dtype=bool)


class KeyGenerator:
    """Base: config shared by Hudi's built-in key generators, and the factory."""

    class_name = ""

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        cfg = props if isinstance(props, HoodieConfig) else HoodieConfig(props or {})
        self.config = cfg
        self.record_key_fields: list[str] = _split_fields(_explicit(cfg, RECORDKEY_FIELD))
        self.partition_path_fields: list[str] = _split_fields(_explicit(cfg, PARTITIONPATH_FIELD))
        self.hive_style_partitioning = cfg.get_bool(HIVE_STYLE.key)
        self.url_encode_partitioning = cfg.get_bool(URL_ENCODE.key)
        self.consistent_logical_timestamp = cfg.get_bool(CONSISTENT_LOGICAL_TIMESTAMP.key)

    # -- factory ---------------------------------------------------------------------

    @staticmethod
    def key_generator_type(props: Mapping[str, str] | HoodieConfig) -> str:
        """SIMPLE / COMPLEX / TIMESTAMP / CUSTOM / NON_PARTITION / GLOBAL_DELETE for a config."""
        cfg = props if isinstance(props, HoodieConfig) else HoodieConfig(props)
        cls = (_explicit(cfg, KEYGENERATOR_CLASS) or "").strip()
        if cls:
            short = cls.rsplit(".", 1)[-1]
            if short not in _CLASS_TO_TYPE:
                raise HoodieNotSupportedError(
                    f"Key generator class {cls!r} is not supported; use one of Hudi's built-in generators "
                    f"({', '.join(sorted({_PKG + k for k in _CLASS_TO_TYPE if 'Avro' not in k}))})."
                )
            return _CLASS_TO_TYPE[short]
        typ = (_explicit(cfg, KEYGENERATOR_TYPE) or "").strip().upper()
        if typ:
            if typ not in _TYPES:
                raise HoodieConfigError(
                    f"hoodie.datasource.write.keygenerator.type={typ!r} is not one of {', '.join(sorted(_TYPES))}."
                )
            return typ
        # KeyGenUtils.inferKeyGeneratorType
        partitions = (_explicit(cfg, PARTITIONPATH_FIELD) or "").strip()
        n_keys = len(_split_fields(_explicit(cfg, RECORDKEY_FIELD)))
        if not partitions:
            by_partition = "NON_PARTITION"
        elif ":" in partitions.split(",")[0]:
            by_partition = "CUSTOM"
        elif len(partitions.split(",")) == 1:
            by_partition = "SIMPLE"
        else:
            by_partition = "COMPLEX"
        if n_keys > 1 and by_partition == "SIMPLE":
            return "COMPLEX"
        return by_partition

    @staticmethod
    def from_config(props: Mapping[str, str] | HoodieConfig) -> "KeyGenerator":
        """The key generator a write config (or hoodie.properties) describes."""
        cfg = props if isinstance(props, HoodieConfig) else HoodieConfig(props)
        return _TYPES[KeyGenerator.key_generator_type(cfg)](cfg)

    # -- API -------------------------------------------------------------------------

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        raise NotImplementedError

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        raise NotImplementedError

    def keys(self, batch: pa.Table | pa.RecordBatch) -> tuple[pa.Array, pa.Array]:
        """(record keys, partition paths) for every row."""
        return self.record_keys(batch), self.partition_paths(batch)

    @property
    def partition_field_names(self) -> list[str]:
        """Partition field names without CustomKeyGenerator's ``:TYPE`` suffixes."""
        return [f.split(":", 1)[0] for f in self.partition_path_fields]

    # -- building blocks (KeyGenUtils) -----------------------------------------------

    @property
    def auto_record_keys(self) -> bool:
        """No record key field: Hudi 0.14+ generates the keys at write time
        (``<instant>_<partition id>_<row id>``), for inserts only."""
        return not self.record_key_fields

    def _require_record_key_fields(self) -> None:
        """Auto-generated keys are legal (see :attr:`auto_record_keys`); callers that need
        keys computed from fields check :attr:`auto_record_keys` first."""

    def _simple_record_key(self, batch: pa.Table | pa.RecordBatch, field: str) -> pa.Array:
        text = _field_text(batch, field, self.consistent_logical_timestamp)
        bad = _null_or_empty(text)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = text[row].as_py()
            raise HoodieKeyError(
                f"recordKey value: {value!r} for field: {field!r} cannot be null or empty "
                f"({int(bad.sum())} row(s), first at row {row}). Every record needs a record key."
            )
        return text

    def _complex_record_key(self, batch: pa.Table | pa.RecordBatch, fields: Sequence[str]) -> pa.Array:
        parts: list[pa.Array | str] = []
        all_bad = None
        for i, field in enumerate(fields):
            text = _field_text(batch, field, self.consistent_logical_timestamp)
            is_null = np.asarray(pc.is_null(text).to_numpy(zero_copy_only=False), dtype=bool)
            bad = _null_or_empty(text)
            all_bad = bad if all_bad is None else (all_bad & bad)
            value = pc.if_else(
                pa.array(is_null),
                NULL_RECORDKEY_PLACEHOLDER,
                pc.if_else(pa.array(bad), EMPTY_RECORDKEY_PLACEHOLDER, pc.fill_null(text, "")),
            )
            if i:
                parts.append(RECORD_KEY_PARTS_SEPARATOR)
            parts.append(field + COMPOSITE_KEY_VALUE_SEPARATOR)
            parts.append(value)
        if all_bad is not None and all_bad.any():
            row = int(np.flatnonzero(all_bad)[0])
            raise HoodieKeyError(
                f"Record key fields {list(fields)} are all null or empty at row {row} "
                f"({int(all_bad.sum())} row(s)); at least one must have a value."
            )
        return pc.binary_join_element_wise(*parts, "")

    def _partition_value(self, batch: pa.Table | pa.RecordBatch, field: str, text: pa.Array | None = None) -> pa.Array:
        """One field's path segment: default partition, url-encoding and hive style applied."""
        if text is None:
            text = _field_text(batch, field, self.consistent_logical_timestamp)
        bad = pa.array(_null_or_empty(text))
        value = text
        if self.url_encode_partitioning:
            value = _escape_array(pc.fill_null(text, ""))
        value = pc.if_else(bad, DEFAULT_PARTITION_PATH, value)
        if self.hive_style_partitioning:
            value = pc.binary_join_element_wise(f"{field}=", value, "")
        return value

    def _join_partitions(self, segments: Sequence[pa.Array], n: int) -> pa.Array:
        if not segments:
            return pa.array([""] * n, pa.string())
        if len(segments) == 1:
            return segments[0]
        parts: list[pa.Array | str] = []
        for i, seg in enumerate(segments):
            if i:
                parts.append(PARTITION_PATH_SEPARATOR)
            parts.append(seg)
        return pc.binary_join_element_wise(*parts, "")


class SimpleKeyGenerator(KeyGenerator):
    """One record key field, one partition field (``SimpleAvroKeyGenerator``)."""

    class_name = _PKG + "SimpleKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()
        if self.record_key_fields and len(self.record_key_fields) != 1:
            raise HoodieConfigError(
                f"SimpleKeyGenerator takes exactly one record key field, got {self.record_key_fields}; "
                "use org.apache.hudi.keygen.ComplexKeyGenerator for composite keys."
            )
        if len(self.partition_path_fields) > 1:
            raise HoodieConfigError(
                f"SimpleKeyGenerator takes one partition path field, got {self.partition_path_fields}; "
                "use org.apache.hudi.keygen.ComplexKeyGenerator for several."
            )
        if not self.partition_path_fields:
            raise HoodieConfigError(
                "SimpleKeyGenerator needs hoodie.datasource.write.partitionpath.field; "
                "for an unpartitioned table use org.apache.hudi.keygen.NonpartitionedKeyGenerator."
            )

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return self._simple_record_key(batch, self.record_key_fields[0])

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return self._partition_value(batch, self.partition_path_fields[0])


class ComplexKeyGenerator(KeyGenerator):
    """Composite record keys ``f1:v1,f2:v2`` and multi-level partition paths."""

    class_name = _PKG + "ComplexKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()
        self.encode_single_field_name = _single_field_prefixed(self.config)

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        if len(self.record_key_fields) == 1 and not self.encode_single_field_name:
            return self._simple_record_key(batch, self.record_key_fields[0])
        return self._complex_record_key(batch, self.record_key_fields)

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        segs = [self._partition_value(batch, f) for f in self.partition_path_fields]
        return self._join_partitions(segs, batch.num_rows)


def _single_field_prefixed(cfg: HoodieConfig) -> bool:
    """Whether a single-field complex key is written as ``field:value`` (HUDI-7001 saga).

    Hudi 0.14.0 and earlier (and every fixed release) write ``field:value``; 0.14.1, 0.15.0 and
    1.0.0-1.0.2 wrote the bare value. A table-recorded encoding wins over the writer flag.
    """
    recorded = (_explicit(cfg, COMPLEX_TABLE_ENCODING) or "").strip().upper()
    if recorded:
        if recorded not in ("FIELD_PREFIXED", "VALUE_ONLY"):
            raise HoodieConfigError(
                f"hoodie.table.complex.keygen.encoding={recorded!r} must be FIELD_PREFIXED or VALUE_ONLY."
            )
        return recorded == "FIELD_PREFIXED"
    return not cfg.get_bool(COMPLEX_NEW_ENCODING.key)


class NonpartitionedKeyGenerator(KeyGenerator):
    """Every record in the single, empty-named partition."""

    class_name = _PKG + "NonpartitionedKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()
        self.partition_path_fields = []

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        if len(self.record_key_fields) == 1:
            return self._simple_record_key(batch, self.record_key_fields[0])
        return self._complex_record_key(batch, self.record_key_fields)

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return pa.array([""] * batch.num_rows, pa.string())


class GlobalDeleteKeyGenerator(KeyGenerator):
    """Composite record keys, empty partition path (deletes across all partitions)."""

    class_name = _PKG + "GlobalDeleteKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return self._complex_record_key(batch, self.record_key_fields)

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return pa.array([""] * batch.num_rows, pa.string())


_TIME_UNIT_MS = {
    "NANOSECONDS": (1, 1_000_000),
    "MICROSECONDS": (1, 1000),
    "MILLISECONDS": (1, 1),
    "SECONDS": (1000, 1),
    "MINUTES": (60_000, 1),
    "HOURS": (3_600_000, 1),
    "DAYS": (86_400_000, 1),
}
_TS_TYPES = ("UNIX_TIMESTAMP", "DATE_STRING", "MIXED", "EPOCHMILLISECONDS", "EPOCHMICROSECONDS", "SCALAR")
_LONG_MAX = 2**63 - 1
_LONG_MIN = -(2**63)


class _TimestampPartitioner:
    """The partition side of ``TimestampBasedAvroKeyGenerator`` for one field."""

    def __init__(self, owner: KeyGenerator, field: str):
        cfg = owner.config
        self.owner = owner
        self.field = field
        parser = (cfg.get(DATETIME_PARSER.key) or DATETIME_PARSER.default or "").strip()
        if parser != DATETIME_PARSER.default:
            raise HoodieNotSupportedError(f"Custom date time parser {parser!r} is not supported.")
        ts_type = (_explicit(cfg, TS_TYPE) or "").strip().upper()
        input_formats = _explicit(cfg, TS_INPUT_FORMAT) or ""
        if not ts_type:
            if input_formats.strip():
                # hoodie.properties keeps the formats but not the type; date strings are implied.
                ts_type = "DATE_STRING"
            else:
                raise HoodieConfigError(
                    "Setting 'hoodie.keygen.timebased.timestamp.type' is required for TimestampBasedKeyGenerator "
                    f"(one of {', '.join(_TS_TYPES)})."
                )
        if ts_type not in _TS_TYPES:
            raise HoodieConfigError(f"hoodie.keygen.timebased.timestamp.type={ts_type!r} is not one of {', '.join(_TS_TYPES)}.")
        self.ts_type = ts_type
        unit = {"EPOCHMILLISECONDS": "MILLISECONDS", "EPOCHMICROSECONDS": "MICROSECONDS", "UNIX_TIMESTAMP": "SECONDS"}.get(ts_type)
        if ts_type == "SCALAR":
            unit = (cfg.get(TS_SCALAR_UNIT.key) or "SECONDS").strip().upper()
            if unit not in _TIME_UNIT_MS:
                raise HoodieConfigError(f"hoodie.keygen.timebased.timestamp.scalar.time.unit={unit!r} is not a TimeUnit.")
        self.time_unit = unit
        out_fmt = _explicit(cfg, TS_OUTPUT_FORMAT)
        self.output = tf.require_pattern(out_fmt, TS_OUTPUT_FORMAT.key)
        if TS_TZ.key in cfg or any(a in cfg for a in TS_TZ.alternatives):
            both = tf.java_time_zone(cfg.get(TS_TZ.key) or "GMT")
            self.input_zone, self.output_zone = both, both
        else:
            self.input_zone = tf.java_time_zone(cfg.get(TS_INPUT_TZ.key))
            self.output_zone = tf.java_time_zone(cfg.get(TS_OUTPUT_TZ.key))
        self.inputs: list[tf.JodaPattern] = []
        if ts_type in ("DATE_STRING", "MIXED"):
            delim = cfg.get(TS_INPUT_FORMAT_DELIMITER.key) or ","
            pats = [p.strip() for p in re.split(delim, input_formats) if p.strip()]
            if not pats:
                raise HoodieConfigError(
                    f"{TS_INPUT_FORMAT.key} is required when the timestamp type is {ts_type}."
                )
            self.inputs = [tf.JodaPattern(p) for p in pats]

    def _default_value(self) -> Any:
        if self.ts_type in ("DATE_STRING", "MIXED"):
            zone = self.input_zone or self.output_zone or tf.UTC
            return self.inputs[0].format(np.array([1], dtype=np.int64), [zone])[0].as_py()
        return 1

    def _to_millis(self, longs: np.ndarray) -> np.ndarray:
        if self.time_unit is None:
            raise HoodieKeyError(
                f"Partition field {self.field!r} is numeric but the timestamp type is {self.ts_type}; "
                "set hoodie.keygen.timebased.timestamp.type to UNIX_TIMESTAMP, EPOCHMILLISECONDS or SCALAR."
            )
        mul, div = _TIME_UNIT_MS[self.time_unit]
        if div > 1:
            q = np.abs(longs) // div
            return np.where(longs < 0, -q, q)  # Java division truncates toward zero
        with np.errstate(over="ignore"):
            out = longs * mul
        lim = _LONG_MAX // mul
        return np.where(longs > lim, _LONG_MAX, np.where(longs < -lim, _LONG_MIN, out))

    def paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        col = _column(batch, self.field)
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        t = col.type
        n = len(col)
        zones: list[tf.Zone] = [self.output_zone or tf.DEFAULT_JVM_ZONE]
        zone_index = np.zeros(n, dtype=np.int64)
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            if not self.inputs:
                raise HoodieKeyError(
                    f"Partition field {self.field!r} holds strings; set hoodie.keygen.timebased.timestamp.type="
                    "DATE_STRING and hoodie.keygen.timebased.input.dateformat."
                )
            values = col.cast(pa.string())
            if values.null_count:  # Hudi substitutes epoch+1ms rendered in the first input format
                values = pc.fill_null(values, self._default_value())
            instants, parsed_zones, parsed_index = tf.parse_to_zones(self.inputs, values, self.input_zone)
            if self.output_zone is None:
                zones, zone_index = parsed_zones, parsed_index
        else:
            instants = self._instants(col)
        text = self.output.format(instants, zones, zone_index)
        if self.owner.url_encode_partitioning:
            text = _escape_array(text)
        if self.owner.hive_style_partitioning:
            text = pc.binary_join_element_wise(f"{self.field}=", text, "")
        return text

    def _instants(self, col: pa.Array) -> np.ndarray:
        """Epoch millis of non-string values: Java ``longValue()`` then the configured time unit.

        Floats truncate, decimals truncate, dates count epoch days (in the configured unit,
        as Hudi does), timestamps are their raw Avro long unless consistent logical timestamps
        are enabled (then they are instants already). Nulls become ``1L`` like Hudi's default.
        """
        t = col.type
        valid = np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        already_ms = False
        if pa.types.is_integer(t):
            longs = pc.fill_null(col.cast(pa.int64()), 1).to_numpy(zero_copy_only=False).astype(np.int64)
        elif pa.types.is_floating(t):
            v = pc.fill_null(col.cast(pa.float64()), 1.0).to_numpy(zero_copy_only=False)
            longs = np.where(np.isnan(v), 0, np.clip(np.trunc(v), -(2.0**63), 2.0**63 - 1024)).astype(np.int64)
        elif pa.types.is_decimal(t):
            longs = np.array([1 if d is None else int(d) for d in col.to_pylist()], dtype=np.int64)
        elif pa.types.is_date(t):
            longs = pc.fill_null(col.cast(pa.date32()).cast(pa.int32()), 1).to_numpy(zero_copy_only=False).astype(np.int64)
        elif pa.types.is_timestamp(t):
            raw = pc.fill_null(pc.cast(col, pa.int64()), 1).to_numpy(zero_copy_only=False).astype(np.int64)
            if self.owner.consistent_logical_timestamp and t.unit in ("ms", "us"):
                ms = raw if t.unit == "ms" else np.where(raw < 0, -(np.abs(raw) // 1000), raw // 1000)
                longs = np.where(valid, ms, raw)
                already_ms = True
            else:
                longs = raw
        else:
            raise HoodieNotSupportedError(
                f"Unexpected type for partition field {self.field!r}: {t} (TimestampBasedKeyGenerator takes "
                "numbers, decimals, dates, timestamps or date strings)."
            )
        millis = self._to_millis(longs) if not (already_ms and valid.all()) else longs
        if already_ms and not valid.all():
            millis = np.where(valid, longs, self._to_millis(longs))
        return millis


class TimestampBasedKeyGenerator(KeyGenerator):
    """Simple record key; the partition path is a formatted timestamp of one field."""

    class_name = _PKG + "TimestampBasedKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()
        if len(self.partition_path_fields) != 1:
            raise HoodieConfigError(
                "TimestampBasedKeyGenerator needs exactly one partition path field, got "
                f"{self.partition_path_fields or 'none'}."
            )
        self._partitioner = _TimestampPartitioner(self, self.partition_path_fields[0])

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        if self.record_key_fields and len(self.record_key_fields) != 1:
            raise HoodieConfigError(
                f"TimestampBasedKeyGenerator takes one record key field, got {self.record_key_fields}."
            )
        return self._simple_record_key(batch, self.record_key_fields[0])

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        return self._partitioner.paths(batch)


class CustomKeyGenerator(KeyGenerator):
    """Partition fields typed ``field:SIMPLE`` or ``field:TIMESTAMP``, joined with ``/``."""

    class_name = _PKG + "CustomKeyGenerator"

    def __init__(self, props: Mapping[str, str] | HoodieConfig | None = None):
        super().__init__(props)
        self._require_record_key_fields()
        self._segments: list[tuple[str, _TimestampPartitioner | None]] = []
        for spec in self.partition_path_fields:
            if ":" not in spec:
                raise HoodieConfigError(
                    f"Partition field {spec!r}: CustomKeyGenerator needs field:SIMPLE or field:TIMESTAMP "
                    "in hoodie.datasource.write.partitionpath.field."
                )
            name, kind = (s.strip() for s in spec.split(":", 1))
            kind = kind.upper()
            if kind == "SIMPLE":
                self._segments.append((name, None))
            elif kind == "TIMESTAMP":
                self._segments.append((name, _TimestampPartitioner(self, name)))
            else:
                raise HoodieConfigError(f"Partition field {spec!r}: type must be SIMPLE or TIMESTAMP.")

    def record_keys(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        if len(self.record_key_fields) == 1:
            return self._simple_record_key(batch, self.record_key_fields[0])
        return self._complex_record_key(batch, self.record_key_fields)

    def partition_paths(self, batch: pa.Table | pa.RecordBatch) -> pa.Array:
        segs = [self._partition_value(batch, name) if part is None else part.paths(batch) for name, part in self._segments]
        return self._join_partitions(segs, batch.num_rows)


_TYPES: dict[str, type[KeyGenerator]] = {
    "SIMPLE": SimpleKeyGenerator,
    "COMPLEX": ComplexKeyGenerator,
    "NON_PARTITION": NonpartitionedKeyGenerator,
    "TIMESTAMP": TimestampBasedKeyGenerator,
    "CUSTOM": CustomKeyGenerator,
    "GLOBAL_DELETE": GlobalDeleteKeyGenerator,
}
