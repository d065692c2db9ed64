"""Joda-Time date patterns, vectorized: how Hudi's TimestampBasedKeyGenerator turns values into paths.

Hudi parses ``hoodie.keygen.timebased.input.dateformat`` and formats
``hoodie.keygen.timebased.output.dateformat`` with Joda-Time (``DateTimeFormat.forPattern``),
and resolves time zone ids with ``java.util.TimeZone.getTimeZone`` (unknown ids silently become
GMT). A partition path has to come out identical to what Hudi writes, so this module speaks the
Joda pattern language (``yyyy/MM/dd/HH``, ``yyyy-MM-dd'T'HH:mm:ss.SSSZ``, ``EEE``, ``ww``...)
over whole arrow columns: strings are parsed with one anchored regex per pattern
(``pyarrow.compute.extract_regex``), instants are split into calendar fields with integer
arithmetic in numpy, and the output is assembled with arrow string kernels.

Where Java would use the JVM's default time zone (no zone configured and no offset in the
value), we use UTC, the usual setting of Spark clusters; configure
``hoodie.keygen.timebased.timezone`` to make it explicit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache, partial
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieKeyError,
    HoodieNotSupportedError,
)
from airflow_hoodie.table.keygen.joda_zone import (
    DEFAULT_JVM_ZONE,
    MS_PER_DAY,
    UTC,
    Zone,
    civil_from_days,
    days_from_civil,
    days_in_month,
    java_time_zone,
    local_to_instant,
    offset_text,
    parse_offsets,
)

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


# --------------------------------------------------------------------------------------
# Calendar arithmetic (proleptic Gregorian, what Joda's ISOChronology uses after 1582)
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# Pattern tokens (DateTimeFormat.parsePatternTo)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tok:
    letter: str  # "" for literal text
    count: int = 0
    text: str = ""

    @property
    def numeric(self) -> bool:
        if not self.letter:
            return False
        if self.letter in "ME":
            return self.letter == "M" and self.count <= 2
        return self.letter in "CYxwyDdHkKhmsSe"


def _tokenize(pattern: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if ("a" <= c <= "z") or ("A" <= c <= "Z"):
            j = i
            while j < n and pattern[j] == c:
                j += 1
            toks.append(_Tok(c, j - i))
            i = j
        elif c == "'":
            if i + 1 < n and pattern[i + 1] == "'":
                toks.append(_Tok("", text="'"))
                i += 2
                continue
            j = i + 1
            buf = []
            while j < n:
                if pattern[j] == "'":
                    if j + 1 < n and pattern[j + 1] == "'":
                        buf.append("'")
                        j += 2
                        continue
                    break
                buf.append(pattern[j])
                j += 1
            toks.append(_Tok("", text="".join(buf)))
            i = j + 1
        else:
            toks.append(_Tok("", text=c))
            i += 1
    merged: list[_Tok] = []
    for t in toks:  # join adjacent literals so the output needs fewer concatenations
        if not t.letter and merged and not merged[-1].letter:
            merged[-1] = _Tok("", text=merged[-1].text + t.text)
        else:
            merged.append(t)
    return merged


_SUPPORTED = set("GCYxwyDMdHkKhmsSEeaZ")


def _lpad(values: np.ndarray, width: int) -> pa.Array:
    arr = pa.array(values).cast(pa.string())
    return pc.utf8_lpad(arr, width=width, padding="0") if width > 1 else arr


def _lookup(table: Sequence[str], idx: np.ndarray) -> pa.Array:
    return pa.array(table, pa.string()).take(pa.array(idx))


@lru_cache(maxsize=16)
def _fraction_table(count: int) -> tuple[str, ...]:
    out = []
    for ms in range(1000):
        digits = f"{ms:03d}000000"  # nine digits of fraction at millisecond precision
        keep = len(digits.rstrip("0"))
        out.append(digits[: max(count, keep)] if count <= 9 else digits + "0" * (count - 9))
    return tuple(out)


@dataclass
class _LocalFields:
    """The calendar fields of instants in their zones: what every pattern letter formats."""

    n: int
    days: np.ndarray
    y: np.ndarray
    m: np.ndarray
    d: np.ndarray
    hour: np.ndarray
    minute: np.ndarray
    second: np.ndarray
    millis: np.ndarray
    dow: np.ndarray
    offsets: np.ndarray
    zones: Sequence[Zone]
    zone_index: np.ndarray

    @classmethod
    def of(cls, instants: np.ndarray, zones: Sequence[Zone], zone_index: np.ndarray | None) -> "_LocalFields":
        n = len(instants)
        offsets = np.zeros(n, dtype=np.int64)
        if zone_index is None:
            zone_index = np.zeros(n, dtype=np.int64)
        for zi, zone in enumerate(zones):
            sel = zone_index == zi
            if not sel.any():
                continue
            if zone.region:
                ts = pa.array(instants[sel], pa.timestamp("ms", tz=zone.region))
                local = pc.local_timestamp(ts).cast(pa.int64()).to_numpy(zero_copy_only=False)
                offsets[sel] = local - instants[sel]
            else:
                offsets[sel] = zone.offset_ms
        local = instants + offsets
        days = np.floor_divide(local, MS_PER_DAY)
        ms_of_day = local - days * MS_PER_DAY
        y, m, d = civil_from_days(days)
        return cls(n, days, y, m, d, ms_of_day // 3_600_000, (ms_of_day // 60000) % 60, (ms_of_day // 1000) % 60,
                   ms_of_day % 1000, (days + 3) % 7 + 1,  # Joda: Monday=1 .. Sunday=7
                   offsets, zones, zone_index)


def _format_year(values: np.ndarray, k: int) -> pa.Array:
    return _lpad(values % 100, 2) if k == 2 else _lpad(values, k)


def _week_based(f: _LocalFields) -> tuple[np.ndarray, np.ndarray]:
    """ISO week-based year and the Thursday of each date's week (Joda's x and w)."""
    thursday = f.days - (f.dow - 1) + 3
    wy, _, _ = civil_from_days(thursday)
    return wy, thursday


def _format_week(f: _LocalFields, k: int) -> pa.Array:
    wy, thursday = _week_based(f)
    jan1 = days_from_civil(wy, np.ones_like(wy), np.ones_like(wy))
    return _lpad((thursday - jan1) // 7 + 1, k)


def _format_month(f: _LocalFields, k: int) -> pa.Array:
    if k >= 4:
        return _lookup(_MONTHS, f.m - 1)
    if k == 3:
        return _lookup([s[:3] for s in _MONTHS], f.m - 1)
    return _lpad(f.m, k)


def _format_day_of_year(f: _LocalFields, k: int) -> pa.Array:
    jan1 = days_from_civil(f.y, np.ones_like(f.y), np.ones_like(f.y))
    return _lpad(f.days - jan1 + 1, k)


def _format_zone(f: _LocalFields, k: int) -> pa.Array:
    if k >= 3:
        return _lookup([z.id for z in f.zones], f.zone_index)
    uniq, inv = np.unique(f.offsets, return_inverse=True)
    return _lookup([offset_text(int(o), colon=k == 2) for o in uniq], inv.reshape(-1))


#: pattern letter -> how it formats (fields, letter count)
_FORMATTERS = {
    "y": lambda f, k: _format_year(f.y, k),
    "Y": lambda f, k: _format_year(f.y, k),
    "x": lambda f, k: _format_year(_week_based(f)[0], k),
    "w": _format_week,
    "C": lambda f, k: _lpad(f.y // 100, k),
    "G": lambda f, k: _lookup(["BC", "AD"], (f.y > 0).astype(np.int64)),
    "M": _format_month,
    "d": lambda f, k: _lpad(f.d, k),
    "D": _format_day_of_year,
    "H": lambda f, k: _lpad(f.hour, k),
    "k": lambda f, k: _lpad(np.where(f.hour == 0, 24, f.hour), k),
    "K": lambda f, k: _lpad(f.hour % 12, k),
    "h": lambda f, k: _lpad((f.hour + 11) % 12 + 1, k),
    "m": lambda f, k: _lpad(f.minute, k),
    "s": lambda f, k: _lpad(f.second, k),
    "S": lambda f, k: _lookup(_fraction_table(k), f.millis),
    "E": lambda f, k: _lookup(_DAYS if k >= 4 else [s[:3] for s in _DAYS], f.dow - 1),
    "e": lambda f, k: _lpad(f.dow, k),
    "a": lambda f, k: _lookup(["AM", "PM"], (f.hour >= 12).astype(np.int64)),
    "Z": _format_zone,
}


class JodaPattern:
    """One Joda ``DateTimeFormat`` pattern, able to format instants and parse strings."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.tokens = _tokenize(pattern)
        for t in self.tokens:
            if t.letter and t.letter not in _SUPPORTED:
                raise HoodieNotSupportedError(
                    f"Date pattern letter {t.letter!r} in {pattern!r} is not supported "
                    f"(supported: {''.join(sorted(_SUPPORTED))})."
                )
        self._regex: str | None = None
        self._groups: list[tuple[str, _Tok, bool]] = []

    def __repr__(self) -> str:
        return f"JodaPattern({self.pattern!r})"

    # ---------------------------------------------------------------- formatting

    def format(
        self,
        instants_ms: np.ndarray,
        zones: Sequence[Zone] = (UTC,),
        zone_index: np.ndarray | None = None,
    ) -> pa.Array:
        """Format epoch-millisecond instants, each in ``zones[zone_index[i]]`` (or ``zones[0]``)."""
        f = _LocalFields.of(np.asarray(instants_ms, dtype=np.int64), zones, zone_index)
        parts = [t.text if not t.letter else _FORMATTERS[t.letter](f, t.count) for t in self.tokens]
        if not parts:
            return pa.array([""] * f.n, pa.string())
        if all(isinstance(p, str) for p in parts):
            return pa.array(["".join(parts)] * f.n, pa.string())  # type: ignore[arg-type]
        return pc.binary_join_element_wise(*parts, "")

    # ---------------------------------------------------------------- parsing

    def _build_regex(self) -> str:
        if self._regex is not None:
            return self._regex
        out = ["^"]
        toks = self.tokens
        for i, t in enumerate(toks):
            nxt_numeric = i + 1 < len(toks) and toks[i + 1].numeric
            name = f"g{i}"
            c, k = t.letter, t.count
            if not c:
                out.append(re.escape(t.text))
                continue
            if c in "yYx":
                if k == 2:
                    body = r"\d{2}" if nxt_numeric else r"[-+]?\d{1,9}"
                else:
                    body = r"[-+]?\d{1,%d}" % (k if nxt_numeric else 9)
            elif c == "M" and k >= 3:
                body = "|".join(_MONTHS + [s[:3] for s in _MONTHS])
            elif c == "E":
                body = "|".join(_DAYS + [s[:3] for s in _DAYS])
            elif c == "a":
                body = "AM|PM"
            elif c == "G":
                body = "AD|BC|CE|BCE"
            elif c == "Z":
                body = r"[A-Za-z][A-Za-z0-9_/+\-]*" if k >= 3 else r"Z|[+-]\d{2}(?::?\d{2})?(?::?\d{2})?"
            elif c == "S":
                body = r"\d{1,%d}" % (k if nxt_numeric else 9)
            elif c == "D":
                body = r"\d{1,%d}" % (k if nxt_numeric else 3)
            elif c in "Ce":
                body = r"\d{1,%d}" % (k if nxt_numeric else 2 if c == "C" else 1)
            else:  # M d H k K h m s w
                body = r"\d{1,%d}" % (min(k, 2) if nxt_numeric else 2)
            out.append(f"(?P<{name}>{body})")
            self._groups.append((name, t, nxt_numeric))
        out.append("$")
        self._regex = "(?i)" + "".join(out)
        return self._regex

    def parse(
        self, values: pa.Array, zone: Zone | None, pivot_year: int | None = None
    ) -> tuple[np.ndarray, tuple[list[Zone | None], np.ndarray], pa.Array]:
        """Parse strings: (instants_ms of matched rows, (zones found, index per matched row), matched).

        ``zone`` is the formatter's zone (``hoodie.keygen.timebased.input.timezone``), used for
        values that carry no offset; None means the JVM default. Zone index 0 (None) means the
        value carried no zone of its own.
        """
        groups = pc.extract_regex(values, self._build_regex())
        matched = groups.is_valid()
        if isinstance(matched, pa.ChunkedArray):
            matched = matched.combine_chunks()
        n_ok = int(np.asarray(matched.to_numpy(zero_copy_only=False), dtype=bool).sum())
        if n_ok == 0:
            return np.zeros(0, np.int64), ([None], np.zeros(0, np.int64)), matched
        sub = groups.filter(matched)
        if isinstance(sub, pa.ChunkedArray):
            sub = sub.combine_chunks()
        f = _ParsedFields.start(n_ok)
        for name, t, _ in self._groups:
            _PARSERS.get(t.letter, _ignored)(f, sub.field(name), t.count, pivot_year)
        days, bad = f.epoch_days()
        if bad.any():
            first = values.filter(matched)[int(np.flatnonzero(bad)[0])].as_py()
            raise HoodieKeyError(
                f"Value {first!r} matches date pattern {self.pattern!r} but is not a valid date/time "
                "(month, day or time field out of range)."
            )
        local = days * MS_PER_DAY + f.hour * 3_600_000 + f.minute * 60000 + f.second * 1000 + f.millis
        instants, found = f.instants(local, zone)
        return instants, found, matched


@dataclass
class _ParsedFields:
    """The fields a pattern's groups parsed, before they become an instant."""

    one: np.ndarray
    year: np.ndarray
    month: np.ndarray
    day: np.ndarray
    hour: np.ndarray
    minute: np.ndarray
    second: np.ndarray
    millis: np.ndarray
    doy: np.ndarray | None = None
    half: np.ndarray | None = None
    hour_kind: str = "H"
    offset_ms: np.ndarray | None = None
    region_ids: pa.Array | None = None

    @classmethod
    def start(cls, n: int) -> "_ParsedFields":
        one = np.ones(n, dtype=np.int64)
        zero = np.zeros(n, np.int64)
        return cls(one, one * 1970, one.copy(), one.copy(), zero, zero.copy(), zero.copy(), zero.copy())

    def hours_of_day(self) -> np.ndarray:
        """0-23 from whichever hour letter the pattern used (k: 1-24, K: 0-11, h: 1-12, a: AM/PM)."""
        hour = self.hour
        if self.hour_kind == "k":
            return np.where(hour == 24, 0, hour)
        if self.hour_kind in "Kh":
            if self.hour_kind == "h":
                hour = np.where(hour == 12, 0, hour)
            if self.half is not None:
                hour = hour + np.where(self.half, 12, 0)
        return hour

    def epoch_days(self) -> tuple[np.ndarray, np.ndarray]:
        """Days since the epoch, and which rows hold an out-of-range field."""
        self.hour = self.hours_of_day()
        bad = (self.hour < 0) | (self.hour > 23) | (self.minute > 59) | (self.second > 59)
        one = self.one
        if self.doy is not None:
            jan1 = days_from_civil(self.year, one, one)
            leap_len = days_in_month(self.year, one * 2) + 337
            return jan1 + self.doy - 1, bad | (self.doy < 1) | (self.doy > leap_len)
        bad |= ((self.month < 1) | (self.month > 12) | (self.day < 1)
                | (self.day > days_in_month(self.year, self.month)))
        return days_from_civil(self.year, self.month, self.day), bad

    def instants(self, local: np.ndarray, zone: Zone | None) -> tuple[np.ndarray, tuple[list[Zone | None], np.ndarray]]:
        """The instant uses the offset/zone found in the value, else the formatter's zone, else the
        JVM default. Each row also reports the zone found in it (index 0, None: nothing found)."""
        found: list[Zone | None] = [None]
        found_idx = np.zeros(len(local), dtype=np.int64)
        if self.offset_ms is not None:
            uniq, inv = np.unique(self.offset_ms, return_inverse=True)
            found += [Zone(int(o)) for o in uniq.tolist()]
            return local - self.offset_ms, (found, inv.reshape(-1).astype(np.int64) + 1)
        if self.region_ids is None:
            return local_to_instant(local, zone or DEFAULT_JVM_ZONE), (found, found_idx)
        instants = local.copy()
        for rid in pc.unique(self.region_ids).to_pylist():
            z = java_time_zone(rid) or UTC
            sel = np.asarray(pc.equal(self.region_ids, rid).to_numpy(zero_copy_only=False), dtype=bool)
            instants[sel] = local_to_instant(local[sel], z)
            found.append(z)
            found_idx[sel] = len(found) - 1
        return instants, (found, found_idx)


def _ints(raw: pa.Array) -> np.ndarray:
    return pc.cast(raw, pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)


def _parse_year(f: _ParsedFields, raw: pa.Array, k: int, pivot_year: int | None) -> None:
    year = _ints(raw)
    if k == 2:
        two = pc.utf8_length(raw).to_numpy(zero_copy_only=False) == 2
        if two.any():  # Joda's two-digit year: the century around pivot (today - 30) +/- 50
            pivot = pivot_year if pivot_year is not None else date.today().year - 30
            low = pivot - 50
            conv = low - (low % 100) + year
            year = np.where(two, np.where(conv < low, conv + 100, conv), year)
    f.year = year


def _parse_month(f: _ParsedFields, raw: pa.Array, k: int, _: int | None) -> None:
    if k < 3:
        f.month = _ints(raw)
        return
    names = [s.lower() for s in _MONTHS] + [s[:3].lower() for s in _MONTHS]
    idx = pc.index_in(pc.utf8_lower(raw), value_set=pa.array(names)).to_numpy(zero_copy_only=False)
    f.month = (np.asarray(idx, dtype=np.int64) % 12) + 1


def _parse_hour(f: _ParsedFields, raw: pa.Array, k: int, _: int | None, kind: str = "H") -> None:
    f.hour, f.hour_kind = _ints(raw), kind


def _parse_millis(f: _ParsedFields, raw: pa.Array, k: int, _: int | None) -> None:
    digits = pc.utf8_rpad(pc.utf8_slice_codeunits(raw, 0, 3), width=3, padding="0")
    f.millis = _ints(digits)


def _parse_zone(f: _ParsedFields, raw: pa.Array, k: int, _: int | None) -> None:
    if k >= 3:
        f.region_ids = raw
    else:
        f.offset_ms = parse_offsets(raw)


def _set(attr: str):
    def parse(f: _ParsedFields, raw: pa.Array, k: int, _: int | None) -> None:
        setattr(f, attr, _ints(raw))
    return parse


def _ignored(f: _ParsedFields, raw: pa.Array, k: int, _: int | None) -> None:
    """G, C, x, w, E, e are accepted and ignored: they do not change the instant here."""


#: pattern letter -> what its parsed group sets
_PARSERS = {
    "y": _parse_year, "Y": _parse_year, "M": _parse_month, "d": _set("day"), "D": _set("doy"),
    "H": _parse_hour, "k": partial(_parse_hour, kind="k"), "K": partial(_parse_hour, kind="K"),
    "h": partial(_parse_hour, kind="h"), "m": _set("minute"), "s": _set("second"), "S": _parse_millis,
    "a": lambda f, raw, k, _: setattr(f, "half", np.asarray(pc.equal(pc.utf8_upper(raw), "PM")
                                                         .to_numpy(zero_copy_only=False), dtype=bool)),
    "Z": _parse_zone,
}


def parse_to_zones(
    patterns: Sequence[JodaPattern], values: pa.Array, input_zone: Zone | None
) -> tuple[np.ndarray, list[Zone], np.ndarray]:
    """Parse with the first pattern that matches each value (Joda's multi-parser).

    Returns (instants_ms, zones, zone_index): the zone each parsed value carries, as Joda's
    ``parseDateTime`` would attach it (the input zone if configured, else the offset found in
    the value, else the JVM default).
    """
    n = len(values)
    instants = np.zeros(n, dtype=np.int64)
    zones: list[Zone] = [input_zone or DEFAULT_JVM_ZONE]
    zone_index = np.zeros(n, dtype=np.int64)
    remaining = np.arange(n, dtype=np.int64)
    for pat in patterns:
        if len(remaining) == 0:
            break
        sub = values.take(pa.array(remaining))
        inst, (found, found_idx), matched = pat.parse(sub, input_zone)
        ok = np.asarray(matched.to_numpy(zero_copy_only=False), dtype=bool)
        rows = remaining[ok]
        instants[rows] = inst
        if input_zone is None:  # Joda withOffsetParsed(): the value's own zone wins
            for fi, z in enumerate(found):
                if z is None:
                    continue
                if z not in zones:
                    zones.append(z)
                zone_index[rows[found_idx == fi]] = zones.index(z)
        remaining = remaining[~ok]
    if len(remaining):
        bad = values[int(remaining[0])].as_py()
        raise HoodieKeyError(
            f"Unable to parse input partition field value {bad!r} with date format(s) "
            f"{[p.pattern for p in patterns]} (hoodie.keygen.timebased.input.dateformat)."
        )
    return instants, zones, zone_index


def require_pattern(pattern: str | None, key: str) -> JodaPattern:
    if pattern is None or not pattern.strip():
        raise HoodieConfigError(f"Setting {key!r} is required for the timestamp-based key generator.")
    return JodaPattern(pattern.strip())
