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

from airflow_hoodie.errors import HoodieMetadataDamagedError, HoodieTableNotFoundError
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


def refuse_damage(scan: LogScanResult, partition: str) -> None:
    """Raise :class:`HoodieMetadataDamagedError` when the scan of a metadata-table file
    group skipped a corrupt block that no rollback cancelled."""
    if scan.damaged:
        raise HoodieMetadataDamagedError(damage_message(partition, scan.damaged), scan.damaged[0].path, partition,
                                         tuple(scan.damaged))


def refuse_damaged_slice(storage: Any, file_slice: Any, partition: str) -> None:
    """Refuse a metadata-table file slice whose logs hold a corrupt block no rollback
    cancelled, before a writer appends to it. Only the blocks' framing is read (no record
    is decoded): a writer that appended to a damaged partition would keep it in the state
    Hudi's readers misread, and the metadata table's compaction would then merge the loss
    into a base file, where nothing shows it any more."""
    logs = [lf.path for lf in getattr(file_slice, "log_files", None) or []]
    if logs:
        refuse_damage(scan_log_files(storage, logs, None, (), decode=False, warn=False), partition)


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
