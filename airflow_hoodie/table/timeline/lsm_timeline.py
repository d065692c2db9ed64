"""The archived timeline of table versions 8 and 9: Hudi 1.x's LSM-tree history.

Hudi 1.x archives completed instants into parquet files under
``.hoodie/<hoodie.timeline.path>/<hoodie.timeline.history.path>`` (``timeline/history``),
one ``HoodieLSMTimelineInstant`` row per instant (requested and completion time, action,
the completed file's bytes as ``metadata``, the requested file's bytes as ``plan``).
Files are named ``<min>_<max>_<layer>.parquet`` and compacted into higher layers, so the
folder can hold files that are no longer part of the timeline: only the files listed by
the latest snapshot's manifest (``manifest_<N>``, N from ``_version_``) count. A Hudi 1.x
incremental query that starts before the active timeline needs these completion times,
which is why the reader loads them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pyarrow.parquet as pq

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.storage.storage import Storage

VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
TEMP_SUFFIX = ".tmp"
FILE_NAME = re.compile(r"^(\d+)_(\d+)_(\d)\.parquet$")
COLUMNS = ("instantTime", "completionTime", "action", "metadata", "plan")


@dataclass(frozen=True)
class LsmRecord:
    """One archived instant as Hudi's LSM timeline stores it."""

    instant_time: str
    completion_time: str | None
    action: str
    metadata: bytes | None
    plan: bytes | None


def _manifest_versions(storage: Storage, folder: str) -> list[int]:
    out = []
    for st in storage.list_dir(folder):
        name = st.name
        if st.is_dir or not name.startswith(MANIFEST_PREFIX) or name.endswith(TEMP_SUFFIX):
            continue
        suffix = name[len(MANIFEST_PREFIX):]
        if suffix.isdigit():
            out.append(int(suffix))
    return out


def latest_snapshot_version(storage: Storage, folder: str) -> int:
    """The version named by ``_version_``, else the highest manifest (as Hudi falls back
    when the version file is unreadable); -1 when nothing was archived yet."""
    version_file = Storage.join(folder, VERSION_FILE)
    if storage.exists(version_file):
        text = storage.read_bytes(version_file).decode("utf-8", errors="replace").strip()
        if text.isdigit():
            return int(text)
    versions = _manifest_versions(storage, folder)
    return max(versions) if versions else -1


def snapshot_files(storage: Storage, folder: str) -> list[str]:
    """Parquet files of the latest snapshot, sorted by name (min instant first)."""
    if not storage.exists(folder):
        return []
    version = latest_snapshot_version(storage, folder)
    if version < 0:
        return []
    manifest = Storage.join(folder, f"{MANIFEST_PREFIX}{version}")
    try:
        doc = json.loads(storage.read_bytes(manifest).decode("utf-8") or "{}")
        names = [str(entry["fileName"]) for entry in doc.get("files") or []]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HoodieCorruptedDataError(
            f"The archived timeline manifest {storage.uri(manifest)} cannot be read ({exc}); restore it "
            "from a backup or remove the history folder's latest manifest and _version_ to fall back "
            "to the previous snapshot."
        ) from exc
    for name in names:
        if not FILE_NAME.match(name):
            raise HoodieCorruptedDataError(
                f"{storage.uri(manifest)} lists {name!r}, which is not an archived timeline file "
                "(<min>_<max>_<layer>.parquet)."
            )
    return sorted(names)


def _opt_bytes(value: object) -> bytes | None:
    return bytes(value) if value is not None else None


def read_records(storage: Storage, folder: str) -> list[LsmRecord]:
    """Every archived instant of the latest snapshot, oldest first, once each.

    An archival that crashed while deleting the active instant files and was retried with
    a different batch can leave one instant in two files; both rows hold the same bytes."""
    records: list[LsmRecord] = []
    for name in snapshot_files(storage, folder):
        path = Storage.join(folder, name)
        try:
            table = pq.read_table(storage.open_input(path))
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
            raise HoodieCorruptedDataError(
                f"Archived timeline file {storage.uri(path)} cannot be read ({exc})."
            ) from exc
        missing = [c for c in ("instantTime", "action") if c not in table.column_names]
        if missing:
            raise HoodieCorruptedDataError(
                f"Archived timeline file {storage.uri(path)} lacks the columns {missing} of HoodieLSMTimelineInstant."
            )
        cols = {c: (table.column(c).to_pylist() if c in table.column_names else [None] * table.num_rows)
                for c in COLUMNS}
        for ts, done, action, meta, plan in zip(*(cols[c] for c in COLUMNS)):
            if ts and action:
                records.append(LsmRecord(str(ts), str(done) if done else None, str(action),
                                         _opt_bytes(meta), _opt_bytes(plan)))
    unique = {(r.instant_time, r.action): r for r in records}
    return sorted(unique.values(), key=lambda r: (r.instant_time, r.action))
