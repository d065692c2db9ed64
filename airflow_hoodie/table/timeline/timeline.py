"""The active timeline (``.hoodie/<instant files>``, ``.hoodie/timeline/`` on Hudi 1.x) as read.

:class:`Timeline` is an immutable snapshot: one :class:`Instant` per instant (instant
time + action family), in its most advanced state, sorted as Hudi sorts them. The
requested/inflight/completed files of one instant collapse to one :class:`Instant`
(``T.compaction.requested`` + ``T.commit`` is one compaction), but two instants sharing
a time stay apart: a savepoint has the same time as the commit it pins. Filters return new timelines, so a
caller can pass a narrowed view (``completed()``, ``as_of(ts)``) around safely.

On table versions 8 and 9 (timeline layout 2) a completed instant's file name carries its
completion time and its commit metadata is Avro, converted here to the JSON every reader
takes. Changing the timeline is :mod:`timeline_writer`'s job, the one way to do it.
"""

from __future__ import annotations

import io
import posixpath
from typing import Iterable, Iterator, Mapping, Sequence

import fastavro

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieIOError, HoodieTimelineError
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, parse_commit_metadata
from airflow_hoodie.table.storage.storage import FileStatus, Storage
from airflow_hoodie.table.timeline import commit_serde_v2
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    State,
    normalize_instant_time,
)
from airflow_hoodie.table.timeline.replace_kind import is_clustering_requested
from airflow_hoodie.table.timeline.timeline_paths import meta_path, timeline_path


_AVRO_CONTAINER = b"Obj\x01"
_AVRO_METADATA = {Action.COMMIT: "commit", Action.DELTA_COMMIT: "commit", Action.REPLACE_COMMIT: "replace"}


def as_json_metadata(inst: Instant, data: bytes) -> bytes:
    """Hudi 1.x stores completed commit metadata as an Avro container; every reader here
    takes Hudi 0.x's JSON, so it is converted once, where it is read."""
    kind = _AVRO_METADATA.get(inst.action)
    if kind is None or not data.startswith(_AVRO_CONTAINER) or inst.state != State.COMPLETED:
        return data
    records = list(fastavro.reader(io.BytesIO(data)))
    if len(records) != 1:
        raise HoodieTimelineError(f"{inst.file_name}: expected one Avro metadata record, found {len(records)}")
    # every non-null stat field kept: a delta commit's log fields (logFiles, baseFile, ...)
    return commit_serde_v2.from_record(records[0], replace=kind == "replace").to_json()


#: Pending actions whose completed file is stored under another action.
_FAMILY = {Action.COMPACTION: Action.COMMIT, Action.LOG_COMPACTION: Action.DELTA_COMMIT,
           Action.CLUSTERING: Action.REPLACE_COMMIT}


def action_family(action: str) -> str:
    """The action an instant's files share across states (compaction -> commit, ...)."""
    return _FAMILY.get(action, action)


def instant_key(inst: Instant) -> tuple[str, str]:
    """Identity of one instant across its state files: (instant time, action family)."""
    return (inst.timestamp, action_family(inst.action))


def _get_rank(inst: Instant) -> int:
    """Which instant :meth:`Timeline.get` returns for a bare time: writes before others,
    savepoints last (a savepoint shares the time of the commit it pins)."""
    if inst.action in Action.WRITE:
        return 0
    if inst.action == Action.SAVEPOINT:
        return 2
    return 1


class Timeline:
    """Sorted instants of the active timeline, one per (time, action family), latest state."""

    def __init__(
        self,
        instants: Iterable[Instant],
        storage: Storage | None = None,
        base_path: str | None = None,
        history: Sequence[Instant] | None = None,
        listed: Mapping[str, FileStatus] | None = None,
    ) -> None:
        self._instants: list[Instant] = sorted(instants, key=lambda i: i.sort_key)
        self._by_key: dict[tuple[str, str], Instant] = {instant_key(i): i for i in self._instants}
        # Every instant at a time, the one get(ts) prefers first.
        self._by_ts: dict[str, list[Instant]] = {}
        for inst in sorted(self._instants, key=_get_rank):
            self._by_ts.setdefault(inst.timestamp, []).append(inst)
        self.storage = storage
        self.base_path = base_path
        # Every instant file seen (all states), so the original action of a completed
        # compaction (stored as "commit") stays knowable.
        self._history: list[Instant] = sorted(history or self._instants, key=lambda i: i.sort_key)
        self._clustering: dict[str, bool] = {}
        #: file name -> its entry in the listing this timeline was loaded from (size, mtime)
        self._listed: Mapping[str, FileStatus] = listed or {}
        #: the folder of the instant files, once asked (:meth:`instant_path`)
        self._folder: str | None = None

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, storage: Storage, base_path: str) -> "Timeline":
        """Read the instant files under ``<base_path>/.hoodie`` (non-instant files ignored)."""
        files = storage.list_dir(timeline_path(storage, base_path))
        history = [inst for st in files if not st.is_dir for inst in [Instant.parse(st.name)] if inst]
        return cls(collapse_states(history), storage, base_path, history,
                   {st.name: st for st in files if not st.is_dir})

    @property
    def tracks_completion_time(self) -> bool:
        """Whether completed instants carry their completion time (timeline layout 2)."""
        return any(i.completion_time for i in self._instants if i.is_completed)

    def completion_times(self) -> dict[str, str]:
        """Requested time -> completion time of completed instants (layout 2 only).

        A savepoint takes the requested time of the commit it keeps, and completes later:
        its completion time is not the commit's (a delta commit's log would seem to complete
        after a compaction planned in between, and a snapshot read would drop it)."""
        return {i.timestamp: i.completion_time for i in self._instants
                if i.is_completed and i.completion_time and i.action != Action.SAVEPOINT}

    def reload(self) -> "Timeline":
        if self.storage is None or self.base_path is None:
            raise HoodieTimelineError("This timeline was not loaded from storage; nothing to reload.")
        return Timeline.load(self.storage, self.base_path)

    def _derive(self, instants: Iterable[Instant]) -> "Timeline":
        keep = list(instants)
        keys = {instant_key(i) for i in keep}
        derived = Timeline(keep, self.storage, self.base_path, [h for h in self._history if instant_key(h) in keys],
                           self._listed)
        derived._folder = self._folder  # where the instant files are: asked of storage once
        return derived

    # ------------------------------------------------------------------ access
    @property
    def instants(self) -> list[Instant]:
        return list(self._instants)

    @property
    def all_instants(self) -> list[Instant]:
        """Every instant file (all states) behind this timeline, sorted."""
        return list(self._history)

    @property
    def timestamps(self) -> list[str]:
        """Distinct instant times, sorted (a commit and its savepoint count once)."""
        return list(dict.fromkeys(i.timestamp for i in self._instants))

    def __iter__(self) -> Iterator[Instant]:
        return iter(self._instants)

    def __len__(self) -> int:
        return len(self._instants)

    def __bool__(self) -> bool:
        return bool(self._instants)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Instant):
            return self._by_key.get(instant_key(item)) == item
        return item in self._by_ts

    def __repr__(self) -> str:
        return f"Timeline({[str(i) for i in self._instants]})"

    def get(self, ts: str, action: str | None = None) -> Instant | None:
        """The instant at ``ts`` (in its latest state).

        Without ``action``, a write (commit, deltacommit, replacecommit, compaction,
        logcompaction) is preferred over other actions, and a savepoint comes last, so
        ``get(ts)`` of a savepointed commit is the commit. ``action`` picks one; a
        pending action matches its completed form (``compaction`` finds ``T.commit``
        only if it was a compaction, ``commit`` finds a compaction in any state).
        """
        if action is None:
            found = self._by_ts.get(ts)
            return found[0] if found else None
        inst = self._by_key.get((ts, action_family(action)))
        if inst is not None and action in _FAMILY and self.original_action(ts, inst.action) != action:
            return None
        return inst

    def get_all(self, ts: str) -> list[Instant]:
        """Every instant at ``ts`` (usually one; a savepointed commit gives two), sorted."""
        return sorted(self._by_ts.get(ts, ()), key=lambda i: i.sort_key)

    def contains(self, ts: str) -> bool:
        return ts in self._by_ts

    def first(self) -> Instant | None:
        return self._instants[0] if self._instants else None

    def last(self) -> Instant | None:
        return self._instants[-1] if self._instants else None

    def is_before_timeline_starts(self, ts: str) -> bool:
        """True if ``ts`` precedes the first instant (its commit was archived)."""
        first = self.first()
        return first is not None and normalize_instant_time(ts) < normalize_instant_time(first.timestamp)

    def contains_or_before_timeline_starts(self, ts: str) -> bool:
        """Hudi's visibility test for a file's instant: on this timeline or archived."""
        return self.contains(ts) or self.is_before_timeline_starts(ts)

    def original_action(self, ts: str, action: str | None = None) -> str | None:
        """The action an instant was requested as (``compaction`` for a completed compaction).

        ``action`` names the instant when several share ``ts`` (any state's action);
        without it, the instant :meth:`get` returns.
        """
        if action is None:
            cur = self.get(ts)
            if cur is None:
                hist = [h for h in self._history if h.timestamp == ts]
                if not hist:
                    return None
                action = min(hist, key=_get_rank).action
            else:
                action = cur.action
        key = (ts, action_family(action))
        hist = [h for h in self._history if instant_key(h) == key]
        if not hist:
            return None
        # Pending files carry the requested action; the completed one may not.
        return min(hist, key=lambda h: h.state.rank).action

    def is_compaction(self, ts: str) -> bool:
        return self.original_action(ts, Action.COMMIT) == Action.COMPACTION

    def is_clustering(self, ts: str) -> bool:
        """Whether the replacecommit at ``ts`` is a clustering, by the one rule
        (:mod:`replace_kind`): table version 8+ names it ``clustering``; before, its
        ``.replacecommit.requested`` says operation CLUSTER (an insert_overwrite writes the
        same file with its own operation type). The answer is kept: the file never changes."""
        action = self.original_action(ts, Action.REPLACE_COMMIT)
        if action != Action.REPLACE_COMMIT:
            return action == Action.CLUSTERING
        if ts not in self._clustering:
            requested = Instant(ts, Action.REPLACE_COMMIT, State.REQUESTED)
            has_plan = self.storage is not None and self.base_path is not None and requested in self._history
            self._clustering[ts] = has_plan and is_clustering_requested(
                self.storage.read_bytes(self.instant_path(requested)))
        return self._clustering[ts]

    # ------------------------------------------------------------------ filters
    def filter(
        self,
        actions: Iterable[str] | str | None = None,
        states: Iterable[State] | State | None = None,
    ) -> "Timeline":
        """Instants whose action (as stored now) and state match.

        A pending compaction has action ``compaction``; once completed it is a
        ``commit``. Ask for both if you want compactions in every state.
        """
        acts = {actions} if isinstance(actions, str) else (set(actions) if actions is not None else None)
        sts = {states} if isinstance(states, State) else (set(states) if states is not None else None)
        return self._derive(
            i
            for i in self._instants
            if (acts is None or i.action in acts) and (sts is None or i.state in sts)
        )

    def completed(self) -> "Timeline":
        return self.filter(states=State.COMPLETED)

    def pending(self) -> "Timeline":
        return self.filter(states=(State.REQUESTED, State.INFLIGHT))

    def inflight(self) -> "Timeline":
        return self.filter(states=State.INFLIGHT)

    def requested(self) -> "Timeline":
        return self.filter(states=State.REQUESTED)

    def write_timeline(self) -> "Timeline":
        """commit, deltacommit, replacecommit, compaction, logcompaction (Hudi's write timeline)."""
        return self.filter(actions=Action.WRITE)

    def commits_timeline(self) -> "Timeline":
        """commit, deltacommit, replacecommit (Hudi's commits timeline)."""
        return self.filter(actions=Action.COMMITS)

    def completed_commits(self) -> "Timeline":
        return self.commits_timeline().completed()

    def completed_and_compaction(self) -> "Timeline":
        """Hudi's ``filterCompletedAndCompactionInstants`` over the write timeline.

        Completed writes plus pending compactions: the instants whose file slices a
        file system view treats as existing (the new slice a compaction opens collects
        log files written after the plan).
        """
        return self._derive(
            i
            for i in self.write_timeline()
            if i.is_completed or i.action == Action.COMPACTION
        )

    def pending_compactions(self) -> "Timeline":
        return self.filter(actions=Action.COMPACTION).pending()

    def pending_log_compactions(self) -> "Timeline":
        return self.filter(actions=Action.LOG_COMPACTION).pending()

    def completed_fingerprint(self) -> tuple[tuple[str, str, str | None], ...]:
        """(time, action, completion time) of every completed instant: what a table's visible
        files follow (a metadata-table listing changes only when one is added)."""
        return tuple((i.timestamp, i.action, i.completion_time) for i in self.instants if i.is_completed)

    def pending_replace(self) -> "Timeline":
        """Pending replacecommits (clustering plans or insert-overwrites in flight). Table
        version 8+ gives a pending clustering its own action (``clustering``, completing as a
        replacecommit), so it is asked for too: otherwise a v8/v9 clustering plan would
        neither fence writers off its file groups nor keep a second plan from taking them."""
        return self.filter(actions=(Action.REPLACE_COMMIT, Action.CLUSTERING)).pending()

    def cleans(self) -> "Timeline":
        return self.filter(actions=Action.CLEAN)

    def rollbacks(self) -> "Timeline":
        return self.filter(actions=Action.ROLLBACK)

    def first_non_savepoint_commit(self) -> str | None:
        """Where the active timeline starts for visibility (Hudi's getFirstNonSavepointCommit
        over completed writes and pending compactions): a file or log block of an older
        instant belongs to an archived, hence completed, commit. Savepointed commits that
        archival beyond savepoints left before a hole do not count as the start."""
        savepoints = set(self.savepoints().timestamps)
        commits = self.completed_and_compaction().timestamps
        first = next((ts for ts in commits if ts not in savepoints), None)
        if first is None and commits:
            # every active commit is savepointed (a restore to the latest savepoint after
            # archival): archival keeps the latest commit, so every archived one is older than
            # it; Hudi's own answer (none) would take their files for uncommitted
            return commits[-1]
        return first

    def savepoints(self) -> "Timeline":
        return self.filter(actions=Action.SAVEPOINT)

    def restores(self) -> "Timeline":
        return self.filter(actions=Action.RESTORE)

    def as_of(self, ts: str) -> "Timeline":
        """Instants at or before ``ts`` (time travel)."""
        lim = normalize_instant_time(ts)
        return self._derive(i for i in self._instants if normalize_instant_time(i.timestamp) <= lim)

    def after(self, ts: str) -> "Timeline":
        lim = normalize_instant_time(ts)
        return self._derive(i for i in self._instants if normalize_instant_time(i.timestamp) > lim)

    def before(self, ts: str) -> "Timeline":
        lim = normalize_instant_time(ts)
        return self._derive(i for i in self._instants if normalize_instant_time(i.timestamp) < lim)

    def between(self, start_exclusive: str | None, end_inclusive: str | None) -> "Timeline":
        """Instants in ``(start, end]`` (incremental queries); None leaves a side open."""
        tl: Timeline = self
        if start_exclusive:
            tl = tl.after(start_exclusive)
        if end_inclusive:
            tl = tl.as_of(end_inclusive)
        return tl

    def listed_status(self, instant: Instant) -> FileStatus | None:
        """The listing entry (size, modification time) of ``instant``'s current file, as the
        load of this timeline saw it; None for a timeline not loaded from storage."""
        return self._listed.get(self._resolve(instant, None).file_name)

    # ---------------------------------------------------------------- contents
    def instant_path(self, instant: Instant) -> str:
        if self.base_path is None:
            raise HoodieTimelineError("This timeline was not loaded from storage.")
        folder = self._folder
        if folder is None:
            folder = timeline_path(self.storage, self.base_path) if self.storage is not None else meta_path(self.base_path)
            self._folder = folder
        return Storage.join(folder, instant.file_name)

    def read_details(self, instant: Instant | str, state: State | None = None) -> bytes:
        """Content of an instant's file (its metadata or plan).

        ``instant`` may be a timestamp (the instant :meth:`get` returns: the write, not a
        savepoint at the same time; pass the savepoint :class:`Instant` for its file);
        ``state`` picks a file other than the current one, e.g. ``State.REQUESTED`` for a
        compaction/clustering/clean plan.
        """
        if self.storage is None:
            raise HoodieTimelineError("This timeline was not loaded from storage.")
        inst = self._resolve(instant, state)
        path = self.instant_path(inst)
        try:
            # no HEAD first: the listing named the file, and a read of a missing one fails anyway
            data = self.storage.read_bytes(path)
        except HoodieIOError:
            if self.storage.exists(path):
                raise
            raise HoodieTimelineError(
                f"Instant file {inst.file_name} is missing under {posixpath.dirname(path)}; "
                "the instant may have been archived or rolled back. Reload the timeline."
            ) from None
        return as_json_metadata(inst, data)

    def commit_metadata(self, instant: Instant | str) -> CommitMetadata:
        """The parsed commit metadata of a completed write (the one model every reader uses;
        a replacecommit gives :class:`ReplaceCommitMetadata`)."""
        inst = self._resolve(instant, None)
        data = self.read_details(inst)
        try:
            return parse_commit_metadata(data, action_family(str(inst.action)))
        except HoodieCorruptedDataError as exc:
            raise self._damaged(inst, exc) from exc

    def _damaged(self, inst: Instant, exc: Exception) -> HoodieCorruptedDataError:
        """The parse error of an instant file, naming the file (an older commit's garbage was
        reported without it), with advice for its state: a completed instant's file must
        come back from a copy; deleting it would make the instant pending, and its rollback
        would delete the data it committed."""
        where = self.storage.uri(self.instant_path(inst)) if self.storage is not None else inst.file_name
        if inst.is_completed:
            advice = (f"Restore this file from a backup or a copy of the table. Do not delete it: instant "
                      f"{inst.timestamp} would become pending, and its rollback would delete the data it committed.")
        else:
            advice = f"Roll back the pending instant {inst.timestamp}, or restore the file from a backup."
        return HoodieCorruptedDataError(f"The instant file {where} is damaged: {exc} {advice}")

    def read_plan(self, instant: Instant | str) -> bytes:
        """The ``.requested`` file of an instant (plans live there)."""
        return self.read_details(instant, State.REQUESTED)

    def _resolve(self, instant: Instant | str, state: State | None) -> Instant:
        if isinstance(instant, str):
            found = self.get(instant)
            if found is None:
                raise HoodieTimelineError(f"Instant {instant} is not on the active timeline.")
            instant = found
        if instant.state == State.COMPLETED and not instant.completion_time and (state in (None, State.COMPLETED)):
            # an instant built from time and action: its layout-2 file name needs the completion time
            stored = self._by_key.get(instant_key(instant))
            if stored is not None and stored.is_completed:
                return stored
        if state is None or state == instant.state:
            return instant
        action = self.original_action(instant.timestamp, instant.action) or instant.action
        base = Instant(instant.timestamp, action, State.INFLIGHT if action == Action.SAVEPOINT else State.REQUESTED)
        return {State.REQUESTED: base.requested() if action != Action.SAVEPOINT else base,
                State.INFLIGHT: base.inflight(),
                State.COMPLETED: base.completed()}[state]


def collapse_states(files: Iterable[Instant]) -> list[Instant]:
    """One instant per (time, action family), in its most advanced state.

    The state files of one instant collapse (``T.compaction.requested``,
    ``T.compaction.inflight`` and ``T.commit`` are one compaction), whatever order
    they are listed in; instants that only share a time (a commit and its savepoint)
    stay separate, as in Hudi.
    """
    best: dict[tuple[str, str], Instant] = {}
    for inst in files:
        key = instant_key(inst)
        cur = best.get(key)
        if cur is None or inst.state.rank > cur.state.rank:
            best[key] = inst
    return sorted(best.values(), key=lambda i: i.sort_key)
