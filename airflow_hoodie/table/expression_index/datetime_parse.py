"""Parsing text with a Spark datetime pattern into wall-clock microseconds, vectorized.

One anchored, case-insensitive regex per pattern (``pyarrow.compute.extract_regex``) captures each
field; numpy then resolves them strictly as ``DateTimeFormatter`` with ``ResolverStyle.STRICT``
does: a field out of range, or a day the month does not have, makes the value null, never a
neighbouring date. Fields the pattern lacks default to 1970-01-01 00:00:00, as in Spark.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.table.expression_index.datetime_pattern import (
    MAX_DIGITS,
    MONTHS,
    PARSE_LETTERS,
    Token,
    checked_tokens,
)
from airflow_hoodie.table.expression_index.session_zone import MICROS_PER_DAY
from airflow_hoodie.table.keygen.joda_zone import days_from_civil, days_in_month


def _is_numeric(tok: Token) -> bool:
    return bool(tok.letter) and tok.letter not in "a" and not (tok.letter in "ML" and tok.count >= 3)


def _field_regex(tok: Token, next_numeric: bool) -> str:
    letter, k = tok.letter, tok.count
    if letter in "ML" and k >= 3:
        names = [m[:3] for m in MONTHS] if k == 3 else list(MONTHS)
        return "(?P<Mtext>" + "|".join(names) + ")"
    if letter == "a":
        return "(?P<a>AM|PM)"
    if letter == "S":
        return f"(?P<S>\\d{{1,{k}}})"
    if letter == "y":
        if k == 2:
            return "(?P<yy>\\d{2})"
        return f"(?P<y>\\d{{{k}}})" if next_numeric else f"(?P<y>\\d{{{max(k, 1)},10}})"
    group = "M" if letter == "L" else letter
    if k == 1 and not next_numeric:
        return f"(?P<{group}>\\d{{1,{MAX_DIGITS[letter]}}})"
    return f"(?P<{group}>\\d{{{k}}})"


def pattern_regex(pattern: str) -> str:
    """The anchored regex one value must match whole (Spark rejects trailing text)."""
    tokens = checked_tokens(pattern, PARSE_LETTERS, "parsing")
    out, seen = [], set()
    for i, tok in enumerate(tokens):
        if not tok.letter:
            out.append(re.escape(tok.text))
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        regex = _field_regex(tok, nxt is not None and _is_numeric(nxt))
        name = regex[4:regex.index(">")]
        if name in seen:  # a letter twice: Java checks both agree; we keep the first, the second matches
            regex = "(?:" + regex[regex.index(">") + 1:]
        seen.add(name)
        out.append(regex)
    return "(?i)^" + "".join(out) + "$"


def _column(parts: pa.StructArray, names: set[str], name: str, default: int) -> np.ndarray:
    if name not in names:
        return np.full(len(parts), default, dtype=np.int64)
    text = pc.fill_null(parts.field(name), "")
    return np.asarray(pc.cast(pc.if_else(pc.equal(text, ""), str(default), text), pa.int64()), dtype=np.int64)


def parse_local(values: pa.Array, pattern: str) -> tuple[np.ndarray, np.ndarray]:
    """Wall-clock microseconds of each string, and whether it parsed (False for nulls)."""
    regex = pattern_regex(pattern)
    n = len(values)
    names = set(re.findall(r"\(\?P<(\w+)>", regex))
    if not names:
        ok = np.asarray(pc.fill_null(pc.match_substring_regex(values, regex), False), dtype=bool)
        return np.zeros(n, dtype=np.int64), ok
    parts = pc.extract_regex(values.cast(pa.string()), regex)
    ok = np.asarray(pc.is_valid(parts), dtype=bool)
    year = _column(parts, names, "y", 1970)
    if "yy" in names:
        year = 2000 + _column(parts, names, "yy", 70)
    if "Mtext" in names:
        month = _months(parts.field("Mtext"))
    else:
        month = _column(parts, names, "M", 1)
    day = _column(parts, names, "d", 1)
    hour = _hour_of_day(parts, names)
    minute, second = _column(parts, names, "m", 0), _column(parts, names, "s", 0)
    ok &= (month >= 1) & (month <= 12) & (hour >= 0) & (hour <= 23) & (minute <= 59) & (second <= 59)
    month = np.clip(month, 1, 12)
    ok &= (day >= 1) & (day <= days_in_month(year, month))
    days = days_from_civil(year, month, np.where(ok, day, 1))
    if "D" in names and "d" not in names:
        doy = _column(parts, names, "D", 1)
        leap = days_in_month(year, np.full(n, 2)) == 29
        ok &= (doy >= 1) & (doy <= 365 + leap)
        days = days_from_civil(year, np.ones(n, dtype=np.int64), np.ones(n, dtype=np.int64)) + doy - 1
    fraction = np.zeros(n, dtype=np.int64)
    if "S" in names:
        digits = pc.utf8_slice_codeunits(pc.fill_null(parts.field("S"), "0"), 0, 6)
        fraction = np.asarray(pc.cast(pc.utf8_rpad(digits, width=6, padding="0"), pa.int64()), dtype=np.int64)
    local = days * MICROS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1_000_000 + fraction
    return np.where(ok, local, 0), ok


def _months(names: pa.Array) -> np.ndarray:
    lowered = pc.utf8_lower(pc.fill_null(names, ""))
    full = pc.index_in(lowered, value_set=pa.array([m.lower() for m in MONTHS]))
    short = pc.index_in(lowered, value_set=pa.array([m[:3].lower() for m in MONTHS]))
    idx = pc.fill_null(pc.coalesce(full, short), -1)
    return np.asarray(idx, dtype=np.int64) + 1


def _hour_of_day(parts: pa.StructArray, names: set[str]) -> np.ndarray:
    """Hour 0-23 from H, k (1-24), or h/K with the am-pm marker (am when absent); out of range
    for the letter -> -1, so the value is rejected."""
    n = len(parts)
    if "H" in names:
        return _column(parts, names, "H", 0)
    if "k" in names:
        k = _column(parts, names, "k", 24)
        return np.where((k >= 1) & (k <= 24), k % 24, -1)
    pm = np.zeros(n, dtype=bool)
    if "a" in names:
        pm = np.asarray(pc.fill_null(pc.equal(pc.utf8_upper(parts.field("a")), "PM"), False), dtype=bool)
    if "h" in names:
        h = _column(parts, names, "h", 12)
        return np.where((h >= 1) & (h <= 12), h % 12 + 12 * pm, -1)
    if "K" in names:
        k = _column(parts, names, "K", 0)
        return np.where((k >= 0) & (k <= 11), k + 12 * pm, -1)
    return np.zeros(n, dtype=np.int64)
