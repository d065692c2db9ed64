"""The ``column_stats`` partition of the metadata table: per file and column, min/max/counts.

Hudi (HoodieTableMetadataUtil, HoodieMetadataPayload) writes one record per (file, column),
keyed by :func:`index_keys.column_stats_key`, of type 3, with a HoodieMetadataColumnStats
payload taken from the parquet footer: min and max over all row groups, the value and null
counts, and the compressed and uncompressed byte sizes of the column's chunks. A deleted file
gets the same key with ``isDeleted=true`` and no values.

How values are wrapped depends on the index-definition version (HoodieIndexVersion):
- ``V1`` (table versions 6 and 8): the footer value in its Java form, wrapped by its class
  (a decimal in a DecimalWrapper at scale 15, a date in a DateWrapper, a UTF8 string in a
  StringWrapper, other binaries in a BytesWrapper, ints and longs as they are, timestamps as
  longs); no value type;
- ``V2`` (table version 9): the value as its logical type's primitive (a decimal as the
  minimal two's-complement bytes of its unscaled value, a date as epoch days, a timestamp as
  a long in its unit), wrapped by that primitive's wrapper, and ``valueType`` names the
  logical type (Hudi's ValueType ordinal; a decimal adds ``"precision,scale"``).

File-level records are not tight bounds (``isTightBound=false``): a file's footer covers
every row it holds. This module computes records; :mod:`stats_index_writer` puts them in the
metadata table.
"""

from __future__ import annotations

import decimal
import json
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.hudi_release import release_of
from airflow_hoodie.table.metadata_table.index_keys import column_stats_key
from airflow_hoodie.table.metadata_table.metadata_record import encode_record
from airflow_hoodie.table.storage.storage import Storage

COLUMN_STATS_PARTITION = "column_stats"
#: HoodieMetadataPayload's record type of a column-stats record
TYPE_COLUMN_STATS = 3
#: the meta fields Hudi 1.x always indexes, ahead of the data columns
INDEXED_META_FIELDS = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key")
_NS = "org.apache.hudi.avro.model."

#: Hudi's ValueType enum, by ordinal (the ``typeOrdinal`` of a V2 record)
VALUE_TYPES = ("V1", "NULL", "BOOLEAN", "INT", "LONG", "FLOAT", "DOUBLE", "STRING", "BYTES", "FIXED", "DECIMAL",
               "UUID", "DATE", "TIME_MILLIS", "TIME_MICROS", "TIMESTAMP_MILLIS", "TIMESTAMP_MICROS",
               "TIMESTAMP_NANOS", "LOCAL_TIMESTAMP_MILLIS", "LOCAL_TIMESTAMP_MICROS", "LOCAL_TIMESTAMP_NANOS")
#: the wrapper each value type is written in (its primitive form)
_V2_WRAPPER = {"BOOLEAN": "BooleanWrapper", "INT": "IntWrapper", "LONG": "LongWrapper", "FLOAT": "FloatWrapper",
               "DOUBLE": "DoubleWrapper", "STRING": "StringWrapper", "BYTES": "BytesWrapper",
               "FIXED": "BytesWrapper", "DECIMAL": "BytesWrapper", "UUID": "StringWrapper", "DATE": "IntWrapper",
               "TIME_MILLIS": "IntWrapper", "TIME_MICROS": "LongWrapper", "TIMESTAMP_MILLIS": "LongWrapper",
               "TIMESTAMP_MICROS": "LongWrapper", "TIMESTAMP_NANOS": "LongWrapper",
               "LOCAL_TIMESTAMP_MILLIS": "LongWrapper", "LOCAL_TIMESTAMP_MICROS": "LongWrapper",
               "LOCAL_TIMESTAMP_NANOS": "LongWrapper"}
#: V1's DecimalWrapper carries decimal(30, 15): values are rescaled to 15 digits
V1_DECIMAL_SCALE = 15
V1_DECIMAL_PRECISION = 30


@dataclass(frozen=True)
class ColumnRange:
    """One column's statistics over one file (or, merged, over a partition).

    ``min``/``max`` hold the comparable primitive: int, float, bool, str or bytes; a decimal
    as its unscaled int at ``scale``."""

    column: str
    value_type: str
    min: Any
    max: Any
    null_count: int
    value_count: int
    total_size: int
    total_uncompressed_size: int
    precision: int = 0
    scale: int = 0

    def merged(self, other: ColumnRange) -> ColumnRange:
        """The range over both (Hudi's partition-stats aggregation): extremes of the values,
        sums of the counts and sizes."""
        lo = [v for v in (self.min, other.min) if v is not None]
        hi = [v for v in (self.max, other.max) if v is not None]
        return replace(self, min=min(lo) if lo else None, max=max(hi) if hi else None,
                       null_count=self.null_count + other.null_count,
                       value_count=self.value_count + other.value_count,
                       total_size=self.total_size + other.total_size,
                       total_uncompressed_size=self.total_uncompressed_size + other.total_uncompressed_size)


# ------------------------------------------------------------------ value types from parquet
def _value_type(physical: str, logical: Mapping[str, Any]) -> str | None:
    """Hudi's ValueType.fromParquetPrimitiveType; None for a type it cannot index."""
    kind = logical.get("Type", "None")
    if kind in ("String", "Enum", "JSON"):
        return "STRING"
    if kind == "Decimal":
        return "DECIMAL"
    if kind == "Date":
        return "DATE"
    if kind == "UUID":
        return "UUID"
    if kind in ("Time", "Timestamp"):
        unit = {"milliseconds": "MILLIS", "microseconds": "MICROS", "nanoseconds": "NANOS"}[logical["timeUnit"]]
        if kind == "Time":
            return f"TIME_{unit}" if unit != "NANOS" else None
        return f"TIMESTAMP_{unit}" if logical.get("isAdjustedToUTC") else f"LOCAL_TIMESTAMP_{unit}"
    if kind == "Int":
        return "LONG" if physical == "INT64" else "INT"
    if kind != "None":
        return None
    return {"INT64": "LONG", "INT32": "INT", "BOOLEAN": "BOOLEAN", "BYTE_ARRAY": "BYTES", "FLOAT": "FLOAT",
            "DOUBLE": "DOUBLE", "FIXED_LEN_BYTE_ARRAY": "FIXED"}.get(physical)


def _primitive(value_type: str, raw: Any) -> Any:
    """The footer's raw min/max as the comparable primitive of its value type."""
    if raw is None:
        return None
    if value_type == "DECIMAL":
        return int.from_bytes(raw, "big", signed=True) if isinstance(raw, bytes) else int(raw)
    if value_type in ("STRING", "UUID"):
        if value_type == "UUID" and isinstance(raw, bytes) and len(raw) == 16:
            import uuid  # noqa: PLC0415
            return str(uuid.UUID(bytes=raw))
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    return raw


def file_column_ranges(metadata: pq.FileMetaData, columns: Sequence[str] | None) -> list[ColumnRange]:
    """Per indexed column, its range over every row group of a parquet file (``columns``:
    the ones to index, None for every top-level column of a supported type)."""
    schema = metadata.schema
    wanted = None if columns is None else set(columns)
    ranges: dict[str, ColumnRange] = {}
    for i in range(metadata.num_columns):
        col = schema.column(i)
        if "." in col.path or (wanted is not None and col.path not in wanted):
            continue  # nested fields are not indexed
        value_type = _value_type(col.physical_type, json.loads(col.logical_type.to_json()))
        if value_type is None:
            continue
        logical = json.loads(col.logical_type.to_json())
        for g in range(metadata.num_row_groups):
            chunk = metadata.row_group(g).column(i)
            stats = chunk.statistics
            has = stats is not None and stats.has_min_max
            nulls = stats.null_count if stats is not None and stats.has_null_count else 0
            part = ColumnRange(col.path, value_type,
                               _primitive(value_type, stats.min_raw) if has else None,
                               _primitive(value_type, stats.max_raw) if has else None,
                               int(nulls), int(chunk.num_values), int(chunk.total_compressed_size),
                               int(chunk.total_uncompressed_size),
                               int(logical.get("precision", 0)), int(logical.get("scale", 0)))
            ranges[col.path] = ranges[col.path].merged(part) if col.path in ranges else part
    if columns is None:
        return list(ranges.values())
    return [ranges[c] for c in columns if c in ranges]


def read_file_column_ranges(storage: Storage, path: str, columns: Sequence[str] | None) -> list[ColumnRange]:
    if not path.endswith(".parquet"):
        raise HoodieNotSupportedError(
            f"Column statistics of {storage.uri(path)}: only parquet base files are read for column_stats; run with "
            "hoodie.metadata.index.column.stats.enable=false for tables with other base file formats.")
    handle = storage.open_input(path)
    try:
        return file_column_ranges(pq.ParquetFile(handle).metadata, columns)
    finally:
        handle.close()


# ------------------------------------------------------------------ records
def _minimal_bytes(unscaled: int) -> bytes:
    """Java's BigInteger.toByteArray: the shortest big-endian two's complement."""
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


def wrap_value(rng: ColumnRange, value: Any, index_version: str) -> tuple[str, dict[str, Any]] | None:
    """The Avro union branch (wrapper name, record) of one min or max value."""
    if value is None:
        return None
    t = rng.value_type
    if index_version == "V2":
        if t == "DECIMAL":
            value = _minimal_bytes(value)
        return _NS + _V2_WRAPPER[t], {"value": value}
    # V1: wrapped by the class of parquet's Java value (convertToNativeJavaType)
    if t == "DECIMAL":
        if V1_DECIMAL_SCALE < rng.scale:
            raise HoodieNotSupportedError(
                f"Column {rng.column!r} has decimal scale {rng.scale}; Hudi's V1 column stats hold at most "
                f"{V1_DECIMAL_SCALE} digits. Drop it from hoodie.metadata.index.column.stats.column.list.")
        return _NS + "DecimalWrapper", {"value": _minimal_bytes(value * 10 ** (V1_DECIMAL_SCALE - rng.scale))}
    if t == "DATE":
        return _NS + "DateWrapper", {"value": value}
    if t in ("STRING",):
        return _NS + "StringWrapper", {"value": value}
    if t in ("BYTES", "FIXED", "UUID"):
        return _NS + "BytesWrapper", {"value": value if isinstance(value, bytes) else str(value).encode("utf-8")}
    wrapper = {"BOOLEAN": "BooleanWrapper", "INT": "IntWrapper", "FLOAT": "FloatWrapper", "DOUBLE": "DoubleWrapper",
               "TIME_MILLIS": "IntWrapper"}.get(t, "LongWrapper")
    return _NS + wrapper, {"value": value}


def value_type_info(rng: ColumnRange, index_version: str) -> dict[str, Any] | None:
    if index_version != "V2":
        return None
    return {"typeOrdinal": VALUE_TYPES.index(rng.value_type),
            "additionalInfo": f"{rng.precision},{rng.scale}" if rng.value_type == "DECIMAL" else None}


def stats_payload(name: str, rng: ColumnRange, index_version: str, table_version: int,
                  tight: bool) -> dict[str, Any]:
    """A HoodieMetadataColumnStats record (``name``: the file name, or the partition for
    partition stats)."""
    payload: dict[str, Any] = {
        "fileName": name, "columnName": rng.column,
        "minValue": wrap_value(rng, rng.min, index_version), "maxValue": wrap_value(rng, rng.max, index_version),
        "valueCount": rng.value_count, "nullCount": rng.null_count, "totalSize": rng.total_size,
        "totalUncompressedSize": rng.total_uncompressed_size, "isDeleted": False}
    if release_of(table_version).typed_column_stats:
        payload["isTightBound"] = tight
        payload["valueType"] = value_type_info(rng, index_version)
    return payload


def deleted_payload(name: str, column: str, table_version: int) -> dict[str, Any]:
    payload: dict[str, Any] = {"fileName": name, "columnName": column, "minValue": None, "maxValue": None,
                               "valueCount": None, "nullCount": None, "totalSize": None,
                               "totalUncompressedSize": None, "isDeleted": True}
    if release_of(table_version).typed_column_stats:
        payload["isTightBound"] = False
        payload["valueType"] = None
    return payload


@dataclass
class FileColumnStats:
    """Column stats of one file of a change; ``ranges`` None for a deleted file (then
    ``columns`` names the columns whose records it tombstones)."""

    partition: str
    file_name: str
    ranges: list[ColumnRange] | None
    columns: Sequence[str] = field(default_factory=tuple)


def column_stats_records(files: Iterable[FileColumnStats], index_version: str,
                         table_version: int) -> dict[str, dict[str, Any]]:
    """HFile key -> HoodieMetadataRecord for the files' column stats (and tombstones)."""
    records: dict[str, dict[str, Any]] = {}
    for f in files:
        if f.ranges is None:
            for column in f.columns:
                records[column_stats_key(column, f.partition, f.file_name)] = {
                    "key": "", "type": TYPE_COLUMN_STATS,
                    "ColumnStatsMetadata": deleted_payload(f.file_name, column, table_version)}
            continue
        for rng in f.ranges:
            records[column_stats_key(rng.column, f.partition, f.file_name)] = {
                "key": "", "type": TYPE_COLUMN_STATS,
                "ColumnStatsMetadata": stats_payload(f.file_name, rng, index_version, table_version, tight=False)}
    return records


def encode_records(records: Mapping[str, Mapping[str, Any]], table_version: int) -> list[tuple[bytes, bytes]]:
    """Sorted (key, Avro value) pairs, as an HFile takes them."""
    return sorted((k.encode("utf-8"), encode_record(rec, table_version)) for k, rec in records.items())


def unwrap_value(wrapped: Any) -> Any:
    """The value inside a decoded wrapper (decoded plainly or with its record name)."""
    if wrapped is None:
        return None
    if isinstance(wrapped, tuple):
        wrapped = wrapped[1]
    return wrapped.get("value") if isinstance(wrapped, Mapping) else wrapped


# ------------------------------------------------------------------ log files (MOR)
def _arrow_value_type(t: pa.DataType) -> str | None:
    """Hudi's ValueType.fromSchema for the Avro type an Arrow column came from."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "STRING"
    if pa.types.is_decimal(t):
        return "DECIMAL"
    if pa.types.is_date32(t):
        return "DATE"
    if pa.types.is_timestamp(t):
        unit = {"ms": "MILLIS", "us": "MICROS", "ns": "NANOS"}.get(t.unit)
        return None if unit is None else (f"TIMESTAMP_{unit}" if t.tz else f"LOCAL_TIMESTAMP_{unit}")
    if pa.types.is_time32(t):
        return "TIME_MILLIS"
    if pa.types.is_time64(t):
        return "TIME_MICROS" if t.unit == "us" else None
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_int64(t):
        return "LONG"
    if pa.types.is_integer(t):
        return "INT"
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_float64(t):
        return "DOUBLE"
    if pa.types.is_fixed_size_binary(t):
        return "FIXED"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "BYTES"
    return None


def unscaled_decimal(value: decimal.Decimal, scale: int) -> int:
    """``value`` times 10**``scale``, truncated, computed exactly: Python's default decimal
    context keeps 28 digits and would round a decimal(38, s) bound or filter value, and
    a rounded bound skips the file that holds the value."""
    with decimal.localcontext(decimal.Context(prec=max(28, len(value.as_tuple().digits) + abs(scale) + 2))):
        return int(value.scaleb(scale))


def _arrow_primitive(value_type: str, scalar: pa.Scalar) -> Any:
    if not scalar.is_valid:
        return None
    if value_type == "DECIMAL":
        return unscaled_decimal(scalar.as_py(), scalar.type.scale)
    if value_type in ("DATE", "TIME_MILLIS"):  # Avro ints: Arrow casts time32 to int32 only
        return scalar.cast(pa.int32()).as_py()
    if value_type.endswith(("MILLIS", "MICROS", "NANOS")):
        return scalar.cast(pa.int64()).as_py()
    return scalar.as_py()


def table_column_ranges(data: pa.Table | None, columns: Sequence[str]) -> list[ColumnRange]:
    """Ranges of ``columns`` over the records of a log file (Hudi collects them while
    appending: no byte sizes; a log file without data records gets NULL-typed empty ranges)."""
    out = []
    for column in columns:
        if data is None or data.num_rows == 0 or column not in data.column_names:
            if data is None or data.num_rows == 0:
                out.append(ColumnRange(column, "NULL", None, None, 0, 0, 0, 0))
            continue
        arr = data.column(column)
        value_type = _arrow_value_type(arr.type)
        if value_type is None:
            continue
        mm = pc.min_max(arr)
        precision, scale = (arr.type.precision, arr.type.scale) if pa.types.is_decimal(arr.type) else (0, 0)
        out.append(ColumnRange(column, value_type, _arrow_primitive(value_type, mm["min"]),
                               _arrow_primitive(value_type, mm["max"]), int(arr.null_count), len(arr), 0, 0,
                               precision, scale))
    return out


def read_log_column_ranges(storage: Storage, path: str, columns: Sequence[str],
                           instants: set[str] | None = None) -> list[ColumnRange]:
    """Column ranges of the data records of one log file (of the blocks of ``instants``
    when given: a rolled-back block's records are no longer in the file)."""
    from airflow_hoodie.table.log.data_block import decode_data_block  # noqa: PLC0415
    from airflow_hoodie.table.log.log_block import BlockType  # noqa: PLC0415
    from airflow_hoodie.table.log.log_reader import read_log_blocks  # noqa: PLC0415

    tables = [decode_data_block(b) for b in read_log_blocks(storage, path)
              if not b.corrupt and b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)
              and (instants is None or b.instant_time in instants)]
    data = pa.concat_tables(tables, promote_options="default") if tables else None
    return table_column_ranges(data, columns)


def comparable_value(wrapped: Any, value_type: Mapping[str, Any] | None) -> Any:
    """A decoded min/max in a form that orders as Hudi orders it: a V2 decimal's bytes as
    their unscaled integer (other bytes order as unsigned bytes, strings and numbers as they are)."""
    value = unwrap_value(wrapped)
    if isinstance(value, (bytes, bytearray)) and value_type and int(value_type.get("typeOrdinal") or 0) == 10:
        return int.from_bytes(value, "big", signed=True)
    return value


def range_from_payload(payload: Mapping[str, Any]) -> ColumnRange | None:
    """The ColumnRange a V2 HoodieMetadataColumnStats holds (None for a V1 one: its values
    carry no type, so callers read the file instead)."""
    vt = payload.get("valueType")
    if not vt:
        return None
    value_type = VALUE_TYPES[int(vt.get("typeOrdinal") or 0)]
    precision = scale = 0
    if value_type == "DECIMAL" and vt.get("additionalInfo"):
        precision, scale = (int(x) for x in str(vt["additionalInfo"]).split(","))
    return ColumnRange(str(payload["columnName"]), value_type, comparable_value(payload.get("minValue"), vt),
                       comparable_value(payload.get("maxValue"), vt), int(payload.get("nullCount") or 0),
                       int(payload.get("valueCount") or 0), int(payload.get("totalSize") or 0),
                       int(payload.get("totalUncompressedSize") or 0), precision, scale)
