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
from functools import lru_cache
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieConfigError, HoodieKeyError, HoodieNotSupportedError

__all__ = ["Zone", "UTC", "DEFAULT_JVM_ZONE", "java_time_zone", "JodaPattern"]

_MS_PER_DAY = 86_400_000
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


@dataclass(frozen=True)
class Zone:
    """A time zone as Joda sees it: a fixed offset or a tz-database region."""

    offset_ms: int = 0
    region: str | None = None

    @property
    def id(self) -> str:
        if self.region:
            return self.region
        if self.offset_ms == 0:
            return "UTC"
        return _offset_text(self.offset_ms, colon=True)


UTC = Zone(0)
#: Stand-in for the JVM default time zone Hudi falls back to (Spark clusters run in UTC).
DEFAULT_JVM_ZONE = UTC


def _offset_text(offset_ms: int, colon: bool) -> str:
    sign = "-" if offset_ms < 0 else "+"
    total = abs(offset_ms) // 60000
    hh, mm = divmod(total, 60)
    return f"{sign}{hh:02d}:{mm:02d}" if colon else f"{sign}{hh:02d}{mm:02d}"


_CUSTOM_ID = re.compile(r"^(?:GMT|UTC|UT)?([+-])(\d{1,2})(?::?(\d{2}))?$")


@lru_cache(maxsize=256)
def java_time_zone(zone_id: str | None) -> Zone | None:
    """``DateTimeZone.forTimeZone(TimeZone.getTimeZone(id))``; blank -> None (not configured)."""
    if zone_id is None or not zone_id.strip():
        return None
    zid = zone_id.strip()
    if zid.upper() in ("UTC", "GMT", "UT", "Z", "ZULU", "UCT", "UNIVERSAL", "GREENWICH", "ETC/UTC", "ETC/GMT"):
        return UTC
    m = _CUSTOM_ID.match(zid)
    if m and (zid[0] in "+-" or zid.upper().startswith(("GMT", "UTC", "UT"))):
        hours, minutes = int(m.group(2)), int(m.group(3) or 0)
        if hours > 23 or minutes > 59:
            return UTC  # Java: an invalid custom id falls back to GMT
        off = (hours * 60 + minutes) * 60000
        return Zone(-off if m.group(1) == "-" else off)
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(zid)
    except Exception:
        return UTC  # Java's TimeZone.getTimeZone returns GMT for ids it does not know
    return Zone(0, zid)


# --------------------------------------------------------------------------------------
# Calendar arithmetic (proleptic Gregorian, what Joda's ISOChronology uses after 1582)
# --------------------------------------------------------------------------------------


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = np.where(m > 2, m - 3, m + 9)
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z = days + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    y = yoe + era * 400 + (m <= 2)
    return y, m, d


def _days_in_month(y: np.ndarray, m: np.ndarray) -> np.ndarray:
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    base = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)[np.clip(m, 0, 12)]
    return base + ((m == 2) & leap)


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
        instants = np.asarray(instants_ms, dtype=np.int64)
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
        days = np.floor_divide(local, _MS_PER_DAY)
        ms_of_day = local - days * _MS_PER_DAY
        y, m, d = _civil_from_days(days)
        hour = ms_of_day // 3_600_000
        minute = (ms_of_day // 60000) % 60
        second = (ms_of_day // 1000) % 60
        millis = ms_of_day % 1000
        dow = (days + 3) % 7 + 1  # Joda: Monday=1 .. Sunday=7

        parts: list[pa.Array | str] = []
        for t in self.tokens:
            c, k = t.letter, t.count
            if not c:
                parts.append(t.text)
            elif c in "yY":
                parts.append(_lpad(y % 100, 2) if k == 2 else _lpad(y, k))
            elif c == "x" or c == "w":
                thursday = days - (dow - 1) + 3
                wy, _, _ = _civil_from_days(thursday)
                if c == "x":
                    parts.append(_lpad(wy % 100, 2) if k == 2 else _lpad(wy, k))
                else:
                    jan1 = _days_from_civil(wy, np.ones_like(wy), np.ones_like(wy))
                    parts.append(_lpad((thursday - jan1) // 7 + 1, k))
            elif c == "C":
                parts.append(_lpad(y // 100, k))
            elif c == "G":
                parts.append(_lookup(["BC", "AD"], (y > 0).astype(np.int64)))
            elif c == "M":
                if k >= 4:
                    parts.append(_lookup(_MONTHS, m - 1))
                elif k == 3:
                    parts.append(_lookup([s[:3] for s in _MONTHS], m - 1))
                else:
                    parts.append(_lpad(m, k))
            elif c == "d":
                parts.append(_lpad(d, k))
            elif c == "D":
                jan1 = _days_from_civil(y, np.ones_like(y), np.ones_like(y))
                parts.append(_lpad(days - jan1 + 1, k))
            elif c == "H":
                parts.append(_lpad(hour, k))
            elif c == "k":
                parts.append(_lpad(np.where(hour == 0, 24, hour), k))
            elif c == "K":
                parts.append(_lpad(hour % 12, k))
            elif c == "h":
                parts.append(_lpad((hour + 11) % 12 + 1, k))
            elif c == "m":
                parts.append(_lpad(minute, k))
            elif c == "s":
                parts.append(_lpad(second, k))
            elif c == "S":
                parts.append(_lookup(_fraction_table(k), millis))
            elif c == "E":
                names = _DAYS if k >= 4 else [s[:3] for s in _DAYS]
                parts.append(_lookup(names, dow - 1))
            elif c == "e":
                parts.append(_lpad(dow, k))
            elif c == "a":
                parts.append(_lookup(["AM", "PM"], (hour >= 12).astype(np.int64)))
            elif c == "Z":
                if k >= 3:
                    ids = [z.id for z in zones]
                    parts.append(_lookup(ids, zone_index))
                else:
                    uniq, inv = np.unique(offsets, return_inverse=True)
                    parts.append(_lookup([_offset_text(int(o), colon=k == 2) for o in uniq], inv.reshape(-1)))
        if not parts:
            return pa.array([""] * n, pa.string())
        arrays = [p for p in parts if not isinstance(p, str)]
        if not arrays:
            return pa.array(["".join(parts)] * n, pa.string())  # type: ignore[arg-type]
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
        regex = self._build_regex()
        groups = pc.extract_regex(values, regex)
        matched = groups.is_valid()
        if isinstance(matched, pa.ChunkedArray):
            matched = matched.combine_chunks()
        mask = np.asarray(matched.to_numpy(zero_copy_only=False), dtype=bool)
        n_ok = int(mask.sum())
        if n_ok == 0:
            return np.zeros(0, np.int64), ([None], np.zeros(0, np.int64)), matched
        sub = groups.filter(matched)
        if isinstance(sub, pa.ChunkedArray):
            sub = sub.combine_chunks()

        def field(name: str) -> pa.Array:
            return sub.field(name)

        def ints(name: str) -> np.ndarray:
            return pc.cast(field(name), pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)

        one = np.ones(n_ok, dtype=np.int64)
        year, month, day = one * 1970, one.copy(), one.copy()
        hour = np.zeros(n_ok, np.int64)
        minute = np.zeros(n_ok, np.int64)
        second = np.zeros(n_ok, np.int64)
        millis = np.zeros(n_ok, np.int64)
        doy = None
        half = None
        hour_kind = "H"
        offset_ms = None
        region_ids: pa.Array | None = None
        for name, t, nxt_numeric in self._groups:
            c, k = t.letter, t.count
            if c in "yY":
                raw = field(name)
                year = ints(name)
                if k == 2:
                    lengths = pc.utf8_length(raw).to_numpy(zero_copy_only=False)
                    two = lengths == 2
                    if two.any():
                        pivot = pivot_year if pivot_year is not None else date.today().year - 30
                        low = pivot - 50
                        base = low - (low % 100)
                        conv = base + year
                        conv = np.where(conv < low, conv + 100, conv)
                        year = np.where(two, conv, year)
            elif c == "M":
                if k >= 3:
                    lowered = pc.utf8_lower(field(name))
                    names = [s.lower() for s in _MONTHS] + [s[:3].lower() for s in _MONTHS]
                    idx = pc.index_in(lowered, value_set=pa.array(names)).to_numpy(zero_copy_only=False)
                    month = (np.asarray(idx, dtype=np.int64) % 12) + 1
                else:
                    month = ints(name)
            elif c == "d":
                day = ints(name)
            elif c == "D":
                doy = ints(name)
            elif c in "HkKh":
                hour = ints(name)
                hour_kind = c
            elif c == "m":
                minute = ints(name)
            elif c == "s":
                second = ints(name)
            elif c == "S":
                digits = pc.utf8_rpad(pc.utf8_slice_codeunits(field(name), 0, 3), width=3, padding="0")
                millis = pc.cast(digits, pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)
            elif c == "a":
                half = np.asarray(pc.equal(pc.utf8_upper(field(name)), "PM").to_numpy(zero_copy_only=False), dtype=bool)
            elif c == "Z":
                if k >= 3:
                    region_ids = field(name)
                else:
                    offset_ms = _parse_offsets(field(name))
            # G, C, x, w, E, e are accepted and ignored, as they do not change the instant here
        if hour_kind == "k":
            hour = np.where(hour == 24, 0, hour)
        elif hour_kind in "Kh":
            if hour_kind == "h":
                hour = np.where(hour == 12, 0, hour)
            if half is not None:
                hour = hour + np.where(half, 12, 0)
        bad = (hour < 0) | (hour > 23) | (minute > 59) | (second > 59)
        if doy is not None:
            jan1 = _days_from_civil(year, one, one)
            days = jan1 + doy - 1
            leap_len = _days_in_month(year, one * 2) + 337
            bad |= (doy < 1) | (doy > leap_len)
        else:
            bad |= (month < 1) | (month > 12) | (day < 1) | (day > _days_in_month(year, month))
            days = _days_from_civil(year, month, day)
        if bad.any():
            first = values.filter(matched)[int(np.flatnonzero(bad)[0])].as_py()
            raise HoodieKeyError(
                f"Value {first!r} matches date pattern {self.pattern!r} but is not a valid date/time "
                "(month, day or time field out of range)."
            )
        local = days * _MS_PER_DAY + hour * 3_600_000 + minute * 60000 + second * 1000 + millis
        # The instant uses the offset/zone found in the value, else the formatter's zone, else the
        # JVM default. Each row also reports the zone found in it (None = nothing found).
        found: list[Zone | None] = [None]
        found_idx = np.zeros(n_ok, dtype=np.int64)
        if offset_ms is not None:
            instants = local - offset_ms
            uniq, inv = np.unique(offset_ms, return_inverse=True)
            found += [Zone(int(o)) for o in uniq.tolist()]
            found_idx = inv.reshape(-1).astype(np.int64) + 1
        elif region_ids is not None:
            instants = local.copy()
            for rid in pc.unique(region_ids).to_pylist():
                z = java_time_zone(rid) or UTC
                sel = np.asarray(pc.equal(region_ids, rid).to_numpy(zero_copy_only=False), dtype=bool)
                instants[sel] = _local_to_instant(local[sel], z)
                found.append(z)
                found_idx[sel] = len(found) - 1
        else:
            instants = _local_to_instant(local, zone or DEFAULT_JVM_ZONE)
        return instants, (found, found_idx), matched


def _local_to_instant(local_ms: np.ndarray, zone: Zone) -> np.ndarray:
    if not zone.region:
        return local_ms - zone.offset_ms
    ts = pa.array(local_ms, pa.timestamp("ms"))
    utc = pc.assume_timezone(ts, zone.region, ambiguous="earliest", nonexistent="latest")
    return utc.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)


def _parse_offsets(texts: pa.Array) -> np.ndarray:
    uniq = pc.unique(texts).to_pylist()
    table = {}
    for u in uniq:
        if u.upper() == "Z":
            table[u] = 0
            continue
        sign = -1 if u[0] == "-" else 1
        digits = u[1:].replace(":", "")
        hh = int(digits[0:2])
        mm = int(digits[2:4] or 0)
        ss = int(digits[4:6] or 0)
        table[u] = sign * ((hh * 60 + mm) * 60 + ss) * 1000
    keys = pa.array(list(table.keys()), pa.string())
    vals = np.array(list(table.values()), dtype=np.int64)
    idx = pc.index_in(texts, value_set=keys).to_numpy(zero_copy_only=False)
    return vals[np.asarray(idx, dtype=np.int64)]


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
