"""What the table services (compaction, clustering, clean, archive, savepoint) share.

Planning code works on plain inputs (instants, file slices as the file system view
returns them) so each policy can be unit tested without a table on disk; these helpers
are the small glue: state checks that accept both properties and methods, instant-time
arithmetic, and writing an Avro plan into a ``.requested`` file.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable

from airflow_hoodie.table.instant import Action, Instant, State, parse_instant_time

MB = 1024 * 1024


def flag(obj: Any, name: str) -> bool:
    """``obj.name`` whether it is a property or a zero-argument method."""
    value = getattr(obj, name)
    return bool(value() if callable(value) else value)


def is_completed(instant: Instant) -> bool:
    return instant.state == State.COMPLETED


def is_pending(instant: Instant) -> bool:
    return instant.state != State.COMPLETED


def seconds_between(earlier: str, later: str) -> float:
    """Seconds from instant time ``earlier`` to ``later`` (both yyyyMMddHHmmss[SSS])."""
    return (parse_instant_time(later) - parse_instant_time(earlier)).total_seconds()


def instant_minus_hours(ts: str, hours: int) -> str:
    """The instant time ``hours`` before ``ts`` (Hudi's KEEP_LATEST_BY_HOURS bound)."""
    when = parse_instant_time(ts) - _dt.timedelta(hours=hours)
    return when.strftime("%Y%m%d%H%M%S") + f"{when.microsecond // 1000:03d}"


def completed_commits(instants: Iterable[Instant]) -> list[Instant]:
    """Hudi's completed commits timeline (commit, deltacommit, replacecommit), sorted."""
    return sorted(
        (i for i in instants if is_completed(i) and i.action in Action.COMMITS),
        key=lambda i: i.sort_key,
    )


def action_instant(instant: Instant) -> dict[str, str]:
    """Hudi's ``HoodieActionInstant`` record (timestamp, action, state name)."""
    return {"timestamp": instant.timestamp, "action": instant.action, "state": instant.state.name}


def serialize_plan(schema_name: str, record: dict[str, Any]) -> bytes:
    """Avro container bytes for a plan/metadata record, via the shared Avro codec."""
    from airflow_hoodie.table import avro_codec  # the avro helper's module

    return avro_codec.serialize(schema_name, record)


def deserialize_plan(schema_name: str | None, data: bytes) -> dict[str, Any]:
    from airflow_hoodie.table import avro_codec

    return avro_codec.deserialize(data, schema_name)
