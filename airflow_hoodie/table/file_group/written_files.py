"""What each completed commit wrote and replaced, read from its instant file once per process.

Every write and read checks that the files the timeline names as latest are still there
(:meth:`FileSystemView.check_latest_files_present`), which needs the write stats of every
completed commit on the active timeline. Read one after another that is a round trip per
commit, every write, and tables whose archival runs as a DAG task keep a hundred or more
commits active. A completed instant file is immutable (the timeline only ever creates files,
:class:`TimelineWriter`), so its parsed content is kept here, and only its few file names and
ids, not the whole metadata.

Why a stale entry cannot be served: an entry is keyed by the file's URI *and* the size and
modification time the timeline's own listing reported for it. The name already fixes the
instant time (and, on timeline layout 2, the completion time taken under the table lock), so
the same name comes back only when a rollback or restore deleted the instant and a writer then
reused its time: our generator never hands out a time twice per table in a process and Hudi's
is wall-clock milliseconds, so that takes an explicitly reused time. Even then the file read
again differs from the cached one in its modification time (local file systems keep
nanoseconds; S3 keeps seconds, and a restore plus a rewrite of the same size in the same
second is needed). A timeline not loaded from a listing (no size and time) is never cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Instant
from airflow_hoodie.table.timeline.timeline import Timeline

#: file names held at most (a commit of 10,000 files holds 10,000): bounds the memory a
#: long-lived process spends here to a few tens of MB
MAX_HELD_PATHS = 200_000


@dataclass(frozen=True)
class CommitFiles:
    """The files one completed commit names."""

    #: (partition, fileId, path relative to the base path) of each write stat, in order
    written: tuple[tuple[str, str, str], ...]
    #: partition -> file ids a replacecommit replaced (empty for other commits)
    replaced: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def size(self) -> int:
        return len(self.written) + sum(len(ids) for _, ids in self.replaced)


_lock = threading.Lock()
_cache: "OrderedDict[tuple[str, int, int], CommitFiles]" = OrderedDict()
_held = 0


def _key(timeline: Timeline, instant: Instant) -> tuple[str, int, int] | None:
    status = timeline.listed_status(instant)
    if status is None or status.mtime_ns is None or timeline.storage is None:
        return None
    return timeline.storage.uri(status.path), status.size, status.mtime_ns


def cached_commit_files(timeline: Timeline, instant: Instant) -> CommitFiles | None:
    """The entry of ``instant``'s file if this process read it already, else None (no I/O)."""
    key = _key(timeline, instant)
    if key is None:
        return None
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
        return hit


def commit_files(timeline: Timeline, instant: Instant) -> CommitFiles:
    """The files the completed commit ``instant`` wrote and replaced: from this process's
    entry when the listing shows the same file, else read (one GET) and parsed."""
    hit = cached_commit_files(timeline, instant)
    if hit is not None:
        return hit
    key = _key(timeline, instant)
    meta = timeline.commit_metadata(instant)  # names the file when it does not parse
    written = tuple((stat.partition_path or part or "", stat.file_id, stat.path)
                    for part, stat in meta.iter_write_stats() if stat.file_id and stat.path)
    replaced = tuple((part, tuple(ids or ()))
                     for part, ids in (getattr(meta, "partition_to_replace_file_ids", None) or {}).items())
    files = CommitFiles(written, replaced)
    if key is not None:
        _remember(key, files)
    return files


def _remember(key: tuple[str, int, int], files: CommitFiles) -> None:
    global _held
    if files.size > MAX_HELD_PATHS:
        return
    with _lock:
        if key in _cache:
            return
        _cache[key] = files
        _held += files.size
        while _held > MAX_HELD_PATHS:
            _, old = _cache.popitem(last=False)
            _held -= old.size


def forget_all() -> None:
    """Drop every entry (tests that count reads start from a cold process this way)."""
    global _held
    with _lock:
        _cache.clear()
        _held = 0


def completed_commit_files(storage: Storage, timeline: Timeline) -> list[tuple[Instant, CommitFiles]]:
    """What every completed commit of the timeline wrote, in timeline order.

    Commits this process read before come from the cache above; the others are read side by
    side, so a write over a long active timeline waits a few round trips, not one per commit."""
    commits = list(timeline.completed_commits())
    known = [cached_commit_files(timeline, inst) for inst in commits]
    todo = [inst for inst, files in zip(commits, known) if files is None]
    if todo:
        timeline.instant_path(todo[0])  # the timeline folder is found once, not by each thread
    read = iter(storage.side_by_side(lambda inst: commit_files(timeline, inst), todo))
    return [(inst, files if files is not None else next(read)) for inst, files in zip(commits, known)]


def latest_files_per_timeline(storage: Storage, timeline: Timeline, base_file_extension: str,
                              replaced: set[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, set[str]]]:
    """``{(partition, fileId): (instant, paths)}``: the files of each live group's latest
    slice according to the completed commits' metadata (a base file opens a new slice,
    log files add to it). Groups in ``replaced`` are left out; the cleaner never deletes
    a latest slice, so each of these files must be on storage."""
    latest: dict[tuple[str, str], tuple[str, set[str]]] = {}
    for inst, files in completed_commit_files(storage, timeline):
        for part, fid, path in files.written:
            key = (part, fid)
            prev = latest.get(key)
            if path.endswith(base_file_extension) or prev is None:
                paths = {path} if prev is None or prev[0] != inst.timestamp else prev[1] | {path}
            else:
                paths = prev[1] | {path}
            latest[key] = (inst.timestamp, paths)
    return {k: v for k, v in latest.items() if k not in replaced}


def deleted_by_rollbacks(storage: Storage, base_path: str, timeline: Timeline) -> set[str]:
    """Paths (relative to ``base_path``) that the completed rollbacks of the timeline deleted.

    A rollback deletes its target's files, and the rollback of a consistent-hashing resize
    also the logs completed writes dual-wrote into the resize's child groups (their records
    are in the old groups the rollback keeps): such a file is no loss, though a completed
    commit names it. Read only once a latest file is found missing, so a sound table pays
    nothing for it."""
    root = storage.uri(base_path).rstrip("/") + "/"
    out: set[str] = set()
    for inst in timeline.filter(actions="rollback").instants:
        if not inst.is_completed:
            continue
        try:
            md = avro_codec.deserialize(timeline.read_details(inst), "HoodieRollbackMetadata")
        except Exception:  # noqa: BLE001 - unreadable: it vouches for no deletion
            continue
        for pm in (md.get("partitionMetadata") or {}).values():
            for uri in pm.get("successDeleteFiles") or []:
                full = storage.uri(uri)
                if full.startswith(root):
                    out.add(full[len(root):])
    return out
