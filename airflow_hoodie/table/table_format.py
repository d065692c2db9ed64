"""The table version and timeline layout of one table, resolved once from hoodie.properties.

Every action completes its instant through :meth:`HoodieTable.complete`, which asks this
object how the completed instant's metadata is serialized for the table's version. So an
action never branches on the version: a commit hands over a :class:`CommitMetadata`, a
clean, rollback, savepoint or restore its Avro record, and the format writes the bytes
the table's Hudi version reads (version 6: Jackson JSON for commits, Avro containers for
the others; versions 8 and 9: Avro containers for all, commits in Hudi 1.x's
``CommitMetadataSerDeV2`` form). Versions we read but do not write say so here, in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Union

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, ReplaceCommitMetadata
from airflow_hoodie.table.properties import TableConfig
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline import commit_serde_v2
from airflow_hoodie.table.timeline.instant import Action
from airflow_hoodie.table.timeline.timeline import TimelineWriter

#: the table versions we write (Hudi 0.14/0.15, 1.0, 1.1)
WRITABLE_TABLE_VERSIONS = (6, 8, 9)

#: the Avro record each non-commit action completes with
_AVRO_METADATA = {
    Action.CLEAN: "HoodieCleanMetadata",
    Action.ROLLBACK: "HoodieRollbackMetadata",
    Action.SAVEPOINT: "HoodieSavepointMetadata",
    Action.RESTORE: "HoodieRestoreMetadata",
}
#: actions that complete with commit metadata (compaction completes as a commit, clustering
#: as a replacecommit)
_COMMIT_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION,
                             Action.CLUSTERING, Action.LOG_COMPACTION})
#: actions whose version 8/9 completed file is a HoodieReplaceCommitMetadata
_REPLACE_ACTIONS = frozenset({Action.REPLACE_COMMIT, Action.CLUSTERING})

CompletedMetadata = Union[CommitMetadata, Mapping[str, Any]]


@dataclass(frozen=True)
class TableFormat:
    version: int
    timeline_layout: int

    @classmethod
    def of(cls, config: TableConfig) -> "TableFormat":
        layout = (config.get("hoodie.timeline.layout.version") or "").strip()
        return cls(config.table_version, int(layout) if layout.isdigit() else (2 if config.table_version >= 8 else 1))

    @property
    def writable(self) -> bool:
        return self.version in WRITABLE_TABLE_VERSIONS

    def check_writable(self, what: str) -> None:
        if not self.writable:
            raise HoodieNotSupportedError(
                f"{what} is Hudi table version {self.version}. airflow-hoodie writes and runs table services on "
                "table versions 6 (Hudi 0.14/0.15), 8 (Hudi 1.0) and 9 (Hudi 1.1), and never upgrades or downgrades "
                "a table; nothing was changed. Run writes and table services for this table with the Hudi release "
                "that wrote it.")

    def timeline_writer(self, storage: Storage, base_path: str) -> TimelineWriter:
        """The writer of this table's instant files, in its timeline layout's folder and names."""
        return TimelineWriter(storage, base_path, layout=self.timeline_layout)

    @property
    def clustering_action(self) -> str:
        """The action of a pending clustering: Hudi 1.x gives it its own (``clustering``),
        completing as a replacecommit; before, it was a pending replacecommit."""
        return Action.CLUSTERING if self.version >= 8 else Action.REPLACE_COMMIT

    def encode_inflight(self, action: str, metadata: CommitMetadata) -> bytes:
        """The inflight file of a write (its workload profile): JSON on version 6, and on
        versions 8/9 the Avro form of the completed commit, as Hudi 1.x writes it."""
        return self.encode_completed(action, metadata)

    def serialize_completed(self, action: str, metadata: CompletedMetadata) -> bytes:
        """The completed instant file's bytes for ``action`` on a table of this version."""
        self.check_writable("This table")
        return self.encode_completed(action, metadata)

    def encode_completed(self, action: str, metadata: CompletedMetadata, sync_marker: bytes | None = None) -> bytes:
        """The bytes of a completed ``action``, without the writability check.

        Kept apart from :meth:`serialize_completed` so the forms of any version can be checked
        against Hudi's own files byte for byte, and so inflight files share them. ``sync_marker``
        (Avro forms only) fixes the container's otherwise random marker, for byte comparisons.
        """
        if action in _COMMIT_ACTIONS:
            if not isinstance(metadata, CommitMetadata):
                raise TypeError(f"{action} completes with CommitMetadata, not {type(metadata).__name__}")
            if self.version >= 8:
                if action in _REPLACE_ACTIONS and not isinstance(metadata, ReplaceCommitMetadata):
                    metadata = ReplaceCommitMetadata(
                        partition_to_write_stats=metadata.partition_to_write_stats, compacted=metadata.compacted,
                        extra_metadata=metadata.extra_metadata, operation_type=metadata.operation_type)
                return commit_serde_v2.serialize(metadata, sync_marker)
            return metadata.to_json(java_map_order=True)
        schema = _AVRO_METADATA.get(action)
        if schema is None:
            raise HoodieNotSupportedError(f"Completing a {action!r} instant is not supported.")
        return avro_codec.serialize(schema, dict(metadata), sync_marker)
