"""Reading and writing a partition's consistent-hashing metadata files, as Hudi's
``ConsistentBucketIndexUtils`` does (loadMetadata, saveMetadata, createCommitMarker).

Which ``.hashing_meta`` is the partition's ring: the newest one when it is the default
(``00000000000000``) or has its ``.commit`` marker; else the files newer than the newest marker
are *fixed up*: one whose replacecommit completed gets its missing marker (the resize committed,
but its writer died before the marker), and so does one whose replacecommit is gone from the
active timeline but whose file groups are the partition's latest (Hudi's "recommit" check);
one of a pending or failed resize is ignored. The newest fixed one wins, else the newest
committed one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from airflow_hoodie.table.consistent_hashing import (
    COMMIT_MARKER_SUFFIX,
    HASHING_META_FOLDER,
    HASHING_META_SUFFIX,
    INIT_INSTANT,
    HashingMetadata,
)
from airflow_hoodie.table.storage.storage import Storage


def metadata_dir(storage: Storage, base_path: str, partition: str) -> str:
    return storage.join(base_path, HASHING_META_FOLDER, partition) if partition else \
        storage.join(base_path, HASHING_META_FOLDER)


def _timestamp(name: str) -> str:
    return name.split(".")[0]


def load_metadata(storage: Storage, base_path: str, partition: str, completed: Callable[[str], bool],
                  pending: Callable[[str], bool],
                  latest_file_ids: Callable[[], Iterable[str]] | None = None) -> HashingMetadata | None:
    """The partition's committed ring, or None when it has none yet. ``completed`` /
    ``pending``: whether an instant is a completed commit or replacecommit / a pending one;
    ``latest_file_ids``: the partition's latest file groups (the recommit check)."""
    folder = metadata_dir(storage, base_path, partition)
    entries = [e for e in storage.list_dir(folder) if not e.is_dir]
    markers = sorted(_timestamp(e.name) for e in entries if e.name.endswith(COMMIT_MARKER_SUFFIX))
    metas = sorted((e for e in entries if e.name.endswith(HASHING_META_SUFFIX)), key=lambda e: e.name)
    if not metas:
        return None
    newest = metas[-1]
    newest_marker = markers[-1] if markers else None
    if _timestamp(newest.name) in (INIT_INSTANT, newest_marker):
        return HashingMetadata.from_bytes(storage.read_bytes(newest.path))
    fixed = []
    for meta in metas:
        ts = _timestamp(meta.name)
        if newest_marker is not None and ts <= newest_marker:
            continue
        if completed(ts) or ts == INIT_INSTANT:
            if ts not in markers:
                create_commit_marker(storage, base_path, partition, ts)
            fixed.append(meta)
        elif not pending(ts) and latest_file_ids is not None:
            md = HashingMetadata.from_bytes(storage.read_bytes(meta.path))
            prefixes = {n.file_id_prefix for n in md.nodes}
            if any(fid.rsplit("-", 1)[0] in prefixes for fid in latest_file_ids()):
                create_commit_marker(storage, base_path, partition, ts)
                fixed.append(meta)
    if fixed:
        return HashingMetadata.from_bytes(storage.read_bytes(fixed[-1].path))
    if newest_marker is not None:
        for meta in metas:
            if _timestamp(meta.name) == newest_marker:
                return HashingMetadata.from_bytes(storage.read_bytes(meta.path))
        raise FileNotFoundError(f"{folder} has the commit marker {newest_marker}{COMMIT_MARKER_SUFFIX} but no "
                                f"{newest_marker}{HASHING_META_SUFFIX}")
    return None


def save_metadata(storage: Storage, base_path: str, metadata: HashingMetadata, overwrite: bool = False) -> None:
    """Write ``metadata``'s file. The default ring is created only if absent (every writer
    creates the same bytes); a resize's file is overwritten, so a re-run clustering can
    write it again."""
    path = storage.join(metadata_dir(storage, base_path, metadata.partition_path), metadata.file_name)
    if overwrite:
        storage.write_bytes(path, metadata.to_bytes())
    elif not storage.exists(path):
        storage.create_if_absent(path, metadata.to_bytes())


def create_commit_marker(storage: Storage, base_path: str, partition: str, instant: str) -> None:
    """The empty ``<instant>.commit`` that marks a resize's ring as committed."""
    path = storage.join(metadata_dir(storage, base_path, partition), instant + COMMIT_MARKER_SUFFIX)
    if not storage.exists(path):
        storage.create_if_absent(path, b"")


def delete_resize_metadata(storage: Storage, base_path: str, partition: str, instant: str) -> list[str]:
    """Remove the ring a resize at ``instant`` wrote for ``partition``: its ``.commit`` marker
    first, then its ``.hashing_meta``, so a crash in between leaves an unmarked ring of an
    instant no longer completed, which :func:`load_metadata` ignores (the other order would
    leave a marker without its ring, which it refuses). Used when the resize is rolled back or
    restored away; the default ring (``00000000000000``) is never a resize's. Returns the
    paths deleted."""
    if instant == INIT_INSTANT:
        return []
    folder = metadata_dir(storage, base_path, partition)
    gone = []
    for suffix in (COMMIT_MARKER_SUFFIX, HASHING_META_SUFFIX):
        path = storage.join(folder, instant + suffix)
        if storage.delete(path):
            gone.append(path)
    return gone


__all__ = ["create_commit_marker", "delete_resize_metadata", "load_metadata", "metadata_dir", "save_metadata"]
