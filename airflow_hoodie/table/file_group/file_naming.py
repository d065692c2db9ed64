"""Names of data files: base files, log files, write tokens, file ids.

Hudi derives a file's group, slice and writer attempt from its name alone, so these
formats are part of the table format:

* base file: ``<fileId>_<writeToken>_<instantTime>.parquet``
* log file:  ``.<fileId>_<baseInstantTime>.log.<version>_<writeToken>``
  (archived timeline files use the same shape: ``.commits_.archive.<N>_<token>``)
* write token: ``<taskPartitionId>-<stageId>-<taskAttemptId>``
* file id: a random UUID plus ``-<n>`` (``-0`` for a new group).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

BASE_FILE_EXTENSIONS = (".parquet", ".orc", ".hfile")
LOG_EXTENSION = ".log"
ARCHIVE_EXTENSION = ".archive"
LOG_FILE_BASE_VERSION = 1

_BASE_RE = re.compile(r"^([^_.][^_]*)_([^_]+)_(\d+)(\.[A-Za-z0-9]+)$")
# Hudi's log file pattern: fileId, base instant, extension, version, optional token and .cdc
_LOG_RE = re.compile(
    r"^\.(.+)_(.*)\.(log|archive|hfile)\.(\d+)(?:_((\d+)-(\d+)-(\d+))([.-]cdc)?)?$"
)


def make_write_token(partition_id: int, stage_id: int, attempt_id: int) -> str:
    """``p-s-a`` identifying the task attempt that wrote a file."""
    return f"{int(partition_id)}-{int(stage_id)}-{int(attempt_id)}"


def new_file_id(index: int = 0) -> str:
    """A new file group id: ``<uuid4>-<index>``."""
    return f"{uuid.uuid4()}-{index}"


@dataclass(frozen=True)
class BaseFileName:
    file_id: str
    write_token: str
    instant: str
    ext: str = ".parquet"

    @property
    def name(self) -> str:
        return base_file_name(self.file_id, self.write_token, self.instant, self.ext)


@dataclass(frozen=True)
class LogFileName:
    file_id: str
    base_instant: str
    version: int
    write_token: str | None
    ext: str = LOG_EXTENSION
    suffix: str = ""

    @property
    def name(self) -> str:
        return log_file_name(self.file_id, self.base_instant, self.version, self.write_token, self.ext) + self.suffix


def base_file_name(file_id: str, write_token: str, instant: str, ext: str = ".parquet") -> str:
    return f"{file_id}_{write_token}_{instant}{ext}"


def parse_base_file_name(name: str) -> BaseFileName | None:
    """Fields of a base file name, or None if ``name`` is not a base file."""
    m = _BASE_RE.match(name)
    if not m or m.group(4).lower() not in BASE_FILE_EXTENSIONS:
        return None
    return BaseFileName(m.group(1), m.group(2), m.group(3), m.group(4))


def log_file_name(
    file_id: str, base_instant: str, version: int, write_token: str | None, ext: str = LOG_EXTENSION
) -> str:
    """``.fileId_baseInstant.log.version_writeToken`` (no token part if None, as old Hudi)."""
    name = f".{file_id}_{base_instant}{ext}.{int(version)}"
    return f"{name}_{write_token}" if write_token else name


def parse_log_file_name(name: str) -> LogFileName | None:
    """Fields of a log (or archive) file name, or None if ``name`` is not one."""
    m = _LOG_RE.match(name)
    if not m:
        return None
    return LogFileName(
        file_id=m.group(1),
        base_instant=m.group(2),
        version=int(m.group(4)),
        write_token=m.group(5),
        ext="." + m.group(3),
        suffix=m.group(9) or "",
    )


def is_base_file(name: str) -> bool:
    return parse_base_file_name(name) is not None


def is_log_file(name: str) -> bool:
    m = parse_log_file_name(name)
    return m is not None and m.ext == LOG_EXTENSION and not m.suffix
