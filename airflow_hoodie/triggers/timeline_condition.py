"""The conditions sensors and triggers wait for, evaluated on the table's :class:`Timeline`.

Sensors (in a worker) and triggers (in the triggerer, inside a thread) share this
module, so poke, reschedule and deferrable modes decide exactly alike. A check lists
``.hoodie/`` once through :meth:`Timeline.load` (no Spark, no Airflow) and reads a file
only to tell a clustering replacecommit from an insert_overwrite one
(:meth:`Timeline.is_clustering`), which keeps a poll cheap enough for an object store.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Mapping

from airflow_hoodie.errors import HoodieWaitFutileError
from airflow_hoodie.table.service_outcomes import PLANNED_KINDS, nothing_planned
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant_view import (  # noqa: F401 - the states, for sensors
    COMPLETED,
    INFLIGHT,
    REQUESTED,
    InstantView,
    instant_views,
    normalize_state,
)
from airflow_hoodie.table.timeline.timeline import Timeline
from airflow_hoodie.table.timeline.timeline_paths import meta_path

#: table-service kinds a HoodiePendingServiceSensor can wait on
SERVICES = ("compaction", "logcompaction", "clustering")


def load_views(base_uri: str, storage_options: Mapping[str, Any] | None = None) -> list[InstantView] | None:
    """The instants of the table's active timeline; None when no table exists at ``base_uri``."""
    storage, base = Storage.for_uri(base_uri, storage_options)
    if not storage.exists(Storage.join(meta_path(base), "hoodie.properties")):
        return None
    return instant_views(Timeline.load(storage, base))


# ------------------------------------------------------------------ conditions
def instant_condition(
    *,
    actions: Iterable[str] | None = None,
    state: Any = COMPLETED,
    instant_time: str | None = None,
    after: str | None = None,
    fail_if_nothing_planned: bool = True,
) -> dict[str, Any]:
    """A JSON-serializable "wait for an instant" condition (triggers store their kwargs).

    ``after`` is an instant time or a checkpoint (see :func:`_after_position`);
    ``fail_if_nothing_planned``: see :func:`check_not_futile`."""
    return {
        "kind": "instant",
        "actions": sorted({str(a) for a in actions}) if actions else None,
        "state": normalize_state(state),
        "instant_time": instant_time or None,
        "after": after or None,
        "fail_if_nothing_planned": bool(fail_if_nothing_planned),
    }


def _position(view: InstantView, target_state: str) -> str:
    """What ``after`` is compared with: a completed wait on Hudi 1.x goes by completion time,
    so that a commit which completes after a newer one is still seen once, after it."""
    return view.checkpoint if target_state == COMPLETED else view.timestamp


def _after_position(after: str | None, target_state: str, views: list[InstantView]) -> str | None:
    """``after`` names an instant on the timeline (its instant time: the wait goes on past
    that instant's position) or is a checkpoint. Requested and completion times of one table
    come from one clock, so the two never collide."""
    if not after:
        return None
    named = next((v for v in views if v.timestamp == after), None)
    return _position(named, target_state) if named is not None else after


def no_pending_condition(services: Iterable[str] = ("compaction", "clustering")) -> dict[str, Any]:
    chosen = sorted({str(s) for s in services})
    unknown = [s for s in chosen if s not in SERVICES]
    if unknown:
        raise ValueError(f"Unknown table services {unknown}; choose from {list(SERVICES)}.")
    return {"kind": "no_pending", "services": chosen}


def evaluate(condition: Mapping[str, Any], views: list[InstantView] | None) -> dict[str, Any] | None:
    """The XCom-ready outcome when ``condition`` holds on ``views``, else None."""
    if views is None:
        return None  # no table yet: keep waiting, an ingest task may create it
    if condition["kind"] == "instant":
        target_state = condition["state"]
        actions = condition.get("actions")
        instant_time = condition.get("instant_time")
        after = _after_position(condition.get("after"), target_state, views)
        matches = sorted((
            v for v in views
            if v.reached(target_state)
            and (not actions or any(v.is_a(a) for a in actions))
            and (instant_time is None or v.timestamp == instant_time)
            and (after is None or _position(v, target_state) > after)
        ), key=lambda v: _position(v, target_state))
        if not matches:
            return None
        newest = matches[-1]
        return {**newest.to_dict(), "instant": newest.timestamp,
                "matched": [m.timestamp for m in matches]}
    if condition["kind"] == "no_pending":
        services = set(condition["services"])
        pending = [v for v in views if v.state != COMPLETED and v.kind in services]
        if pending:
            return None
        completed = sorted((v for v in views if v.state == COMPLETED), key=lambda v: v.checkpoint)
        last = completed[-1] if completed else None
        return {"pending": [], "services": sorted(services),
                "instant": last.timestamp if last else None,
                "completion_time": last.completion_time if last else None,
                "checkpoint": last.checkpoint if last else None}
    raise ValueError(f"Unknown timeline condition {condition!r}")


def pending_services(views: list[InstantView] | None, services: Iterable[str]) -> list[InstantView]:
    wanted = set(services)
    return [v for v in (views or []) if v.state != COMPLETED and v.kind in wanted]


def check(base_uri: str, storage_options: Mapping[str, Any] | None, condition: Mapping[str, Any],
          missing_deadline: float | None = None) -> dict[str, Any] | None:
    """Blocking: list the timeline once and evaluate ``condition`` (run in a thread from triggers).
    Raises :class:`HoodieWaitFutileError` when there is still no table at ``missing_deadline``
    (epoch seconds), or when the latest planning run said the awaited service instant will
    not come."""
    views = load_views(base_uri, storage_options)
    if views is None:
        check_table_appeared(base_uri, missing_deadline)
        return None
    outcome = evaluate(condition, views)
    if outcome is None:
        check_not_futile(base_uri, storage_options, condition, views)
    return outcome


def check_table_appeared(base_uri: str, missing_deadline: float | None) -> None:
    """A table that an ingest task creates appears within minutes; one that is still missing
    after ``hoodie_table_missing_timeout`` is most likely a typo in the path, which would
    otherwise wait out the sensor's own timeout (often days) in silence."""
    if missing_deadline is not None and time.time() >= missing_deadline:
        raise HoodieWaitFutileError(
            f"No Hudi table at {base_uri} (no .hoodie/hoodie.properties) after waiting "
            "hoodie_table_missing_timeout. Check the sensor's base_path (or the connection's base_path extra); "
            "raise hoodie_table_missing_timeout if the table is created later than that.")


def check_not_futile(base_uri: str, storage_options: Mapping[str, Any] | None, condition: Mapping[str, Any],
                     views: list[InstantView]) -> None:
    """Fail a wait for a new compaction, clustering or clean that the latest planning run of
    that service declined, with its reason: nothing of that kind is pending and nothing of
    it is newer than that decision, so only another planning run could end the wait.

    Applies when every awaited action is such a service and no particular instant is named."""
    actions = condition.get("actions") or []
    if condition.get("kind") != "instant" or condition.get("instant_time") or not actions \
            or not condition.get("fail_if_nothing_planned", True) \
            or any(a not in PLANNED_KINDS for a in actions):
        return
    storage, base = Storage.for_uri(base_uri, storage_options)
    records = nothing_planned(storage, base, actions)
    reasons = []
    for kind in actions:
        record = records.get(kind)
        if record is None or any(v.kind == kind and (v.state != COMPLETED or v.timestamp > record.latest_instant)
                                 for v in views):
            return
        reasons.append(f"{kind}: {record.reason} (decided {record.written})")
    raise HoodieWaitFutileError(
        f"Nothing will end this wait on {base_uri}: the latest planning run scheduled no "
        f"{' or '.join(actions)}, and none is pending. " + "; ".join(reasons)
        + ". Run the planning task again once the table has work for it (or pass fail_if_nothing_planned=False "
        "to wait for a later planning run).")
