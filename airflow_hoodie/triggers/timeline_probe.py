"""One cheap look at a table's active timeline, and the conditions sensors wait for.

Sensors (in a worker) and triggers (in the triggerer, inside a thread) share this
module, so poke, reschedule and deferrable modes decide exactly alike. A probe is a
single directory listing of ``.hoodie/``: no file is read, no Spark, no Airflow. That
keeps a poll cheap enough to run every few seconds against an object store.

Why a listing rather than the parsed :class:`Timeline`: a sensor must tell a completed
*compaction* from a completed ingest *commit* (both complete as ``ts.commit``) and a
*clustering* replacecommit from an ``insert_overwrite`` one. Hudi keeps the
``.compaction.requested`` / ``.replacecommit.requested`` files next to the completed
instant until archival, so the full set of files per timestamp answers both questions.
File names are parsed by :meth:`airflow_hoodie.table.timeline.instant.Instant.parse`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

from airflow_hoodie.table.timeline.instant import Instant

REQUESTED = "REQUESTED"
INFLIGHT = "INFLIGHT"
COMPLETED = "COMPLETED"
_STATE_RANK = {REQUESTED: 0, INFLIGHT: 1, COMPLETED: 2}

#: pending action -> the action its instant completes as
_COMPLETES_AS = {"compaction": "commit", "logcompaction": "deltacommit", "clustering": "replacecommit"}

#: table-service kinds a HoodiePendingServiceSensor can wait on
SERVICES = ("compaction", "logcompaction", "clustering")

@dataclass(frozen=True)
class TimelineFile:
    """One instant file: what :class:`Instant` holds, plus the file's size."""

    timestamp: str
    action: str
    state: str
    size: int = 0


@dataclass(frozen=True)
class InstantView:
    """Everything known about one timestamp: its latest state and what kind of action it is.

    ``action`` is the action of the latest state's file (``commit`` for a completed
    compaction); ``kind`` is what was planned (``compaction``, ``logcompaction``,
    ``clustering``) or the action itself.
    """

    timestamp: str
    action: str
    kind: str
    state: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    def is_a(self, action: str) -> bool:
        return action in (self.action, self.kind)

    def reached(self, state: str) -> bool:
        return _STATE_RANK[self.state] >= _STATE_RANK[normalize_state(state)]


def normalize_state(state: Any) -> str:
    value = getattr(state, "value", state)
    text = str(value).upper()
    if text not in _STATE_RANK:
        raise ValueError(f"Unknown instant state {state!r}; use requested, inflight or completed.")
    return text


def parse_instant_file_name(name: str) -> tuple[str, str, str] | None:
    """``(timestamp, action, state)`` of a timeline file name, or None for other files."""
    parsed = Instant.parse(name)
    if parsed is None:
        return None
    return parsed.timestamp, str(getattr(parsed.action, "value", parsed.action)), normalize_state(parsed.state)


def list_timeline(base_uri: str, storage_options: Mapping[str, Any] | None = None) -> list[TimelineFile] | None:
    """The instant files of the active timeline; None when no table exists at ``base_uri``."""
    from airflow_hoodie.table.storage.storage import Storage

    from airflow_hoodie.table.timeline.replace_kind import is_clustering_requested
    from airflow_hoodie.table.timeline.timeline import timeline_path

    storage, base = Storage.for_uri(base_uri, storage_options)
    meta = Storage.join(base, ".hoodie")
    if not storage.exists(Storage.join(meta, "hoodie.properties")):
        return None
    files: list[TimelineFile] = []
    for status in storage.list_dir(timeline_path(storage, base)):
        if status.is_dir:
            continue
        parsed = parse_instant_file_name(status.name)
        if parsed is None:
            continue
        ts, action, state = parsed
        if action == "replacecommit" and state == REQUESTED and status.size:
            # a clustering plan, or an insert_overwrite's requested metadata: the plan says which
            if is_clustering_requested(storage.read_bytes(status.path)):
                action = "clustering"
        files.append(TimelineFile(ts, action, state, status.size))
    return files


def instant_views(files: Iterable[TimelineFile]) -> list[InstantView]:
    """Collapse the files of each timestamp into one :class:`InstantView`, oldest first."""
    by_ts: dict[str, list[TimelineFile]] = {}
    for f in files:
        by_ts.setdefault(f.timestamp, []).append(f)
    views: list[InstantView] = []
    for ts in sorted(by_ts):
        group = by_ts[ts]
        actions = {f.action for f in group}
        if "compaction" in actions:
            kind = "compaction"
        elif "logcompaction" in actions:
            kind = "logcompaction"
        elif "clustering" in actions:
            kind = "clustering"
        else:
            kind = ""
        latest = max(group, key=lambda f: _STATE_RANK[f.state])
        action = latest.action
        if latest.state == COMPLETED and kind in _COMPLETES_AS:
            action = _COMPLETES_AS[kind]
        views.append(InstantView(ts, action, kind or action, latest.state))
    return views


def load_views(base_uri: str, storage_options: Mapping[str, Any] | None = None) -> list[InstantView] | None:
    files = list_timeline(base_uri, storage_options)
    return None if files is None else instant_views(files)


# ------------------------------------------------------------------ conditions
def instant_condition(
    *,
    actions: Iterable[str] | None = None,
    state: Any = COMPLETED,
    instant_time: str | None = None,
    after: str | None = None,
) -> dict[str, Any]:
    """A JSON-serializable "wait for an instant" condition (triggers store their kwargs)."""
    return {
        "kind": "instant",
        "actions": sorted({str(a) for a in actions}) if actions else None,
        "state": normalize_state(state),
        "instant_time": instant_time or None,
        "after": after or None,
    }


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
        after = condition.get("after")
        matches = [
            v for v in views
            if v.reached(target_state)
            and (not actions or any(v.is_a(a) for a in actions))
            and (instant_time is None or v.timestamp == instant_time)
            and (after is None or v.timestamp > after)
        ]
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
        completed = [v for v in views if v.state == COMPLETED]
        return {"pending": [], "services": sorted(services),
                "instant": completed[-1].timestamp if completed else None}
    raise ValueError(f"Unknown timeline condition {condition!r}")


def pending_services(views: list[InstantView] | None, services: Iterable[str]) -> list[InstantView]:
    wanted = set(services)
    return [v for v in (views or []) if v.state != COMPLETED and v.kind in wanted]


def check(base_uri: str, storage_options: Mapping[str, Any] | None, condition: Mapping[str, Any]) -> dict[str, Any] | None:
    """Blocking: list the timeline once and evaluate ``condition`` (run in a thread from triggers)."""
    return evaluate(condition, load_views(base_uri, storage_options))
