"""Temp files a killed process left in ``.hoodie``.

Timeline and properties files are written to ``<name>.<uuid>.tmp`` and renamed into place,
so a reader never sees half a file. A process killed between the two leaves the temp file
behind; the timeline ignores such names, and the next writer removes the ones old enough
that no live writer can still be about to rename them.
"""

from __future__ import annotations

import time

from airflow_hoodie.table.storage.storage import Storage

#: a temp file is renamed within milliseconds of being written; ten minutes is far beyond
STALE_AFTER_S = 600


def remove_stale_temp_files(storage: Storage, meta_path: str, older_than_s: float = STALE_AFTER_S) -> list[str]:
    """Delete ``*.tmp`` files directly under ``meta_path`` older than ``older_than_s``."""
    removed = []
    now = time.time()
    for status in storage.list_dir(meta_path):
        if status.is_dir or not status.name.endswith(".tmp") or status.mtime_ns is None:
            continue
        if now - status.mtime_ns / 1e9 > older_than_s:
            storage.delete(status.path)
            removed.append(status.name)
    return removed
