"""What a sensor, a trigger or a health check sees of one instant time: its latest state and
what it was planned as (a completed compaction is a ``commit``, a clustering a
``replacecommit``), with its completion time on Hudi 1.x. One home for the reading, so that
waiting and reporting classify every instant alike."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from airflow_hoodie.table.timeline.instant import Action
from airflow_hoodie.table.timeline.timeline import Timeline, action_family

REQUESTED = "REQUESTED"
INFLIGHT = "INFLIGHT"
COMPLETED = "COMPLETED"
_STATE_RANK = {REQUESTED: 0, INFLIGHT: 1, COMPLETED: 2}

#: pending action -> the action its instant completes as
_COMPLETES_AS = {"compaction": "commit", "logcompaction": "deltacommit", "clustering": "replacecommit"}


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
    #: Hudi 1.x: when the instant completed; None while pending and on version 6
    completion_time: str | None = None

    @property
    def checkpoint(self) -> str:
        """Where a downstream incremental read goes on after this instant
        (:attr:`Instant.checkpoint`): the completion time on Hudi 1.x, else the instant time."""
        return self.completion_time or self.timestamp

    def to_dict(self) -> dict[str, str | None]:
        return {**asdict(self), "checkpoint": self.checkpoint}

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


def instant_views(timeline: Timeline) -> list[InstantView]:
    """One :class:`InstantView` per instant time, oldest first: the instant :meth:`Timeline.get`
    prefers there (a write before a savepoint of it), and what it was planned as."""
    views: list[InstantView] = []
    for ts in timeline.timestamps:
        inst = timeline.get(ts)
        action = str(inst.action)
        kind = timeline.original_action(ts, action) or action
        if action_family(kind) == Action.REPLACE_COMMIT:
            kind = Action.CLUSTERING if timeline.is_clustering(ts) else Action.REPLACE_COMMIT
        if inst.is_completed and kind in _COMPLETES_AS:
            action = _COMPLETES_AS[kind]
        completion = inst.completion_time if inst.is_completed and inst.action != Action.SAVEPOINT else None
        views.append(InstantView(ts, action, kind, normalize_state(inst.state), completion))
    return views
