"""One instant of a Hudi timeline: a timestamp, an action and a state.

Every change to a Hudi table is an instant that moves requested -> inflight ->
completed, one file per state under ``.hoodie/`` (``.hoodie/timeline/`` on table versions
8 and 9). The file names are the on-disk contract with real Hudi (0.14/0.15: timeline layout
1; 1.x: layout 2, whose completed files also carry the completion time,
``<requested>_<completion>.<action>``), so they are spelled here exactly as Hudi spells them,
including the quirks: a commit's inflight file is ``T.inflight`` (no action), a savepoint
has no requested file, a compaction completes as ``T.commit``, a log compaction as
``T.deltacommit`` and (on 8 and 9) a clustering as ``T.replacecommit``.
"""

from __future__ import annotations

import datetime as _dt
import re
import threading
from dataclasses import dataclass, field
from enum import Enum

from airflow_hoodie.errors import HoodieTimelineError


class State(str, Enum):
    REQUESTED = "requested"
    INFLIGHT = "inflight"
    COMPLETED = "completed"

    @property
    def rank(self) -> int:
        """Progress order (requested < inflight < completed), Hudi's state order."""
        return _STATE_RANK[self]


_STATE_RANK = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


class Action:
    """Hudi's action names (``HoodieTimeline.*_ACTION``)."""

    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    REPLACE_COMMIT = "replacecommit"
    RESTORE = "restore"
    INDEXING = "indexing"
    #: table version 8+: a pending clustering has its own action and completes as a replacecommit
    CLUSTERING = "clustering"

    ALL: frozenset[str] = frozenset(
        {
            CLUSTERING,
            COMMIT,
            DELTA_COMMIT,
            CLEAN,
            ROLLBACK,
            SAVEPOINT,
            COMPACTION,
            LOG_COMPACTION,
            REPLACE_COMMIT,
            RESTORE,
            INDEXING,
        }
    )
    #: Actions that write data files (Hudi's write timeline).
    WRITE: frozenset[str] = frozenset(
        {COMMIT, DELTA_COMMIT, REPLACE_COMMIT, COMPACTION, LOG_COMPACTION, CLUSTERING}
    )
    #: Actions whose completed instants make data visible (Hudi's commits timeline).
    COMMITS: frozenset[str] = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT})


# The action a completed instant is stored under when it differs from the pending one.
_COMPLETED_ACTION = {Action.COMPACTION: Action.COMMIT, Action.LOG_COMPACTION: Action.DELTA_COMMIT,
                     Action.CLUSTERING: Action.REPLACE_COMMIT}

#: Instant times: digits only; 17 (ms, since Hudi 0.9) or 14 (seconds) for real
#: instants, plus Hudi's special all-zero/low instants used by the metadata table.
_TS_RE = re.compile(r"^\d+$")
INSTANT_FORMAT = "%Y%m%d%H%M%S"
MILLIS_INSTANT_LEN = 17
SECS_INSTANT_LEN = 14
#: Hudi appends this to second-precision instants when comparing with ms ones.
DEFAULT_MILLIS_EXT = "999"


@dataclass(frozen=True)
class Instant:
    """An instant in one state; equality is on all three fields."""

    timestamp: str
    action: str
    state: State = State.COMPLETED
    #: table version 8+ (timeline layout 2) names completed instants ``<requested>_<completion>``;
    #: not part of the identity, so an instant built from its time and action still matches
    completion_time: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not _TS_RE.match(self.timestamp or ""):
            raise HoodieTimelineError(
                f"Invalid instant time {self.timestamp!r}: Hudi instant times are digits "
                "like 20240418173213674 (yyyyMMddHHmmssSSS)."
            )
        if self.action not in Action.ALL:
            raise HoodieTimelineError(
                f"Unknown timeline action {self.action!r}; expected one of "
                f"{sorted(Action.ALL)}."
            )
        if not isinstance(self.state, State):
            object.__setattr__(self, "state", State(self.state))
        if self.state == State.REQUESTED and self.action == Action.SAVEPOINT:
            raise HoodieTimelineError("A savepoint has no requested state in Hudi; start at inflight.")

    @property
    def checkpoint(self) -> str:
        """Where a reader that consumed this (completed) instant resumes an incremental read:
        its completion time on Hudi 1.x tables, whose incremental windows are completion-time
        ranges (a commit that completes later than a newer one must still come after it),
        its instant time on version 6."""
        return self.completion_time or self.timestamp

    # ------------------------------------------------------------------ states
    @property
    def is_completed(self) -> bool:
        return self.state == State.COMPLETED

    @property
    def is_inflight(self) -> bool:
        return self.state == State.INFLIGHT

    @property
    def is_requested(self) -> bool:
        return self.state == State.REQUESTED

    @property
    def is_pending(self) -> bool:
        return self.state != State.COMPLETED

    def requested(self) -> "Instant":
        return Instant(self.timestamp, self._pending_action(), State.REQUESTED)

    def inflight(self) -> "Instant":
        return Instant(self.timestamp, self._pending_action(), State.INFLIGHT)

    def completed(self) -> "Instant":
        return Instant(
            self.timestamp, _COMPLETED_ACTION.get(self.action, self.action), State.COMPLETED
        )

    def _pending_action(self) -> str:
        # A completed commit may have been a compaction; callers that know it pass
        # the compaction instant. From a bare completed "commit" we cannot tell.
        return self.action

    # -------------------------------------------------------------- file names
    @property
    def file_name(self) -> str:
        """The file Hudi 0.14 writes for this instant under ``.hoodie/``."""
        ts, action = self.timestamp, self.action
        if self.state == State.COMPLETED:
            if self.completion_time:
                return f"{ts}_{self.completion_time}.{_COMPLETED_ACTION.get(action, action)}"
            return f"{ts}.{_COMPLETED_ACTION.get(action, action)}"
        if self.state == State.INFLIGHT:
            if action == Action.COMMIT:
                return f"{ts}.inflight"
            return f"{ts}.{action}.inflight"
        return f"{ts}.{action}.requested"

    @classmethod
    def parse(cls, file_name: str) -> "Instant | None":
        """The instant a ``.hoodie/`` file name denotes, or None if it is not one.

        Non-instant files living next to the timeline (``hoodie.properties``,
        ``.temp``, ``*.crc``, temp files of an interrupted write) return None.
        """
        parts = file_name.split(".")
        if len(parts) < 2 or len(parts) > 3:
            return None
        ts, _, completion = parts[0].partition("_")
        if not _TS_RE.match(ts) or (completion and (len(parts) != 2 or not _TS_RE.match(completion))):
            return None
        rest = parts[1:]
        if len(rest) == 1:
            (tag,) = rest
            if tag == "inflight":
                return cls(ts, Action.COMMIT, State.INFLIGHT)
            if tag in Action.ALL and tag not in _COMPLETED_ACTION:
                return cls(ts, tag, State.COMPLETED, completion or None)
            return None
        action, suffix = rest
        if action not in Action.ALL:
            return None
        if suffix == "requested" and action != Action.SAVEPOINT:
            return cls(ts, action, State.REQUESTED)
        if suffix == "inflight" and action != Action.COMMIT:
            return cls(ts, action, State.INFLIGHT)
        return None

    @classmethod
    def from_file_name(cls, file_name: str) -> "Instant":
        """Like :meth:`parse` but raises a clear error for a non-instant name."""
        inst = cls.parse(file_name)
        if inst is None:
            raise HoodieTimelineError(
                f"{file_name!r} is not a Hudi instant file name; expected e.g. "
                "'20240418173213674.commit', '<ts>.inflight', '<ts>.deltacommit.requested'."
            )
        return inst

    # ----------------------------------------------------------------- ordering
    @property
    def sort_key(self) -> tuple[str, str, int]:
        """Hudi's instant comparator: time, then action (compaction as commit), then state."""
        return (
            self.timestamp,
            _COMPLETED_ACTION.get(self.action, self.action),
            self.state.rank,
        )

    def __lt__(self, other: "Instant") -> bool:
        return self.sort_key < other.sort_key

    def __str__(self) -> str:
        return f"[{self.timestamp}__{self.action}__{self.state.name}]"


# ------------------------------------------------------------------------ times
def parse_instant_time(ts: str) -> _dt.datetime:
    """The (naive) date-time an instant time denotes; both ms and second precision."""
    if not _TS_RE.match(ts or ""):
        raise HoodieTimelineError(f"Invalid instant time {ts!r}: expected digits yyyyMMddHHmmss[SSS].")
    try:
        if len(ts) == MILLIS_INSTANT_LEN:
            base = _dt.datetime.strptime(ts[:SECS_INSTANT_LEN], INSTANT_FORMAT)
            return base.replace(microsecond=int(ts[SECS_INSTANT_LEN:]) * 1000)
        if len(ts) == SECS_INSTANT_LEN:
            return _dt.datetime.strptime(ts, INSTANT_FORMAT)
    except ValueError as exc:
        raise HoodieTimelineError(f"Invalid instant time {ts!r}: {exc}") from exc
    raise HoodieTimelineError(
        f"Invalid instant time {ts!r}: expected 17 digits (yyyyMMddHHmmssSSS) or 14 (yyyyMMddHHmmss)."
    )


def format_instant_time(when: _dt.datetime) -> str:
    """``yyyyMMddHHmmssSSS`` of ``when`` (its own wall clock; no zone conversion)."""
    return when.strftime(INSTANT_FORMAT) + f"{when.microsecond // 1000:03d}"


def normalize_instant_time(ts: str) -> str:
    """Second-precision instants padded to ms as Hudi compares them (``+"999"``)."""
    return ts + DEFAULT_MILLIS_EXT if len(ts) == SECS_INSTANT_LEN else ts


_last_lock = threading.Lock()
#: the last instant time handed out, per table: a stray far-future instant in one table must
#: not drag the instant times of every other table this process writes into that future
_last_by_table: dict[str, str] = {}


def new_instant_time(utc: bool = False, after: str | None = None, table: str = "") -> str:
    """A fresh instant time, strictly increasing within this process.

    Hudi uses the JVM's local time zone unless ``hoodie.table.timeline.timezone=UTC``;
    pass ``utc=True`` for the latter. ``after`` forces the result past an instant seen
    on the timeline (e.g. written by another process with a skewed clock); ``table`` (the
    base URI) keeps that floor to the one table.
    """
    now = _dt.datetime.now(_dt.timezone.utc) if utc else _dt.datetime.now()
    candidate = format_instant_time(now)
    key = table.rstrip("/")
    with _last_lock:
        floor = max(_last_by_table.get(key, ""), normalize_instant_time(after) if after else "")
        if floor and candidate <= floor:
            nxt = parse_instant_time(floor[:MILLIS_INSTANT_LEN]) + _dt.timedelta(milliseconds=1)
            candidate = format_instant_time(nxt)
        _last_by_table[key] = candidate
    return candidate


def is_utc_timeline(props: "dict[str, str] | None") -> bool:
    """Whether ``hoodie.table.timeline.timezone`` asks for UTC instant times."""
    return bool(props) and str(props.get("hoodie.table.timeline.timezone", "LOCAL")).upper() == "UTC"
