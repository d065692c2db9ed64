"""What the table services (compaction, clustering, clean, archive, savepoint) share.

Planning code works on plain inputs (instants, file slices as the file system view
returns them) so each policy can be unit tested without a table on disk; these helpers
are the small glue: state checks that accept both properties and methods, instant-time
arithmetic, and writing an Avro plan into a ``.requested`` file.
"""

from __future__ import annotations

import datetime as _dt
import os
import signal
from typing import Any, Iterable

from airflow_hoodie.errors import HoodieSchemaError
from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.table.file_group.file_naming import (
    parse_base_file_name,
    parse_log_file_name,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.schema.table_schema import CREATE_SCHEMA, latest_avro_schema
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    State,
    format_instant_time,
    parse_instant_time,
)

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
    return format_instant_time(when)


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

    return avro_codec.serialize(schema_name, record)


def deserialize_plan(schema_name: str | None, data: bytes) -> dict[str, Any]:

    return avro_codec.deserialize(data, schema_name)


# ------------------------------------------------------------------ execution helpers
def table_avro_schema(table: HoodieTable) -> dict[str, Any]:
    """The schema a service writes its new files with: the table's current schema."""
    schema = latest_avro_schema(table.timeline, table.config.get(CREATE_SCHEMA))
    if schema is None:
        raise HoodieSchemaError(
            f"Cannot find the schema of {table.base_uri}: no completed commit carries one and "
            "hoodie.table.create.schema is unset. Write data to the table first."
        )
    return schema


def table_props(table: HoodieTable) -> dict[str, str]:
    return {str(k): str(v) for k, v in dict(table.config).items()}


def rollback_pending_service(table: HoodieTable, instant_time: str, partitions: Iterable[str]) -> list[str]:
    """Undo a crashed compaction/clustering attempt so it can re-run from its plan.

    Only that action writes files named with its instant time, so every data file in the
    plan's partitions carrying ``instant_time`` (plus what its markers name) is removed;
    then the marker directory goes and the instant is back to requested. Returns the
    relative paths deleted.
    """

    storage, base = table.storage, table.base_path
    deleted: list[str] = []
    for m in mk.list_markers(storage, base, instant_time):
        if storage.delete(storage.join(base, m.data_path)):
            deleted.append(m.data_path)
    for part in sorted(set(partitions)):
        pdir = table.partition_dir(part)
        if not storage.exists(pdir):
            continue
        for st in storage.list_dir(pdir):
            if st.is_dir:
                continue
            parsed = parse_base_file_name(st.name)
            if parsed is not None and parsed.instant == instant_time:
                if storage.delete(st.path):
                    deleted.append(table.relative_path(st.path))
    mk.delete_marker_dir(storage, base, instant_time)
    _ = parse_log_file_name
    return deleted


def reconcile_with_markers(table: HoodieTable, instant_time: str, written: set[str]) -> list[str]:
    """Delete files a retried/speculative task left behind (marked but not in the stats)."""

    gone = []
    for m in mk.list_markers(table.storage, table.base_path, instant_time):
        if m.data_path not in written:
            if table.storage.delete(table.storage.join(table.base_path, m.data_path)):
                gone.append(m.data_path)
    return gone


def find_instant(timeline: Any, ts: str, actions: Iterable[str]) -> Instant | None:
    """The instant at ``ts`` whose action is one of ``actions`` (compaction counts as commit)."""
    wanted = set(actions)
    if Action.REPLACE_COMMIT in wanted:  # Hudi 1.x's pending clustering completes as a replacecommit
        wanted.add(Action.CLUSTERING)
    for inst in timeline.instants:
        if inst.timestamp == ts and (inst.action in wanted or
                                     (inst.action == Action.COMMIT and Action.COMPACTION in wanted)):
            return inst
    return None


_CRASH_ENV = "AIRFLOW_HOODIE_CRASH_AT"
_crash_hits: dict[str, int] = {}


def crash_point(name: str) -> None:
    """Test hook: SIGKILL this process at ``name`` when ``AIRFLOW_HOODIE_CRASH_AT`` says so.

    The value is ``name`` or ``name:N`` (die on the N-th time the point is reached), so the
    crash tests can kill a job between any two timeline transitions or mid-write, exactly
    like an Airflow worker losing its task. Costs one dict lookup when unset.
    """

    wanted = os.environ.get(_CRASH_ENV)
    if not wanted:
        return
    target, _, nth = wanted.partition(":")
    if target != name:
        return
    _crash_hits[name] = _crash_hits.get(name, 0) + 1
    if _crash_hits[name] >= int(nth or 1):

        os.kill(os.getpid(), signal.SIGKILL)
