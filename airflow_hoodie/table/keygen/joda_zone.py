"""Time zones and calendar arithmetic as Joda-Time has them, vectorized over epoch milliseconds.

Hudi's TimestampBasedKeyGenerator formats and parses with Joda-Time in the JVM's zone rules;
partition paths must come out the same here, so zone ids resolve as Java resolves them and
dates use the proleptic Gregorian calendar Joda uses, on numpy arrays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MS_PER_DAY = 86_400_000


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
        return offset_text(self.offset_ms, colon=True)


UTC = Zone(0)


#: Stand-in for the JVM default time zone Hudi falls back to (Spark clusters run in UTC).
DEFAULT_JVM_ZONE = UTC


def offset_text(offset_ms: int, colon: bool) -> str:
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


def days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = np.where(m > 2, m - 3, m + 9)
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def days_in_month(y: np.ndarray, m: np.ndarray) -> np.ndarray:
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    base = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)[np.clip(m, 0, 12)]
    return base + ((m == 2) & leap)


def local_to_instant(local_ms: np.ndarray, zone: Zone) -> np.ndarray:
    if not zone.region:
        return local_ms - zone.offset_ms
    ts = pa.array(local_ms, pa.timestamp("ms"))
    utc = pc.assume_timezone(ts, zone.region, ambiguous="earliest", nonexistent="latest")
    return utc.cast(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)


def parse_offsets(texts: pa.Array) -> np.ndarray:
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
