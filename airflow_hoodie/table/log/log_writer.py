"""Appending blocks to a file group's log files, as ``HoodieLogFormatWriter`` does.

A writer targets one file slice: (partition, file id, base instant). On its first
append it looks for the latest log file version of that slice:

* found, storage can append (local, HDFS) and the file is below the size threshold:
  the blocks are appended to that file, which keeps its name and write token;
* found otherwise (object stores cannot append; or the file is full): a new file with
  version + 1 and this writer's write token is created;
* none: version 1 with this writer's write token.

Table version 8+ (Hudi 1.x) never appends: each delta commit names its own log file, so
a writer built with ``append_to_existing=False`` (:meth:`LogWriter.for_instant` decides it
from the table version) always creates the next version, and rolls over to another
version if that name was taken meanwhile.

After each ``append`` call, if the current file has grown past
``hoodie.logfile.max.size`` (default 1 GiB) the writer rolls over, so the next call
starts version + 1 (Hudi checks after the call, so one call's blocks never split).
The output stream stays open between calls (on object stores the object only appears
when :meth:`LogWriter.close` completes the upload), so always close the writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import pyarrow as pa

from airflow_hoodie.config_keys.log import LOG_BLOCK_MAX_SIZE, LOG_FILE_MAX_SIZE
from airflow_hoodie.errors import HoodieIOError
from airflow_hoodie.table.file_group.file_naming import (
    log_file_name,
    parse_log_file_name,
)
from airflow_hoodie.table.file_group.log_file_layout import log_file_layout
from airflow_hoodie.table.log.log_block import LogBlock, serialize_block
from airflow_hoodie.table.storage.storage import Storage


DEFAULT_MAX_FILE_SIZE = 1024 * 1024 * 1024
#: Hudi's ``HoodieLogFile.LOGFILE_BASE_VERSION``.
LOGFILE_BASE_VERSION = 1
LOG_EXTENSION = ".log"


@dataclass(frozen=True)
class AppendResult:
    """Where one ``append`` call's blocks landed (Hudi's ``AppendResult``)."""

    log_path: str
    offset: int
    size: int

    @property
    def file_name(self) -> str:
        return self.log_path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def version(self) -> int:
        parsed = parse_log_file_name(self.file_name)
        return parsed.version if parsed else LOGFILE_BASE_VERSION


def latest_log_file(
    storage: Storage, partition_dir: str, file_id: str, base_instant: str,
    ext: str = LOG_EXTENSION,
) -> tuple[int, str | None, str | None, int]:
    """(version, write token, path, size) of the slice's latest log file on storage, or
    (0, None, None, 0) if it has none. Ties on version break on the write token, as
    Hudi's log file comparator does."""
    return _latest_of(((st.name, st.path, st.size) for st in storage.list_dir(partition_dir) if not st.is_dir),
                      file_id, base_instant, ext)


def _latest_of(files: Iterable[tuple[str, str, int]], file_id: str, base_instant: str, ext: str
               ) -> tuple[int, str | None, str | None, int]:
    """The latest of ``(name, path, size)`` log files of one slice (see :func:`latest_log_file`)."""
    best: tuple[int, str, str, int] | None = None
    for name, path, size in files:
        parsed = parse_log_file_name(name)
        if (
            parsed is None
            or parsed.file_id != file_id
            or parsed.base_instant != base_instant
            or parsed.ext != ext
            or parsed.suffix
        ):
            continue
        cand = (parsed.version, parsed.write_token or "", path, size)
        if best is None or cand[:2] > best[:2]:
            best = cand
    if best is None:
        return 0, None, None, 0
    return best[0], best[1] or None, best[2], best[3]


class LogWriter:
    """Appends log blocks to one file slice's log files (see module doc)."""

    def __init__(
        self,
        storage: Storage,
        partition_dir: str,
        file_id: str,
        base_instant: str,
        write_token: str,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        ext: str = LOG_EXTENSION,
        *,
        append_to_existing: bool = True,
        known_log_files: Sequence[str] | None = None,
    ) -> None:
        """``base_instant`` is the instant in the file names (see :meth:`for_instant`);
        ``append_to_existing=False`` always starts a new file (table version 8+).

        ``known_log_files``: the slice's log file names as the writer's planning view
        lists them. A writer that starts a new file (no append: version 8+, or an object
        store) takes the next version from them and probes only its own name, instead of
        listing the partition: on an object store that LIST per file group is what the
        metadata table removes. A writer that may append lists storage, because it must
        append to the true latest file."""
        self.storage = storage
        self.partition_dir = partition_dir
        self.file_id = file_id
        self.base_instant = base_instant
        self.write_token = write_token
        self.max_file_size = int(max_file_size)
        self.ext = ext
        self.append_to_existing = bool(append_to_existing)
        self.known_log_files = None if known_log_files is None else list(known_log_files)
        self._resolved: tuple[str, int, bool, int] | None = None
        self._out: Any = None
        self._path: str | None = None
        self._version = 0
        self._pos = 0
        self._rolled = False  # next open must create version + 1
        self._closed = False

    @classmethod
    def for_instant(
        cls,
        storage: Storage,
        partition_dir: str,
        file_id: str,
        base_instant: str | None,
        instant_time: str,
        write_token: str,
        layout: Any,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        ext: str = LOG_EXTENSION,
        known_log_files: Sequence[str] | None = None,
    ) -> "LogWriter":
        """The writer ``instant_time`` uses to add blocks to the slice based at
        ``base_instant`` (None: a group without base file) of a table whose log-file ``layout``
        is given (a ``LogFileLayout``, or what :func:`log_file_layout` reads one from: a table
        version or a ``TableFormat``): version 6 names the files with the base
        instant and appends where it can; version 8+ names them with ``instant_time`` and never
        appends (:mod:`~airflow_hoodie.table.file_group.log_file_layout`)."""
        rules = log_file_layout(layout)
        return cls(storage, partition_dir, file_id, rules.log_file_instant(base_instant, instant_time),
                   write_token, max_file_size, ext, append_to_existing=rules.appends_to_existing_log,
                   known_log_files=known_log_files)

    # ------------------------------------------------------------------ state
    @property
    def log_path(self) -> str | None:
        """Path of the file the next ``append`` writes to (None before the first)."""
        return self._path

    @property
    def version(self) -> int:
        return self._version

    @property
    def current_size(self) -> int:
        return self._pos

    def _path_for(self, version: int, token: str | None) -> str:
        name = log_file_name(self.file_id, self.base_instant, version, token, self.ext)
        return self.storage.join(self.partition_dir, name)

    def _resolve(self) -> tuple[str, int, bool, int]:
        """(path, version, append?, current size) the next append would write to."""
        if self._resolved is not None:
            return self._resolved
        self._resolved = self._resolve_now()
        return self._resolved

    def _resolve_now(self) -> tuple[str, int, bool, int]:
        may_append = self.append_to_existing and self.storage.supports_append
        if self._rolled:
            version, path, size = self._version, None, 0
        elif self.known_log_files is not None and not may_append:
            version, _token, path, size = _latest_of(
                ((name, self.storage.join(self.partition_dir, name), 0) for name in self.known_log_files),
                self.file_id, self.base_instant, self.ext)
        else:
            version, _token, path, size = latest_log_file(
                self.storage, self.partition_dir, self.file_id, self.base_instant, self.ext
            )
        if path is not None and may_append and size < self.max_file_size:
            return path, version, True, size
        new_version = version + 1 if version else LOGFILE_BASE_VERSION
        new_path = self._path_for(new_version, self.write_token)
        while self.storage.file_exists(new_path):  # someone else created it: move on
            new_version += 1
            new_path = self._path_for(new_version, self.write_token)
        return new_path, new_version, False, 0

    def next_log_path(self) -> str:
        """The file the next :meth:`append` writes to (create the APPEND marker for this
        name before appending, as Hudi does); resolving does not open anything."""
        if self._out is not None and self._path is not None:
            return self._path
        return self._resolve()[0]

    def _open(self) -> None:
        """Open the output stream: append to the latest file or create the next."""
        path, version, append, size = self._resolve()
        self._out = self.storage.open_append(path) if append else self.storage.open_output(path)
        self._path, self._version, self._pos = path, version, size
        self._rolled = False
        self._resolved = None

    # ------------------------------------------------------------------ writing
    def append(self, blocks: Sequence[LogBlock]) -> list[AppendResult]:
        """Write ``blocks`` to the current log file; one :class:`AppendResult` per file
        written (always one: a call's blocks stay together, as in Hudi). Each block's
        ``offset`` and ``size`` are set to where it landed."""
        if self._closed:
            raise HoodieIOError("LogWriter is closed; create a new writer to append more blocks.")
        if not blocks:
            return []
        payloads = [serialize_block(b) for b in blocks]
        if self._out is None:
            self._open()
        start = self._pos
        try:
            pos = start
            for block, data in zip(blocks, payloads):
                self._out.write(data)
                block.offset, block.size = pos, len(data)
                pos += len(data)
            self._out.flush()
        except (OSError, pa.ArrowException) as exc:
            raise HoodieIOError(
                f"Cannot append to log file {self.storage.uri(self._path or '')!r}: {exc}"
            ) from exc
        self._pos = pos
        result = AppendResult(self._path or "", start, pos - start)
        if self._pos > self.max_file_size:
            self._roll_over()
        return [result]

    def append_block(self, block: LogBlock) -> AppendResult:
        """Append one block (Hudi's ``appendBlock``)."""
        return self.append([block])[0]

    def _roll_over(self) -> None:
        self._close_stream()
        self._rolled = True
        self._resolved = None

    def _close_stream(self) -> None:
        if self._out is not None:
            try:
                self._out.close()
            except (OSError, pa.ArrowException) as exc:
                raise HoodieIOError(
                    f"Cannot finish log file {self.storage.uri(self._path or '')!r}: {exc}"
                ) from exc
            finally:
                self._out = None

    def close(self) -> None:
        """Flush and close the current file (completes the upload on object stores)."""
        if not self._closed:
            self._close_stream()
            self._closed = True

    def __enter__(self) -> "LogWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "AppendResult",
    "DEFAULT_MAX_FILE_SIZE",
    "LOGFILE_BASE_VERSION",
    "LOG_FILE_MAX_SIZE",
    "LogWriter",
    "latest_log_file",
]
