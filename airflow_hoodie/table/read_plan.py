"""Planning a read: the completed instants a query sees and the file slices it reads.

* snapshot and read-optimized: every completed write, or those up to ``as_of`` (time travel);
  a time travel to before what the last clean kept is refused, since it would miss rows.
* incremental: the window ``(start, end]``. On table version 6 its bounds are instant times
  and a write still pending inside it (a hole) is refused; on versions 8 and 9 (Hudi 1.x) they
  are completion times, and a window reaching before the active timeline also reads the
  archived commits that completed inside it.

The slices come from the file system view as of the last visible instant; an incremental
window reads only the file groups its commits wrote when their commit metadata says which.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow.dataset as ds

from airflow_hoodie.errors import HoodieConfigError, HoodieError, HoodieTimelineError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.schema.meta_fields import COMMIT_TIME
from airflow_hoodie.table.timeline.clean_horizon import (
    clean_horizon,
    files_cleaned_from,
)
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    normalize_instant_time,
)
from airflow_hoodie.table.timeline.replace_kind import is_clustering_requested
from airflow_hoodie.table.timeline.timeline import Timeline


def normalize_query_time(ts: str | None) -> str | None:
    """Accept Hudi's instant format and the common date-time spellings for ``as_of``/``start``/``end``."""
    if ts is None:
        return None
    text = str(ts).strip()
    digits = "".join(ch for ch in text if ch.isdigit())
    if text.isdigit():
        # 17 (ms) and 14 (s) digit instants are Hudi's own; shorter ones mean the start of
        # that day/hour/minute
        return text if len(text) >= 14 else text.ljust(17, "0")
    if len(digits) >= 14:
        return (digits + "000")[:17]
    if len(digits) == 8:
        return digits + "000000000"
    raise HoodieConfigError(
        f"instant time {ts!r} is not understood; use yyyyMMddHHmmssSSS or 'yyyy-MM-dd HH:mm:ss[.SSS]'"
    )


def completed_write_instants(timeline: Any) -> Any:
    """Completed commit/deltacommit/replacecommit (a completed compaction is a commit)."""
    return timeline.completed_commits()


def _touched_file_groups(timeline: Any, instants: Iterable[Any]) -> set[tuple[str, str]] | None:
    """(partition, file id) written by the given commits, from their commit metadata.

    None when some metadata cannot be read: the caller then reads every file group (correct,
    only slower).
    """
    touched: set[tuple[str, str]] = set()
    for instant in instants:
        try:
            meta = timeline.commit_metadata(instant)
        except HoodieError:
            return None
        for partition, stat in meta.iter_write_stats():
            if stat.file_id:
                touched.add((stat.partition_path or partition or "", stat.file_id))
    return touched


def _archived_commits_completed_in(table: HoodieTable, active: Any, done: dict[str, str], start: str | None,
                                   end: str | None) -> list[Instant]:
    """Hudi 1.x incremental windows are completion-time ranges: when one starts before the
    first active commit completed, the archived history holds commits that completed
    inside it, and their rows must be read too (Hudi's IncrementalQueryAnalyzer does)."""
    if start is None:
        return []
    first_done = min((done.get(i.timestamp, i.timestamp) for i in active), default=None)
    if first_done is not None and start >= first_done:
        return []
    archived = table.archived_timeline()
    times = archived.completion_times()
    return [i for i in archived.completed_commits()
            if times.get(i.timestamp, i.timestamp) > start and (not end or times.get(i.timestamp, i.timestamp) <= end)]


def before_active_timeline(timeline: Timeline, ts: str) -> bool:
    start = timeline.first_non_savepoint_commit()
    return start is not None and normalize_instant_time(ts) < normalize_instant_time(start)


def check_time_travel(timeline: Timeline, view: Any, as_of: str) -> None:
    """Refuse time travel to before what the last clean kept, as Hudi's readers do
    (validateTimestampAsOf): the slices a clean removed are gone, and a read would return the
    rows that happened to survive as if they were the table. A savepointed instant itself
    stays readable: its savepoint kept every file it saw."""
    horizon = clean_horizon(timeline)
    if horizon is None or as_of in timeline.savepoints().completed().timestamps:
        return
    keep = horizon.earliest_commit_to_retain
    if not keep:  # a file-version clean records no horizon: the active timeline's first write is
        first = completed_write_instants(timeline).first()
        keep = first.timestamp if first is not None else ""
    if keep and as_of < keep:
        raise HoodieTimelineError(
            f"Cannot time travel to {as_of}: clean {horizon.clean} removed files of instants before {keep}, so "
            f"the read would miss rows. Read as of {keep} or later; to travel further back, retain more commits "
            "(hoodie.cleaner.commits.retained) or savepoint the instants you will read.")
    lost = files_cleaned_from(timeline, view, as_of)
    if lost:
        raise HoodieTimelineError(
            f"Cannot time travel to {as_of}: a clean removed {len(lost)} file(s) a read as of then needs "
            f"(e.g. {lost[0]}), so it would miss rows. Read a later instant; to keep such instants readable, "
            "clean with KEEP_LATEST_COMMITS or savepoint them first.")


def refuse_hollow_window(timeline: Timeline, last: str) -> None:
    """A version-6 window ends at a commit's instant time: a write still pending at an
    earlier time (a hole) completes later with rows before the window's end, which a
    consumer that checkpoints the end never reads. Refused, as Hudi's default FAIL policy
    of hoodie.read.timeline.holes.resolution.policy does ("Found hollow commit"). Pending
    clustering plans write no new rows and do not count."""
    for inst in timeline.filter(actions=Action.COMMITS).pending().instants:
        if inst.timestamp >= last:
            return
        if inst.action == Action.REPLACE_COMMIT:
            try:
                if is_clustering_requested(timeline.read_details(inst.requested())):
                    continue
            except HoodieError:
                pass
        raise HoodieTimelineError(
            f"Found hollow commit: {inst.action} {inst.timestamp} is pending before the window's end {last}; its rows "
            "would be missed by a reader that goes on from that end. End the window before it, or read once it "
            "completed or was rolled back.")


def check_readable(timeline: Timeline, view: Any, query_type: str, as_of: str | None, commits: Timeline,
                   visible: Timeline) -> None:
    """Refuse a read that would miss rows: a time travel past a clean, a version-6 window with a
    hole, a window ending before the latest commit whose slices a clean removed."""
    if as_of:
        check_time_travel(timeline, view, as_of)
    if query_type == "incremental" and len(visible):
        if not timeline.tracks_completion_time:
            refuse_hollow_window(timeline, visible.last().timestamp)
        if visible.last() != commits.last():
            # a window that ends before the latest commit reads the slices as of its end: a time
            # travel, refused where a clean removed them (Hudi: HoodieIncrementalPathNotFoundException)
            check_time_travel(timeline, view, visible.last().timestamp)


def visible_commits(timeline: Timeline, commits: Timeline, query_type: str, as_of: str | None,
                     end: str | None) -> Timeline:
    """The completed writes a query sees: up to ``as_of`` (time travel) or ``end`` (incremental;
    on Hudi 1.x tables by completion time, as Hudi's incremental reads go)."""
    if query_type == "incremental" and timeline.tracks_completion_time:
        done = timeline.completion_times()
        return commits._derive(i for i in commits if not end or done.get(i.timestamp, i.timestamp) <= end)
    cut = as_of if query_type != "incremental" else end
    return commits.as_of(cut) if cut else commits


@dataclass(frozen=True)
class IncrementalWindow:
    """The commits of an incremental window ``(start, latest]`` and the row filter on commit time."""

    start: str | None
    in_window: Timeline
    archived: bool
    expression: ds.Expression

    @classmethod
    def of(cls, table: HoodieTable, commits: Timeline, visible: Timeline, start: str | None, end: str | None
           ) -> IncrementalWindow | None:
        latest = visible.last().timestamp
        archived: list[Instant] = []
        if table.timeline.tracks_completion_time:
            done = table.timeline.completion_times()
            in_window = visible._derive(i for i in visible if not start or done.get(i.timestamp, i.timestamp) > start)
            archived = _archived_commits_completed_in(table, commits, done, start, end)
            if archived:
                in_window = visible._derive(sorted([*archived, *in_window], key=lambda i: i.sort_key))
            expression = ds.field(COMMIT_TIME).isin([i.timestamp for i in in_window])
        else:
            in_window = visible.between(start, None) if start else visible
            expression = ds.field(COMMIT_TIME) <= latest
            if start:
                expression = expression & (ds.field(COMMIT_TIME) > start)
        if not len(in_window):
            return None
        return cls(start, in_window, bool(archived), expression)


def slices_to_read(table: HoodieTable, view: Any, query_type: str, latest: str, partitions: set[str],
                    window: IncrementalWindow | None) -> list[Any]:
    if query_type == "read_optimized":
        slices = [
            _BaseOnlySlice(b.partition_path, b.file_id, b)
            for b in view.latest_base_files(None, as_of=latest)
            if b.partition_path in partitions
        ]
    else:
        slices = [s for s in view.latest_merged_file_slices(None, as_of=latest) if s.partition_path in partitions]
    if window is not None and window.start and not window.archived \
            and not table.timeline.is_before_timeline_starts(window.start):
        # Only the file groups the window's commits wrote can hold its rows. When the window
        # starts before the active timeline (archived commits), Hudi falls back to a full scan
        # filtered by commit time, and so do we.
        touched = _touched_file_groups(table.timeline, window.in_window)
        if touched is not None:
            slices = [s for s in slices if (s.partition_path, s.file_id) in touched]
    return slices


@dataclass(frozen=True)
class _BaseOnlySlice:
    partition_path: str
    file_id: str
    base_file: Any
    log_files: tuple = ()
