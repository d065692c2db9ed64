"""The Spark session time zone, and the two conversions Spark's datetime functions make with it.

Spark resolves ``spark.sql.session.timeZone`` with ``java.time.ZoneId.of``: a region id or a fixed
offset. A local date-time becomes an instant the way ``ZonedDateTime.of`` does it: in a gap
(spring forward) the offset before the transition applies, so 02:30 becomes 03:30; in an overlap
(fall back) the earlier offset wins. Arrow's ``assume_timezone`` has no such option, hence this
module. Times are int64 microseconds, Spark's own unit.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieConfigError

MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND

_OFFSET = re.compile(r"^(?:GMT|UTC|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$")


@lru_cache(maxsize=64)
def session_zone(zone_id: str) -> str:
    """The Arrow time-zone string for a Spark session zone id (``ZoneId.of`` rules); an id Java
    would reject is refused, since Spark would refuse the session setting too."""
    zid = zone_id.strip()
    if zid.upper() in ("Z", "UTC", "GMT", "UT"):
        return "UTC"
    m = _OFFSET.match(zid)
    if m:
        hours, minutes, seconds = int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0)
        if hours > 18 or minutes > 59 or seconds:
            raise HoodieConfigError(f"session time zone {zone_id!r} is not a zone id Spark accepts")
        return f"{m.group(1)}{hours:02d}:{minutes:02d}"
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(zid)
    except Exception as exc:
        raise HoodieConfigError(f"session time zone {zone_id!r} is not a zone id Spark accepts") from exc
    return zid


#: 2037-01-01: Arrow's zone rules end with the table of transitions; Java (and ``zoneinfo``)
#: go on applying the zone's recurring rule
_RULES_END = 2114380800 * MICROS_PER_SECOND


def _offsets_at(instants: np.ndarray, zone: str) -> np.ndarray:
    """The zone's UTC offset (microseconds) at each instant."""
    aware = pa.array(instants, pa.timestamp("us", tz=zone))
    local = pc.local_timestamp(aware).cast(pa.int64()).to_numpy(zero_copy_only=False)
    offsets = local.astype(np.int64) - instants
    late = np.flatnonzero(instants >= _RULES_END)
    if late.size and zone[0] not in "+-" and zone != "UTC":
        from zoneinfo import ZoneInfo

        tz = ZoneInfo(zone)
        epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
        for i in late:
            at = epoch + timedelta(microseconds=int(instants[i]))
            offsets[i] = at.astimezone(tz).utcoffset() // timedelta(microseconds=1)
    return offsets


def instant_to_local(instants: np.ndarray, zone: str) -> np.ndarray:
    """Wall-clock microseconds in ``zone`` of UTC instants (microseconds)."""
    return instants + _offsets_at(instants, zone)


def local_to_instant(local: np.ndarray, zone: str) -> np.ndarray:
    """UTC instants of wall-clock times in ``zone``, resolved as ``ZonedDateTime.of`` does."""
    before = _offsets_at(local - MICROS_PER_DAY, zone)
    after = _offsets_at(local + MICROS_PER_DAY, zone)
    early = local - before
    late = local - after
    early_ok = _offsets_at(early, zone) == before
    late_ok = _offsets_at(late, zone) == after
    # overlap: both valid, the earlier offset (before the transition) wins; gap: neither is,
    # and Java keeps the offset before the transition
    return np.where(early_ok | ~late_ok, early, late)
