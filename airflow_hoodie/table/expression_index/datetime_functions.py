"""Spark SQL's datetime functions over Arrow columns, in the session time zone.

Inputs are coerced as Spark's analyzer coerces them: a string is cast (``datetime_cast``), a date
is midnight in the session zone, a timestamp with a zone is an instant, a timestamp without one is
wall-clock time (Spark's TIMESTAMP_NTZ). Null in, null out; text that does not parse is null.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.expression_index.datetime_cast import (
    cast_to_date,
    cast_to_timestamp,
)
from airflow_hoodie.table.expression_index.datetime_parse import parse_local
from airflow_hoodie.table.expression_index.datetime_pattern import format_local
from airflow_hoodie.table.expression_index.session_zone import (
    MICROS_PER_DAY,
    MICROS_PER_SECOND,
    instant_to_local,
    local_to_instant,
)
from airflow_hoodie.table.keygen.joda_zone import civil_from_days

DEFAULT_FORMAT = "yyyy-MM-dd HH:mm:ss"


def _valid(values: pa.Array) -> np.ndarray:
    return np.asarray(pc.is_valid(values), dtype=bool)


def _micros(values: pa.Array) -> np.ndarray:
    unit = values.type.unit
    raw = np.asarray(pc.fill_null(values.cast(pa.timestamp(unit, tz=values.type.tz)).cast(pa.int64()), 0),
                     dtype=np.int64)
    return raw * {"s": 1_000_000, "ms": 1000, "us": 1, "ns": 1}[unit] // (1000 if unit == "ns" else 1)


def _refuse(function: str, values: pa.Array) -> HoodieNotSupportedError:
    return HoodieNotSupportedError(f"expression index function {function}: input type {values.type} is not supported")


def instants(values: pa.Array, zone: str, function: str) -> tuple[np.ndarray, np.ndarray]:
    """UTC microseconds of each value as Spark's TIMESTAMP, with its validity."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        values = cast_to_timestamp(values, zone)
    if pa.types.is_timestamp(values.type):
        raw = _micros(values)
        return (raw if values.type.tz else local_to_instant(raw, zone)), _valid(values)
    if pa.types.is_date(values.type):
        days = np.asarray(pc.fill_null(values.cast(pa.date32()).cast(pa.int32()), 0), dtype=np.int64)
        return local_to_instant(days * MICROS_PER_DAY, zone), _valid(values)
    raise _refuse(function, values)


def local_micros(values: pa.Array, zone: str, function: str) -> tuple[np.ndarray, np.ndarray]:
    """Wall-clock microseconds in the session zone, with validity."""
    if pa.types.is_date(values.type):
        days = np.asarray(pc.fill_null(values.cast(pa.date32()).cast(pa.int32()), 0), dtype=np.int64)
        return days * MICROS_PER_DAY, _valid(values)
    if pa.types.is_timestamp(values.type) and not values.type.tz:
        return _micros(values), _valid(values)
    at, ok = instants(values, zone, function)
    return instant_to_local(at, zone), ok


def epoch_days(values: pa.Array, zone: str, function: str) -> tuple[np.ndarray, np.ndarray]:
    """Spark's DATE of each value: epoch days, with validity."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        values = cast_to_date(values)
    local, ok = local_micros(values, zone, function)
    return np.floor_divide(local, MICROS_PER_DAY), ok


def from_unixtime(values: pa.Array, zone: str, fmt: str = DEFAULT_FORMAT) -> pa.Array:
    """Seconds since the epoch as text in ``fmt``."""
    if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        raise _refuse("from_unixtime", values)
    seconds = np.asarray(pc.fill_null(values.cast(pa.int64(), safe=False), 0), dtype=np.int64)
    ok = _valid(values)
    text = format_local(instant_to_local(seconds * MICROS_PER_SECOND, zone), fmt)
    return pc.if_else(pa.array(ok), text, pa.nulls(len(values), pa.string()))


def unix_timestamp(values: pa.Array, zone: str, fmt: str = DEFAULT_FORMAT) -> pa.Array:
    """Seconds since the epoch of a timestamp, date, or text in ``fmt``."""
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        local, ok = parse_local(values, fmt)
        at = local_to_instant(local, zone)
        ok &= _valid(values)
    else:
        at, ok = instants(values, zone, "unix_timestamp")
    # Spark divides with Java's ``/``: towards zero, so 1969-12-31 23:59:59.5 is second 0
    seconds = np.where(at < 0, -(-at // MICROS_PER_SECOND), at // MICROS_PER_SECOND)
    return pa.array(seconds, pa.int64(), mask=~ok)


def date_format(values: pa.Array, zone: str, fmt: str) -> pa.Array:
    local, ok = local_micros(values, zone, "date_format")
    text = format_local(local, fmt)
    return pc.if_else(pa.array(ok), text, pa.nulls(len(values), pa.string()))


def to_timestamp(values: pa.Array, zone: str, fmt: str | None = None) -> pa.Array:
    if fmt is not None and (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        local, ok = parse_local(values, fmt)
        at = local_to_instant(local, zone)
        ok &= _valid(values)
    else:
        at, ok = instants(values, zone, "to_timestamp")
    return pa.array(at, pa.timestamp("us", tz="UTC"), mask=~ok)


def to_date(values: pa.Array, zone: str, fmt: str | None = None) -> pa.Array:
    if fmt is not None and (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        values = to_timestamp(values, zone, fmt)
    days, ok = epoch_days(values, zone, "to_date")
    return pa.array(days.astype(np.int32), pa.date32(), mask=~ok)


def _date_part(values: pa.Array, zone: str, function: str, part: int) -> pa.Array:
    days, ok = epoch_days(values, zone, function)
    return pa.array(civil_from_days(days)[part].astype(np.int32), pa.int32(), mask=~ok)


def year(values: pa.Array, zone: str) -> pa.Array:
    return _date_part(values, zone, "year", 0)


def month(values: pa.Array, zone: str) -> pa.Array:
    return _date_part(values, zone, "month", 1)


def day(values: pa.Array, zone: str) -> pa.Array:
    return _date_part(values, zone, "day", 2)


def hour(values: pa.Array, zone: str) -> pa.Array:
    local, ok = local_micros(values, zone, "hour")
    hours = np.floor_divide(local, 3_600 * MICROS_PER_SECOND) % 24
    return pa.array(hours.astype(np.int32), pa.int32(), mask=~ok)
