"""Data skipping: leave out partitions and file slices whose statistics cannot match a filter.

A snapshot read with ``filters`` asks ``partition_stats`` which partitions may hold a match
and ``column_stats`` which file slices may (Hudi's data skipping), each a batched lookup per
metadata-table file group. Skipping is only ever conservative:

- a slice goes only when, for some filter, every file of the slice (base and logs) has a
  record for the column and none of their ranges can satisfy it; a merged row takes each
  column's value from one of the slice's record versions, so its value lies in their union;
- a partition goes only when its partition-stats range cannot satisfy a filter (Hudi widens
  that range with every commit, so it covers every latest slice);
- filters we cannot order against the stored values (``!=``, ``not in``, a value of another
  type, a timestamp in another unit, NaN) skip nothing.
The rows are filtered again anyway, so a pruned read returns exactly the rows of a full one.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa

from airflow_hoodie.errors import HoodieMetadataDamagedError

from airflow_hoodie.table.metadata_table.column_stats import (
    COLUMN_STATS_PARTITION,
    V1_DECIMAL_PRECISION,
    VALUE_TYPES,
    _arrow_primitive,
    _arrow_value_type,
    range_from_payload,
    unscaled_decimal,
)
from airflow_hoodie.table.metadata_table.damage import damage_message
from airflow_hoodie.table.metadata_table.index_keys import column_stats_key, partition_stats_key
from airflow_hoodie.table.metadata_table.partition_stats import PARTITION_STATS_PARTITION
from airflow_hoodie.table.metadata_table.stats_partitions import kept_stats_partitions
from airflow_hoodie.table.metadata_table.stats_reader import index_partition_files, read_index_records

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable
    from airflow_hoodie.table.metadata_table.column_stats import ColumnRange

log = logging.getLogger(__name__)

#: a filter as the pruning takes it: (column, op, values in the stats' primitive form, their value type)
TypedFilter = tuple[str, str, list[Any], str]
_PRUNING_OPS = {"=", "==", "<", "<=", ">", ">=", "in"}


def typed_filters(filters: Iterable[tuple[str, str, Any]], schema: pa.Schema | None,
                  coerce: Callable[[Any, pa.DataType], Any]) -> list[TypedFilter]:
    """The filters skipping can use, their values in the stats' primitive form."""
    out: list[TypedFilter] = []
    if schema is None:
        return out
    for column, op, value in filters:
        if op not in _PRUNING_OPS or column not in schema.names:
            continue
        typ = schema.field(column).type
        value_type = _arrow_value_type(typ)
        if value_type is None:
            continue
        try:
            scalars = [coerce(v, typ) for v in (value if op == "in" else [value])]
        except Exception:  # noqa: BLE001 - a value the read rejects is the read's error to raise
            continue
        if not all(isinstance(s, pa.Scalar) and s.is_valid for s in scalars):
            continue
        out.append((column, op, [_arrow_primitive(value_type, s) for s in scalars], value_type))
    return out


def _may_match(rng: ColumnRange, op: str, values: list[Any], value_type: str) -> bool:
    """Whether some value in ``rng`` can satisfy ``op values`` (True when unsure)."""
    if rng.value_type == "NULL" and rng.value_count == 0:
        return False  # no records at all (a delete-only log file)
    if rng.value_type != value_type:
        return True
    lo, hi = rng.min, rng.max
    if lo is None or hi is None:
        # no non-null value: a comparison never holds for a null, unless the stats lack a range
        return not (rng.value_count > 0 and rng.null_count == rng.value_count)
    if any(v != v for v in values):
        # NaN: parquet's (and Hudi's) ranges leave NaN out, so no range rules it out, and
        # the read's ``in`` matches NaN rows (Arrow's is_in)
        return True
    try:
        if op in ("=", "==", "in"):
            return any(lo <= v <= hi for v in values)
        v = values[0]
        return {"<": lo < v, "<=": lo <= v, ">": hi > v, ">=": hi >= v}[op]
    except TypeError:
        return True


def _union_may_match(ranges: Sequence[ColumnRange], op: str, values: list[Any], value_type: str) -> bool:
    return any(_may_match(r, op, values, value_type) for r in ranges)


def _comparable_scale(rng: ColumnRange, value_type: str, schema_scale: int | None) -> bool:
    """A decimal range compares with the filter only at the column's scale."""
    return value_type != "DECIMAL" or schema_scale is None or rng.scale == schema_scale


def prune_partitions_by_stats(table: HoodieTable, partitions: Iterable[str], filters: list[TypedFilter],
                              schema: pa.Schema | None = None, index_partition: str | None = None,
                              key_of: Callable[[str, str], str] = partition_stats_key) -> set[str]:
    """The partitions whose partition stats may satisfy every filter (``index_partition``: the
    metadata-table partition holding them, keyed by ``key_of``; default ``partition_stats``)."""
    parts = set(partitions)
    if index_partition is None:
        if PARTITION_STATS_PARTITION not in kept_stats_partitions(table):
            return parts
        index_partition = PARTITION_STATS_PARTITION
    if not filters:
        return parts
    keys = {key_of(c, p): (p, i) for p in parts for i, (c, _o, _v, _t) in enumerate(filters)}
    records = _records_or_none(table, index_partition, keys)
    if records is None:
        return parts
    dropped = set()
    for key, (part, i) in keys.items():
        rec = records.get(key)
        if rec is None:
            continue
        column, op, values, value_type = filters[i]
        rng = stored_range(rec["ColumnStatsMetadata"], value_type, _scale(schema, column))
        if rng is None:
            continue
        if not _may_match(rng, op, values, value_type):
            dropped.add(part)
    return parts - dropped


def _records_or_none(table: HoodieTable, partition: str, keys: Mapping[str, Any]) -> dict[str, Any] | None:
    """The statistics records of ``keys``, or None when the partition is damaged: a skipped
    block may hold the record that widened a range, so a read prunes nothing by it (always
    correct: the rows are filtered anyway) and says so, naming the damaged log."""
    try:
        return read_index_records(index_partition_files(table, partition), keys)
    except HoodieMetadataDamagedError as exc:
        log.warning("%s", damage_message(partition, exc.damaged, "This read prunes nothing by it.")
                    if exc.damaged else exc)
        return None


def _v1_value(value: Any, value_type: str, scale: int | None) -> tuple[bool, Any]:
    """A V1 record's decoded value in the primitive form of ``value_type`` (ok, value)."""
    import datetime as _dt  # noqa: PLC0415
    import decimal  # noqa: PLC0415

    if value is None:
        return True, None
    if isinstance(value, bool):
        return value_type == "BOOLEAN", value
    if isinstance(value, decimal.Decimal):
        # a bound wider than the wrapper's decimal(30, 15) comes back rounded to 30 digits
        # (Hudi Java cannot write one): it bounds nothing
        if value_type != "DECIMAL" or scale is None or len(value.as_tuple().digits) >= V1_DECIMAL_PRECISION:
            return False, None
        return True, unscaled_decimal(value, scale)
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return value_type == "DATE", (value - _dt.date(1970, 1, 1)).days
    if isinstance(value, int):
        return value_type in ("INT", "LONG", "DATE", "TIME_MILLIS", "TIME_MICROS") or value_type.startswith(
            ("TIMESTAMP", "LOCAL_TIMESTAMP")), value
    if isinstance(value, float):
        return value_type in ("FLOAT", "DOUBLE"), value
    if isinstance(value, str):
        return value_type in ("STRING", "UUID"), value
    if isinstance(value, (bytes, bytearray)):
        return value_type in ("BYTES", "FIXED"), bytes(value)
    return False, None


#: wrappers narrower than the type a bound belongs to: our metadata-table compaction wrote
#: these before dfe1705 (a double's 0.1 as a FloatWrapper 0.100000001), never Hudi
_NARROWED = {"DOUBLE": "FloatWrapper", "LONG": "IntWrapper", "TIME_MICROS": "IntWrapper",
             **{f"{p}TIMESTAMP_{u}": "IntWrapper" for p in ("", "LOCAL_") for u in ("MILLIS", "MICROS", "NANOS")}}


def _narrowed(payload: dict[str, Any], value_type: str) -> bool:
    """Whether a bound sits in a wrapper too narrow for its type, so that its value may be
    rounded: such a range must not drop a file (a filter on 0.1 would miss the row)."""
    vt = payload.get("valueType")
    if vt:
        value_type, narrow = VALUE_TYPES[int(vt.get("typeOrdinal") or 0)], _NARROWED
    else:  # V1 holds a date in a DateWrapper
        narrow = {**_NARROWED, "DATE": "IntWrapper"}
    bad = narrow.get(value_type)
    return bad is not None and any(isinstance(b, tuple) and b[0].rsplit(".", 1)[-1] == bad
                                   for b in (payload.get("minValue"), payload.get("maxValue")))


def stored_range(payload: dict[str, Any], value_type: str, scale: int | None) -> ColumnRange | None:
    """The range a column-stats payload holds, comparable with a filter of ``value_type``:
    V2 records carry their type; a V1 record's values are taken by their decoded form."""
    from dataclasses import replace  # noqa: PLC0415

    from airflow_hoodie.table.metadata_table.column_stats import ColumnRange, unwrap_value  # noqa: PLC0415

    if _narrowed(payload, value_type):
        return None
    rng = range_from_payload(payload)
    if rng is not None:
        return rng if _comparable_scale(rng, value_type, scale) else None
    ok_lo, lo = _v1_value(unwrap_value(payload.get("minValue")), value_type, scale)
    ok_hi, hi = _v1_value(unwrap_value(payload.get("maxValue")), value_type, scale)
    if not (ok_lo and ok_hi):
        return None
    out = ColumnRange(str(payload["columnName"]), value_type, lo, hi, int(payload.get("nullCount") or 0),
                      int(payload.get("valueCount") or 0), 0, 0)
    return replace(out, scale=scale or 0)


def _scale(schema: pa.Schema | None, column: str) -> int | None:
    if schema is None or column not in schema.names:
        return None
    typ = schema.field(column).type
    return typ.scale if pa.types.is_decimal(typ) else None


def slice_files(s: Any) -> list[str]:
    files = [s.base_file.file_name] if getattr(s, "base_file", None) is not None else []
    return files + [lf.file_name for lf in getattr(s, "log_files", ()) or ()]


def prune_slices_by_stats(table: HoodieTable, slices: Sequence[Any], filters: list[TypedFilter],
                          schema: pa.Schema | None = None, index_partition: str | None = None) -> list[Any]:
    """The file slices whose files' column stats may satisfy every filter (``index_partition``:
    the metadata-table partition holding them, keyed like ``column_stats``; default that one)."""
    if index_partition is None:
        if COLUMN_STATS_PARTITION not in kept_stats_partitions(table):
            return list(slices)
        index_partition = COLUMN_STATS_PARTITION
    if not filters or not slices:
        return list(slices)
    columns = sorted({f[0] for f in filters})
    keys = {column_stats_key(c, s.partition_path, name): (c, s.partition_path, name)
            for s in slices for name in slice_files(s) for c in columns}
    records = _records_or_none(table, index_partition, keys)
    if records is None:
        return list(slices)
    kept = []
    for s in slices:
        files = slice_files(s)
        keep = True
        for column, op, values, value_type in filters:
            ranges = []
            for name in files:
                rec = records.get(column_stats_key(column, s.partition_path, name))
                rng = stored_range(rec["ColumnStatsMetadata"], value_type, _scale(schema, column)) \
                    if rec is not None else None
                if rng is None:
                    ranges = None
                    break
                ranges.append(rng)
            if ranges and not _union_may_match(ranges, op, values, value_type):
                keep = False
                break
        if keep:
            kept.append(s)
    return kept
