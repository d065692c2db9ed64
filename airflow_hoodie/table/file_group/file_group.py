"""File groups and file slices: how base and log files relate (Hudi's data model).

A *file group* ``(partition, fileId)`` holds the versions of one set of records. Each
*file slice* is one version, keyed by its base instant: at most one base file written
at that instant plus the log files appended on top of it (their names carry the same
base instant). Compaction or an update on a COW table starts a new slice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from airflow_hoodie.table.file_group.file_naming import (
    parse_base_file_name,
    parse_log_file_name,
)
from airflow_hoodie.table.file_group.log_file_layout import LogFileLayout
from airflow_hoodie.table.timeline.instant import normalize_instant_time


@dataclass(frozen=True)
class BaseFile:
    path: str
    file_name: str
    file_id: str
    commit_time: str
    write_token: str
    size: int
    partition_path: str

    @classmethod
    def from_path(cls, path: str, size: int, partition_path: str) -> "BaseFile | None":
        name = path.rstrip("/").rsplit("/", 1)[-1]
        parsed = parse_base_file_name(name)
        if parsed is None:
            return None
        return cls(path, name, parsed.file_id, parsed.instant, parsed.write_token, size, partition_path)


@dataclass(frozen=True)
class LogFile:
    """A log file; ``sort_key`` is Hudi's ``LogFileComparator`` (oldest first)."""

    path: str
    file_name: str
    file_id: str
    base_instant: str
    version: int
    write_token: str | None
    size: int
    partition_path: str
    suffix: str = ""

    @classmethod
    def from_path(cls, path: str, size: int, partition_path: str) -> "LogFile | None":
        name = path.rstrip("/").rsplit("/", 1)[-1]
        parsed = parse_log_file_name(name)
        if parsed is None or parsed.ext != ".log":
            return None
        return cls(
            path, name, parsed.file_id, parsed.base_instant, parsed.version,
            parsed.write_token, size, partition_path, parsed.suffix,
        )

    @property
    def delta_commit_time(self) -> str:
        """The instant in the file's name (Hudi's ``getDeltaCommitTime``): the slice's base
        instant on table version 6, the delta commit that wrote the file on 8+ (see
        ``log_file_layout``)."""
        return self.base_instant

    @property
    def sort_key(self) -> tuple:
        # base instant, then version, then write token (missing token first), then suffix
        token = (0, "") if self.write_token is None else (1, self.write_token)
        return (self.base_instant, self.version, token, self.suffix)

    def __lt__(self, other: "LogFile") -> bool:
        return self.sort_key < other.sort_key


@dataclass
class FileSlice:
    partition_path: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None = None
    log_files: list[LogFile] = field(default_factory=list)

    @property
    def file_group_id(self) -> tuple[str, str]:
        return (self.partition_path, self.file_id)

    @property
    def is_empty(self) -> bool:
        return self.base_file is None and not self.log_files

    @property
    def latest_log_file(self) -> LogFile | None:
        return self.log_files[-1] if self.log_files else None

    @property
    def total_size(self) -> int:
        return (self.base_file.size if self.base_file else 0) + sum(lf.size for lf in self.log_files)

    def sort_logs(self) -> None:
        self.log_files.sort(key=lambda lf: lf.sort_key)

    def with_base_file(self, base_file: BaseFile | None) -> "FileSlice":
        return FileSlice(self.partition_path, self.file_id, self.base_instant, base_file, list(self.log_files))


@dataclass
class FileGroup:
    partition_path: str
    file_id: str
    slices: list[FileSlice] = field(default_factory=list)

    @property
    def file_group_id(self) -> tuple[str, str]:
        return (self.partition_path, self.file_id)

    def slice_at(self, base_instant: str) -> FileSlice | None:
        for s in self.slices:
            if s.base_instant == base_instant:
                return s
        return None

    def _get_or_add(self, base_instant: str) -> FileSlice:
        s = self.slice_at(base_instant)
        if s is None:
            s = FileSlice(self.partition_path, self.file_id, base_instant)
            self.slices.append(s)
            self.slices.sort(key=lambda x: normalize_instant_time(x.base_instant))
        return s

    def add_base_file(self, bf: BaseFile) -> None:
        self._get_or_add(bf.commit_time).base_file = bf

    def add_log_file(self, lf: LogFile) -> None:
        s = self._get_or_add(lf.base_instant)
        s.log_files.append(lf)
        s.sort_logs()

    def add_empty_slice(self, base_instant: str) -> None:
        """A pending compaction opens a new slice at its instant (Hudi ``addNewFileSliceAtInstant``)."""
        self._get_or_add(base_instant)

    def latest_slice(self) -> FileSlice | None:
        return self.slices[-1] if self.slices else None

    def latest_slice_before_or_on(self, ts: str) -> FileSlice | None:
        lim = normalize_instant_time(ts)
        cands = [s for s in self.slices if normalize_instant_time(s.base_instant) <= lim]
        return cands[-1] if cands else None

    def latest_base_file(self) -> BaseFile | None:
        for s in reversed(self.slices):
            if s.base_file is not None:
                return s.base_file
        return None

    def all_base_files(self) -> list[BaseFile]:
        return [s.base_file for s in self.slices if s.base_file is not None]

    def all_log_files(self) -> list[LogFile]:
        return [lf for s in self.slices for lf in s.log_files]


def build_file_groups_by_completion_time(
    base_files: Iterable[BaseFile], log_files: Iterable[LogFile], completion_times: Mapping[str, str],
    timeline_start: str | None, pending_compactions: Iterable[tuple[str, str, str]],
    pending_new_groups: Iterable[tuple[str, str, str]] = (),
) -> dict[tuple[str, str], FileGroup]:
    """Table version 8+: a log file names the delta commit that wrote it, not its slice.

    Hudi 1.x ``HoodieFileGroup.getBaseInstantTime``: the log joins the slice with the
    latest base instant at or before the log's completion time; a log still pending
    joins the latest slice; one older than every slice opens its own. A pending
    compaction's slice (``(partition, fileId, instant)``) is opened first, so logs completed
    after the plan land in it; so is the slice of a group a pending clustering will create
    (``pending_new_groups``, Hudi's consistent-hashing resize children), so logs written to it
    before its base file exists land in that slice. ``completion_times``: requested -> completion time of the
    completed instants; a log older than ``timeline_start`` was written by an archived,
    hence completed, delta commit.
    """
    groups = build_file_groups(base_files, [])
    log_files = list(log_files)
    # a group of log files only (an NBCC or Flink bucket group before its first compaction) is a
    # group as much as one with a base file: its pending compaction's slice is opened too, or a
    # log completed after the plan would join the slice the plan compacts (Hudi builds its
    # groups from base and log files before adding the pending compactions' slices)
    with_logs = {(lf.partition_path, lf.file_id) for lf in log_files}
    for part, fid, ts in pending_compactions:
        fg = groups.get((part, fid))
        if fg is None and (part, fid) in with_logs:
            fg = groups.setdefault((part, fid), FileGroup(part, fid))
        if fg is not None:
            fg.add_empty_slice(ts)
    for part, fid, ts in pending_new_groups:
        groups.setdefault((part, fid), FileGroup(part, fid)).add_empty_slice(ts)
    done = completion_times
    start = timeline_start
    for lf in sorted(log_files, key=lambda x: x.sort_key):
        fg = groups.setdefault((lf.partition_path, lf.file_id), FileGroup(lf.partition_path, lf.file_id))
        completion = done.get(lf.base_instant)
        if completion is None and start is not None and lf.base_instant < start:
            completion = lf.base_instant  # archived delta commit: completed before the active timeline
        if not fg.slices:
            target = lf.base_instant
        elif completion is None:
            target = fg.slices[-1].base_instant
        else:
            before = [s.base_instant for s in fg.slices
                      if normalize_instant_time(s.base_instant) <= normalize_instant_time(completion)]
            target = before[-1] if before else lf.base_instant
        fg.add_empty_slice(target)
        sl = fg.slice_at(target)
        assert sl is not None
        sl.log_files.append(lf)
    return groups


def carry_logs_of_visible_writes(visible: FileGroup, dropped: Iterable[FileSlice], limit: str | None,
                                 layout: LogFileLayout) -> FileGroup:
    """``visible`` (a group's slices visible at ``limit``) with the logs of the ``dropped``
    (later) slices whose delta commit is at or before ``limit`` added to its last slice.

    Version 8+ puts a log in the slice of its delta commit's *completion* time, so a delta
    commit that started before a compaction and completed after it (NBCC writers, Flink's)
    sits in the compaction's slice, which a read as of an earlier time (or a snapshot taken
    before the compaction's instant) does not see. Its records belong to the table as of its
    instant, on top of the slice before: carried there, never dropped with the later slice.
    ``layout``: the table's ``LogFileLayout``; version 6 (slices by instant time) carries nothing."""
    if limit is None or not layout.slices_by_completion_time:
        return visible
    bound = normalize_instant_time(limit)
    carried = [lf for s in dropped for lf in s.log_files if normalize_instant_time(lf.delta_commit_time) <= bound]
    if carried:
        if not visible.slices:
            visible.slices.append(FileSlice(visible.partition_path, visible.file_id, carried[0].delta_commit_time,
                                            None, []))
        last = visible.slices[-1]
        last.log_files = sorted(last.log_files + carried, key=lambda lf: lf.sort_key)
    return visible


def build_file_groups(
    base_files: Iterable[BaseFile], log_files: Iterable[LogFile]
) -> dict[tuple[str, str], FileGroup]:
    """Group files by ``(partition, fileId)`` and slice them by base instant."""
    groups: dict[tuple[str, str], FileGroup] = {}
    for bf in base_files:
        key = (bf.partition_path, bf.file_id)
        groups.setdefault(key, FileGroup(*key)).add_base_file(bf)
    for lf in log_files:
        key = (lf.partition_path, lf.file_id)
        groups.setdefault(key, FileGroup(*key)).add_log_file(lf)
    return groups
