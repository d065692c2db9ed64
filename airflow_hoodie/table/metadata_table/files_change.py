"""What one data-table instant changes in the ``files`` partition of the metadata table.

Hudi derives it from the instant's own metadata (HoodieTableMetadataUtil's
convertMetadataToFilesPartitionRecords and its clean, rollback and restore siblings), never
from a listing: a commit adds or grows the files its write stats name (a log file with its
size after the append), a clean or rollback deletes the files it reports as deleted, and a
rollback adds the log files its command blocks went to. Replaced file groups stay listed
until a clean deletes their files, as in Hudi.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata
from airflow_hoodie.table.timeline.instant import Action


@dataclass
class FilesChange:
    #: partition -> file name -> size, None for a deleted file
    files: dict[str, dict[str, int | None]] = field(default_factory=dict)
    #: a commit's own writer schema (Avro JSON): the columns its files' statistics cover, as
    #: Hudi takes them from the commit (a column the commit adds is not in the table's yet)
    writer_schema: str | None = None

    def add(self, partition: str, name: str, size: int) -> None:
        current = self.files.setdefault(partition, {}).get(name)
        self.files[partition][name] = max(size, current or 0)

    def delete(self, partition: str, name: str) -> None:
        self.files.setdefault(partition, {})[name] = None

    @property
    def partitions(self) -> dict[str, bool]:
        """The partitions the instant touched (none is deleted by the actions we run)."""
        return {p: False for p in self.files}

    def __bool__(self) -> bool:
        return bool(self.files)


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _partition_of(partition: str | None) -> str:
    return partition or ""


def _from_commit(meta: CommitMetadata, change: FilesChange) -> None:
    change.writer_schema = meta.schema
    for part, stats in meta.partition_to_write_stats.items():
        for st in stats:
            if st.path:
                change.add(_partition_of(st.partition_path if st.partition_path is not None else part),
                           _name(st.path), int(st.file_size_in_bytes or st.total_write_bytes or 0))
            # a CDC table's merge also wrote the group's .cdc log: listed too, as Hudi lists it
            for cdc_path, size in (st.cdc_stats or {}).items():
                change.add(_partition_of(st.partition_path if st.partition_path is not None else part),
                           _name(cdc_path), int(size or 0))


def _from_deletions(partition_metadata: Mapping[str, Any], change: FilesChange, key: str) -> None:
    for part, pm in (partition_metadata or {}).items():
        for path in pm.get(key) or []:
            change.delete(_partition_of(pm.get("partitionPath", part)), _name(path))


def _from_rollback(meta: Mapping[str, Any], change: FilesChange) -> None:
    for part, pm in (meta.get("partitionMetadata") or {}).items():
        partition = _partition_of(pm.get("partitionPath", part))
        for path in pm.get("successDeleteFiles") or []:
            change.delete(partition, _name(path))
        # a rollback block cancels records and deletes no file: the log files it went to and
        # the ones the rolled-back write appended to stay listed
        for key in ("rollbackLogFiles", "logFilesFromFailedCommit"):
            for path, size in (pm.get(key) or {}).items():
                change.add(partition, _name(path), int(size or 0))


def files_change(action: str, metadata: CommitMetadata | Mapping[str, Any]) -> FilesChange:
    """The files an instant of ``action`` with ``metadata`` added, grew or deleted."""
    change = FilesChange()
    if isinstance(metadata, CommitMetadata):
        _from_commit(metadata, change)
    elif action == Action.CLEAN:
        _from_deletions(metadata.get("partitionMetadata") or {}, change, "successDeleteFiles")
    elif action == Action.ROLLBACK:
        _from_rollback(metadata, change)
    elif action == Action.RESTORE:
        for rollbacks in (metadata.get("hoodieRestoreMetadata") or {}).values():
            for rb in rollbacks or []:
                _from_rollback(rb, change)
    return change
