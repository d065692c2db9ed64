"""Partition paths must stay inside the table: a value such as ``..`` or ``/etc`` would
write outside the base path, and ``.`` would land rows in the base directory where no
reader lists them. An empty segment (``x/`` or ``x//y``) names a directory the file names
and the markers disagree on, and a control character (``\n``) makes the table unreadable to
hudi-rs. Hudi's key generators never produce such paths from sane data, so we refuse them
before anything is written."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieKeyError


def bad_partition_path(path: str) -> str | None:
    """Why ``path`` cannot be a partition path, or None when it can."""
    if path.startswith("/") or "\\" in path:
        return "is absolute or holds a backslash"
    control = next((c for c in path if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if control is not None:
        return f"holds the control character {control!r}, which readers of the table cannot list"
    if not path:
        return None  # the non-partitioned table
    for segment in path.split("/"):
        if segment in (".", ".."):
            return f"has the segment {segment!r}, which leaves the partition directory"
        if not segment:
            return "has an empty segment (a leading, trailing or doubled '/')"
    return None


def check_partition_paths(paths: pa.Array | pa.ChunkedArray) -> None:
    """Raise :class:`HoodieKeyError` naming the first unusable partition path."""
    for value in pc.unique(paths).to_pylist():
        if value is None:
            continue
        reason = bad_partition_path(value)
        if reason:
            raise HoodieKeyError(
                f"Partition path {value!r} {reason}. Fix the partition path field's values (or the key "
                "generator settings) so every partition stays inside the table; nothing was written.")
