"""How a table version lays out its log files: the one place the file layer asks the version.

Hudi 0.x (table version 6) and Hudi 1.x (table versions 8 and 9) give log files different
meanings, so every writer, planner and rollback of log files goes through a
:class:`LogFileLayout` instead of testing the version itself:

* **Which instant names a new log file.** Version 6: the base instant of the slice the
  log extends (``.<fileId>_<baseInstant>.log.<v>_<token>``), so one file collects the blocks
  of many delta commits. Version 8+: the delta commit that writes it
  (``HoodieAppendHandle.getInstantTimeForLogFile``), so each file holds one instant's
  blocks and its slice is found from the delta commit's *completion* time (see
  ``FileSystemView._slice_by_completion_time``).
* **Appending to an existing file.** Version 6 appends to the slice's latest log file where
  storage allows it; version 8+ always starts a new file (the name already carries the
  instant; a second write by the same instant rolls over to the next version).
* **The delta write stat.** Version 8+ (Hudi 1.x ``populateWriteStatAndFetchFileSlice``):
  ``prevCommit`` is the delta commit itself, ``baseFile`` empty and ``logFiles`` only the
  files this write created; version 6 names the slice's base instant, base file and logs.
* **Compaction.** Version 8+ compacts the log files whose delta commit completed before
  the compaction instant (later ones belong to the slice the compaction opens); version
  6 takes every log file of the slice.
* **Rollback.** Version 8+ deletes the log files a failed instant wrote (they hold nothing
  else); version 6 appends a rollback command block, since the failed blocks share a file
  with committed ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from airflow_hoodie.table.file_group.file_naming import parse_log_file_name
from airflow_hoodie.table.hudi_release import release_of
from airflow_hoodie.table.timeline.instant import normalize_instant_time


@dataclass(frozen=True)
class LogFileLayout:
    """The log-file rules of one table version (see module doc); a table's comes from its
    ``TableFormat.log_file_layout``."""

    table_version: int

    @property
    def names_logs_by_write_instant(self) -> bool:
        return release_of(self.table_version).names_logs_by_write_instant

    @property
    def slices_by_completion_time(self) -> bool:
        """Whether a log file joins the slice its delta commit *completed* in (a file named by
        its writer says nothing of the slice), as Hudi 1.x's file-system view does; else the
        slice of the base instant its name carries."""
        return self.names_logs_by_write_instant

    @property
    def appends_to_existing_log(self) -> bool:
        """Whether a writer may add its blocks to an existing log file of the slice."""
        return not self.names_logs_by_write_instant

    @property
    def rollback_deletes_logs(self) -> bool:
        """Whether a rollback deletes a failed instant's log files (else: a command block)."""
        return self.names_logs_by_write_instant

    def log_file_instant(self, base_instant: str | None, instant_time: str) -> str:
        """The instant in the name of the log file ``instant_time`` writes into a slice
        based at ``base_instant`` (None: a new file group without base file)."""
        if self.names_logs_by_write_instant or not base_instant:
            return instant_time
        return base_instant

    def delta_stat_fields(self, instant_time: str, base_instant: str | None, base_file_name: str | None,
                          written_log_files: Sequence[str], slice_log_files: Sequence[str] = ()) -> dict[str, Any]:
        """``prevCommit``, ``baseFile`` and ``logFiles`` of a delta write stat.

        ``written_log_files``: names of the files this write created or appended to;
        ``slice_log_files``: names of the slice's log files before the write (version 6
        lists them, as Hudi 0.x's append handle does)."""
        if self.names_logs_by_write_instant:
            return {"prevCommit": instant_time, "baseFile": "", "logFiles": list(dict.fromkeys(written_log_files))}
        names = list(dict.fromkeys([*slice_log_files, *written_log_files]))
        return {"prevCommit": base_instant or "null", "baseFile": base_file_name or "", "logFiles": names}

    def is_written_by(self, log_file_name: str, instant_time: str) -> bool:
        """Whether the log file holds blocks of ``instant_time`` only (version 8+: its name
        carries that instant). Version 6 files are shared by instants: never."""
        if not self.names_logs_by_write_instant:
            return False
        parsed = parse_log_file_name(log_file_name)
        return parsed is not None and parsed.base_instant == instant_time

    def logs_to_compact(self, log_files: Iterable[Any], compaction_instant: str,
                        completion_times: Mapping[str, str], first_active: str | None = None) -> list[Any]:
        """The log files of a slice a compaction at ``compaction_instant`` merges.

        ``log_files`` are :class:`~airflow_hoodie.table.file_group.file_group.LogFile`;
        ``completion_times`` maps completed delta commits to their completion times
        (``Timeline.completion_times``). Version 8+: only logs whose delta commit completed
        before the compaction instant (Hudi 1.x's plan generator keeps a log file when
        ``isCompletedBefore(compactionInstant, deltaCommitTime)``); a log older than the
        active timeline (``first_active``) belongs to an archived, completed delta commit.
        Version 6: all of them."""
        logs = list(log_files)
        if not self.names_logs_by_write_instant:
            return logs
        limit = normalize_instant_time(compaction_instant)
        out = []
        for lf in logs:
            written_by = lf.delta_commit_time
            done = completion_times.get(written_by)
            if done is None and first_active is not None and written_by < first_active:
                done = written_by
            if done is not None and normalize_instant_time(done) < limit:
                out.append(lf)
        return out


def log_file_layout(of: Any) -> LogFileLayout:
    """The layout of a table version given as an int, or a ``TableFormat``'s
    (``.log_file_layout``; not imported here: the format module imports this one)."""
    if isinstance(of, LogFileLayout):
        return of
    if isinstance(of, int):
        return LogFileLayout(of)
    layout = getattr(of, "log_file_layout", None)
    if isinstance(layout, LogFileLayout):
        return layout
    raise TypeError(f"Cannot tell the log-file layout of {type(of).__name__}")


__all__ = ["LogFileLayout", "log_file_layout"]
