"""A damaged metadata-table partition is refused by name, never read as "absent" (issue 35).

Hudi's log record reader skips a corrupt block (``HoodieCorruptBlock``) that no rollback
block cancels, on the metadata table too. There a skipped block is not a few missing rows:
it is every key of a record-index block answering "not in the table" (so an upsert inserts
them again: duplicates), every file of a files-partition block disappearing from listings,
every statistics record missing. So a metadata-table reader of ours treats such a scan as
damage: :func:`refuse_damage` raises :class:`HoodieMetadataDamagedError` naming the file.
Where a correct answer exists without the partition, the caller falls back to it (a read
lists storage instead of the files partition, pruning reads every file); a writer stops,
since everything it appends builds on a partition Hudi's own readers would misread.

The advice works with what this project offers: a write with ``hoodie.metadata.enable=false``
removes the whole metadata table (:mod:`removal`), and the next write with it enabled
builds it again from the data files, the record index with a full scan (:mod:`maintenance`).
"""

from __future__ import annotations

from typing import Any, Iterable

from airflow_hoodie.errors import HoodieError, HoodieMetadataDamagedError, HoodieTableNotFoundError
from airflow_hoodie.table.file_group.file_naming import parse_log_file_name
from airflow_hoodie.table.log.log_reader import DamagedBlock, LogScanResult, scan_log_files
from airflow_hoodie.table.properties import PROPERTIES_BACKUP_FILE, PROPERTIES_FILE, TableConfig
from airflow_hoodie.table.storage.storage import Storage

#: what a block of each partition holds, for the message
_HOLDS = {
    "files": "file names (files it lists would vanish from every listing)",
    "record_index": "record keys (an upsert would find them absent and insert them again: duplicates)",
    "column_stats": "column statistics (reads pruning by them would skip files that hold matches)",
    "partition_stats": "partition statistics (reads pruning by them would skip partitions that hold matches)",
    "bloom_filters": "bloom filters",
}

REBUILD_ADVICE = (
    "Rebuild the metadata table: run one write with hoodie.metadata.enable=false (it removes .hoodie/metadata), "
    "then write with it enabled again; that write builds it anew from the data files, the record index with a "
    "full scan. Reads with hoodie.metadata.enable=false list storage and need no metadata table meanwhile.")


def damage_message(partition: str, damaged: Iterable[DamagedBlock], outcome: str = "Nothing was committed.") -> str:
    """The message naming each damaged metadata log; ``outcome``: what this job does instead."""
    blocks = list(damaged)
    what = _HOLDS.get(partition, "records")
    return (f"The metadata table's {partition} partition is damaged: {'; '.join(d.describe() for d in blocks)}. "
            f"Hudi's readers skip such a block, and with it the {what}; so this job does not use the partition. "
            f"{outcome} {REBUILD_ADVICE}")


def refuse_damage(scan: LogScanResult, partition: str, storage: Storage | None = None) -> None:
    """Raise :class:`HoodieMetadataDamagedError` when the scan of a metadata-table file
    group skipped a corrupt block that no rollback cancelled and that held committed
    records (:func:`committed_damage`; without ``storage`` every such block counts)."""
    damaged = scan.damaged if storage is None or not scan.damaged else committed_damage(storage, scan.damaged)
    if damaged:
        raise HoodieMetadataDamagedError(damage_message(partition, damaged), damaged[0].path, partition,
                                         tuple(damaged))


def committed_damage(storage: Storage, damaged: Iterable[DamagedBlock]) -> list[DamagedBlock]:
    """The damaged blocks that held records of a completed metadata-table delta commit.

    A writer killed while appending leaves a torn block past the bytes its instant would
    have committed; Hudi skips it, and so may we: it never held a committed record. Every
    completed delta commit records, per log file it wrote, where its bytes end
    (``fileSizeInBytes``, ``logOffset + totalWriteBytes``). A block starting before the
    largest such end held committed records: damage. A file no completed instant of the
    active timeline names is, on table version 8+ (log files named by their writing
    instant), a leftover when that instant is pending or unknown and not older than the
    active timeline; on version 6 (names carry the slice, not the writer) it cannot be told
    from a log of an archived delta commit, so it counts as damage. Read only when a scan
    found damage: the intact path costs nothing."""
    blocks = list(damaged)
    by_base: dict[str, list[DamagedBlock]] = {}
    for d in blocks:
        folder = (d.fs_path or d.path).rsplit("/", 1)[0]
        by_base.setdefault(folder.rsplit("/", 1)[0], []).append(d)
    out: list[DamagedBlock] = []
    for mdt_base, group in by_base.items():
        ends, first, by_writer = _committed_ends(storage, mdt_base)
        for d in group:
            name = (d.fs_path or d.path).rsplit("/", 1)[-1]
            if name in ends:
                if d.offset < ends[name]:
                    out.append(d)
                continue
            parsed = parse_log_file_name(name)
            if not by_writer or parsed is None or (first is not None and parsed.base_instant < first):
                out.append(d)
    return out


def _committed_ends(storage: Storage, mdt_base: str) -> tuple[dict[str, int], str | None, bool]:
    """(log file name -> end of its committed bytes, the active timeline's first instant,
    whether log files are named by their writing instant) of the metadata table."""
    from airflow_hoodie.table.table_format import TableFormat  # noqa: PLC0415
    from airflow_hoodie.table.timeline.timeline import Timeline  # noqa: PLC0415 - the timeline imports the table layer

    try:
        config = load_metadata_config(storage, mdt_base)
        timeline = Timeline.load(storage, mdt_base)
    except HoodieError:
        return {}, None, False
    ends: dict[str, int] = {}
    for inst in timeline.instants:
        if not inst.is_completed or inst.action not in ("deltacommit", "commit"):
            continue
        try:
            meta = timeline.commit_metadata(inst)
        except HoodieError:
            continue
        for _part, stat in meta.iter_write_stats():
            name = (stat.path or "").rsplit("/", 1)[-1]
            end = max(int(stat.file_size_in_bytes or 0), int(stat.log_offset or 0) + int(stat.total_write_bytes or 0))
            if name and end > ends.get(name, 0):
                ends[name] = end
    first = timeline.instants[0].timestamp if timeline.instants else None
    return ends, first, TableFormat.of(config).log_file_layout.names_logs_by_write_instant


def refuse_damaged_slice(storage: Any, file_slice: Any, partition: str) -> None:
    """Refuse a metadata-table file slice whose logs hold a corrupt block no rollback
    cancelled, before a writer appends to it. Only the blocks' framing is read (no record
    is decoded): a writer that appended to a damaged partition would keep it in the state
    Hudi's readers misread, and the metadata table's compaction would then merge the loss
    into a base file, where nothing shows it any more."""
    logs = [lf.path for lf in getattr(file_slice, "log_files", None) or []]
    if logs:
        refuse_damage(scan_log_files(storage, logs, None, (), decode=False, warn=False), partition, storage)


def metadata_properties_missing(storage: Storage, mdt_base: str) -> bool:
    """The metadata table's folder is there but neither its ``hoodie.properties`` nor Hudi's
    backup of it: no reader can open it (Hudi's reader then lists storage) and no writer can
    add to it, so a writer removes and rebuilds it (maintenance.prepare_metadata_table)."""
    meta = Storage.join(mdt_base, ".hoodie")
    return storage.exists(meta) and not any(
        storage.exists(Storage.join(meta, name)) for name in (PROPERTIES_FILE, PROPERTIES_BACKUP_FILE))


def load_metadata_config(storage: Storage, mdt_base: str) -> TableConfig:
    """The metadata table's ``hoodie.properties``; its absence is named as the metadata
    table's damage, with advice that works, not as a missing data table ("create one by
    running an upsert" made the user run the upsert that failed the same way)."""
    try:
        return TableConfig.load(storage, mdt_base)
    except HoodieTableNotFoundError as exc:
        where = storage.uri(Storage.join(mdt_base, ".hoodie", PROPERTIES_FILE))
        raise HoodieMetadataDamagedError(
            f"The metadata table's {where} is missing (and no {PROPERTIES_BACKUP_FILE} beside it): the metadata "
            "table cannot be read. Reads list storage instead, as Hudi's readers do when the metadata table is not "
            "found. The next write with hoodie.metadata.enable=true (the default) removes it and builds it anew from "
            "the data files; a write with hoodie.metadata.enable=false removes it for good.", where) from exc


__all__ = ["REBUILD_ADVICE", "damage_message", "load_metadata_config", "metadata_properties_missing", "refuse_damage",
           "refuse_damaged_slice"]
