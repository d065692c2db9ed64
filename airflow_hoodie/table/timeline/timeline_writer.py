"""The one way to change the active timeline: :class:`TimelineWriter` moves instants through
requested -> inflight -> completed.

Each step *creates* one new file with ``Storage.create_if_absent``; it never rewrites a file,
so a reader sees either the previous state or the new one with its full content, and two
writers racing for the same instant cannot both win. Layout 1 (table version 6) names a
completed instant ``<time>.<action>``; layout 2 (versions 8 and 9) adds the completion time
taken under the table lock, ``<time>_<completion>.<action>``, under ``.hoodie/timeline``.
"""

from __future__ import annotations

import posixpath

from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    State,
    normalize_instant_time,
)
from airflow_hoodie.table.timeline.timeline_paths import LAYOUT_2_FOLDER, meta_path


class TimelineWriter:
    """Moves instants through requested -> inflight -> completed, one new file per step."""

    def __init__(self, storage: Storage, base_path: str, layout: int = 1) -> None:
        if layout not in (1, 2):
            raise HoodieTimelineError(
                f"Timeline layout {layout} is unknown; Hudi writes layout 1 (table version 6) or 2 (8 and 9).")
        self.storage = storage
        self.base_path = base_path
        self.layout = layout
        #: layout 2 (Hudi 1.x) keeps every instant file under ``.hoodie/timeline``
        self.meta_path = (Storage.join(meta_path(base_path), LAYOUT_2_FOLDER) if layout == 2
                          else meta_path(base_path))

    def path_of(self, instant: Instant) -> str:
        return Storage.join(self.meta_path, instant.file_name)

    def completed_file(self, ts: str, action: str) -> Instant | None:
        """Layout 2: the completed instant of ``ts``/``action`` on disk, with the completion
        time its name carries (it cannot be derived, so the folder is listed)."""
        done = Instant(ts, action, State.INFLIGHT).completed()
        for status in self.storage.list_dir(self.meta_path):
            inst = Instant.parse(status.name)
            if (inst is not None and inst.is_completed and inst.timestamp == ts
                    and inst.action == done.action and inst.completion_time):
                return inst
        return None

    def _create(self, instant: Instant, content: bytes) -> Instant:
        path = self.path_of(instant)
        if not self.storage.create_if_absent(path, bytes(content or b"")):
            raise HoodieTimelineError(
                f"Instant file {instant.file_name} already exists in {self.storage.uri(self.meta_path)}; "
                "another writer got there first or this step already ran. Reload the timeline."
            )
        return instant

    def create_requested(self, instant: Instant, content: bytes = b"") -> Instant:
        """Write ``T.<action>.requested`` (the plan, for services). Fails if it exists."""
        req = instant.requested()
        return self._create(req, content)

    def transition_to_inflight(self, instant: Instant, content: bytes = b"") -> Instant:
        """Write the inflight file; the requested file must exist (except for savepoints)."""
        infl = instant.inflight()
        if instant.action != Action.SAVEPOINT and not self.storage.exists(self.path_of(instant.requested())):
            raise HoodieTimelineError(
                f"Cannot move {infl.timestamp} ({infl.action}) to inflight: "
                f"{instant.requested().file_name} does not exist."
            )
        return self._create(infl, content)

    def create_inflight(self, instant: Instant, content: bytes = b"") -> Instant:
        """Inflight with no requested step (savepoints start here)."""
        return self._create(instant.inflight(), content)

    def complete(self, instant: Instant, content: bytes, completion_time: str | None = None) -> Instant:
        """Write the completed file; the inflight file must exist.

        Raises :class:`HoodieTimelineError` if the completed file already exists, so a
        retried task never overwrites a completed instant. On layout 2 the caller passes
        the completion time it took under the table lock; the file is
        ``<requested>_<completion>.<action>`` and, as its name changes with the time, an
        instant that already has any completed file is refused.
        """
        infl = instant.inflight()
        if not self.storage.exists(self.path_of(infl)):
            raise HoodieTimelineError(
                f"Cannot complete {instant.timestamp} ({instant.action}): {infl.file_name} does not exist; "
                "transition it to inflight first."
            )
        if self.layout == 1:
            if completion_time is not None:
                raise HoodieTimelineError(
                    "Timeline layout 1 (table version 6) names completed instants without a completion time.")
            return self._create(instant.completed(), content)
        if not completion_time:
            raise HoodieTimelineError(
                f"Completing {instant.timestamp} ({instant.action}) on timeline layout 2 needs the completion "
                "time, taken under the table lock.")
        done = instant.completed()
        target = Instant(done.timestamp, done.action, State.COMPLETED, normalize_instant_time(completion_time))
        if target.completion_time < done.timestamp:
            raise HoodieTimelineError(
                f"Completion time {target.completion_time} is before the requested time {done.timestamp}; "
                "take the completion time from the time generator after the instant was requested.")
        existing = self.completed_file(done.timestamp, done.action)
        if existing is not None:
            raise HoodieTimelineError(
                f"Instant {done.timestamp} ({done.action}) is already completed as {existing.file_name} in "
                f"{self.storage.uri(self.meta_path)}; another writer got there first. Reload the timeline.")
        return self._create(target, content)

    def save_to_requested(self, instant: Instant, content: bytes) -> None:
        """Overwrite a requested file's content atomically (Hudi does it for plans being re-saved)."""
        self.storage.write_bytes(self.path_of(instant.requested()), content)

    def delete_instant_files(self, ts: str, action: str, completed_first: bool = True) -> list[str]:
        """Delete every state file of an instant; returns the names deleted.

        ``completed_first`` (rollback): the completed file goes first so an interrupted
        delete leaves a *pending* instant that a retry rolls back, never a completed
        instant without its plan. Archival passes False (requested, inflight, then
        completed), so services never mistake an archived instant for a pending one.
        """
        pending_action = action
        if action == Action.COMMIT and self._exists_name(f"{ts}.compaction.requested"):
            pending_action = Action.COMPACTION
        if action == Action.DELTA_COMMIT and self._exists_name(f"{ts}.logcompaction.requested"):
            pending_action = Action.LOG_COMPACTION
        # layout 2: a clustering is pending as .clustering.* and completes as a replacecommit;
        # left behind, its plan would read as pending again and block writes to its file groups
        if action == Action.REPLACE_COMMIT and self._exists_name(f"{ts}.clustering.requested"):
            pending_action = Action.CLUSTERING
        base = Instant(ts, pending_action, State.INFLIGHT)
        done = self.completed_file(ts, action) if self.layout == 2 else None
        names = [(done or base.completed()).file_name, base.inflight().file_name]
        if pending_action != Action.SAVEPOINT:
            names.append(base.requested().file_name)
        if not completed_first:
            names.reverse()
        deleted = []
        for name in names:
            if self.storage.delete(Storage.join(self.meta_path, name)):
                deleted.append(name)
        return deleted

    def revert_to_requested(self, instant: Instant) -> None:
        """Delete the inflight file so the instant is requested again (e.g. a compaction to retry)."""
        if self.storage.exists(self.path_of(instant.completed())):
            raise HoodieTimelineError(
                f"Instant {instant.timestamp} is completed; roll it back instead of reverting to requested."
            )
        self.storage.delete(self.path_of(instant.inflight()))

    def revert_completed_to_inflight(self, instant: Instant) -> None:
        """Delete the completed file (first step of rolling back a completed instant)."""
        done = instant.completed()
        if self.layout == 2:
            found = self.completed_file(done.timestamp, done.action)
            if found is None:
                return
            done = found
        self.storage.delete(self.path_of(done))

    def _exists_name(self, name: str) -> bool:
        return self.storage.exists(posixpath.join(self.meta_path, name))
