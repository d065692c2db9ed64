"""Spark's casts of text to DATE and TIMESTAMP (no pattern), over Arrow string columns.

What ``to_date(s)``, ``to_timestamp(s)``, ``year(s)`` and the other datetime functions do with a
string: ``[+-]yyyy[-[m]m[-[d]d]]`` for a date (anything after a space or ``T`` ignored), and for a
timestamp optionally ``[ T][h]h[:[m]m[:[s]s[.fraction]]]`` and a zone (``Z``, ``UTC``, ``+hh[:mm]``,
a region id). Surrounding white space is ignored; anything else makes the value null (Spark's
behaviour with ANSI mode off, the mode Hudi's writers run Spark in).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.expression_index.session_zone import (
    MICROS_PER_DAY,
    local_to_instant,
    session_zone,
)
from airflow_hoodie.table.keygen.joda_zone import days_from_civil, days_in_month

_DATE = r"(?P<y>[+-]?\d{4,7})(?:-(?P<m>\d{1,2})(?:-(?P<d>\d{1,2}))?)?"
_DATE_TEXT = r"^\s*" + _DATE + r"(?:[ T].*)?$"
_TIME = r"(?:[ T](?P<H>\d{1,2})(?::(?P<M>\d{1,2})(?::(?P<S>\d{1,2})(?:\.(?P<F>\d{0,9}))?)?)?)?"
_ZONE = r"\s?(?P<z>Z|[+-]\d{1,2}(?::?\d{2})?|(?:UTC|GMT|UT)(?:[+-]\d{1,2}(?::?\d{2})?)?|[A-Za-z_]+/[A-Za-z_/+-]+)?"
_TIMESTAMP_TEXT = r"^\s*" + _DATE + _TIME + _ZONE + r"\s*$"


def _ints(parts: pa.StructArray, name: str, default: int) -> np.ndarray:
    text = pc.replace_substring(pc.fill_null(parts.field(name), ""), "+", "")
    text = pc.if_else(pc.equal(text, ""), str(default), text)
    return np.asarray(pc.cast(text, pa.int64()), dtype=np.int64)


def _days(parts: pa.StructArray) -> tuple[np.ndarray, np.ndarray]:
    ok = np.asarray(pc.is_valid(parts), dtype=bool)
    year, month, day = _ints(parts, "y", 1970), _ints(parts, "m", 1), _ints(parts, "d", 1)
    ok &= (month >= 1) & (month <= 12)
    month = np.clip(month, 1, 12)
    ok &= (day >= 1) & (day <= days_in_month(year, month))
    return days_from_civil(year, month, np.where(ok, day, 1)), ok


def cast_to_date(values: pa.Array) -> pa.Array:
    """``CAST(s AS DATE)``: epoch days, null where the text is no date."""
    days, ok = _days(pc.extract_regex(values.cast(pa.string()), _DATE_TEXT))
    return pa.array(days.astype(np.int32), pa.date32(), mask=~ok)


def _zone_rows(parts: pa.StructArray, zone: str) -> list[tuple[str, np.ndarray]]:
    """(zone, rows) pairs: each value's own zone when it names one, else the session's; an
    unknown zone is ``""`` (its values are no timestamps)."""
    encoded = pc.dictionary_encode(pc.fill_null(parts.field("z"), ""))
    codes = np.asarray(pc.fill_null(encoded.indices, 0), dtype=np.int64)
    out = []
    for code, text in enumerate(encoded.dictionary.to_pylist()):
        try:
            zid = session_zone(text) if text else zone
        except HoodieConfigError:
            zid = ""
        out.append((zid, codes == code))
    return out


def cast_to_timestamp(values: pa.Array, zone: str) -> pa.Array:
    """``CAST(s AS TIMESTAMP)`` in the session ``zone``: UTC instants in microseconds."""
    parts = pc.extract_regex(values.cast(pa.string()), _TIMESTAMP_TEXT)
    days, ok = _days(parts)
    hour, minute, second = _ints(parts, "H", 0), _ints(parts, "M", 0), _ints(parts, "S", 0)
    fraction = pc.utf8_slice_codeunits(pc.fill_null(parts.field("F"), ""), 0, 6)
    micros = np.asarray(pc.cast(pc.utf8_rpad(fraction, width=6, padding="0"), pa.int64()), dtype=np.int64)
    ok &= (hour <= 23) & (minute <= 59) & (second <= 59)
    local = days * MICROS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros
    instants = np.zeros(len(values), dtype=np.int64)
    for zid, rows in _zone_rows(parts, zone):
        if not zid:
            ok &= ~rows
        elif rows.any():
            instants[rows] = local_to_instant(np.where(ok[rows], local[rows], 0), zid)
    return pa.array(instants, pa.timestamp("us", tz="UTC"), mask=~ok)
