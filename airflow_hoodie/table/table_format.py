"""The table version and timeline layout of one table, resolved once from hoodie.properties.

Every action completes its instant through ``actions.commit.complete``, which asks this
object how the completed instant's metadata is serialized for the table's version. So an
action never branches on the version: a commit hands over a :class:`CommitMetadata`, a
clean, rollback, savepoint or restore its Avro record, and the format writes the bytes
the table's Hudi version reads (version 6: Jackson JSON for commits, Avro containers for
the others; versions 8 and 9: Avro containers for all, commits in Hudi 1.x's
``CommitMetadataSerDeV2`` form). Versions we read but do not write say so here, in one place.

It is the one object the rest of the code asks about the table's version and timeline
layout (design principle 9): the release line's forms (:mod:`hudi_release`: log-file layout,
metadata-record schema, index versions, ...) and the timeline layout's rules (completion
times, where history goes, which archival rules apply). Facts of the release line that no
helper here names are read as ``fmt.release.<fact>``. Nothing outside these format objects
compares version or layout numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Union

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.file_group.log_file_layout import LogFileLayout
from airflow_hoodie.table.hudi_release import HudiRelease, release_of
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata.commit_metadata import (
    CommitMetadata,
    ReplaceCommitMetadata,
)
from airflow_hoodie.table.properties import TableConfig
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline import commit_serde_v2
from airflow_hoodie.table.timeline.archived_timeline import ArchivedTimeline
from airflow_hoodie.table.timeline.instant import Action
from airflow_hoodie.table.timeline.timeline_paths import METAFOLDER
from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter

#: the table versions we write (Hudi 0.14/0.15, 1.0, 1.1); a write may create a table at each
WRITABLE_TABLE_VERSIONS = (6, 8, 9)
#: table versions our reader understands: 6 (Hudi 0.14/0.15), 8 (1.0), 9 (1.1), and 5 (0.12/0.13),
#: whose upgrade to 6 (Hudi's FiveToSixUpgradeHandler) only drops compaction plans copied under
#: ``.aux`` and compacts the metadata table: nothing a reader sees
READABLE_TABLE_VERSIONS = (5, 6, 8, 9)
#: the timeline layout that keeps instants under ``.hoodie/timeline`` with their completion
#: times and archives into an LSM tree (Hudi 1.x); layout 1 is Hudi 0.x's
_LSM_LAYOUT = 2

#: the Avro record each non-commit action completes with
_AVRO_METADATA = {
    Action.CLEAN: "HoodieCleanMetadata",
    Action.ROLLBACK: "HoodieRollbackMetadata",
    Action.SAVEPOINT: "HoodieSavepointMetadata",
    Action.RESTORE: "HoodieRestoreMetadata",
    Action.INDEXING: "HoodieIndexCommitMetadata",
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
    """The version and timeline layout of one table, with what each implies (module doc)."""

    version: int
    timeline_layout: int
    #: layout 2: the LSM history's folder under ``.hoodie`` (hoodie.timeline.path, then
    #: hoodie.timeline.history.path)
    history_folder: str = "timeline/history"
    #: layout 1: the archive log's folder under ``.hoodie`` (hoodie.archivelog.folder)
    archive_folder: str = "archived"

    @classmethod
    def of(cls, config: TableConfig) -> "TableFormat":
        """The format hoodie.properties describes: its version, and the timeline layout it
        names (else its release line's)."""
        layout = (config.get("hoodie.timeline.layout.version") or "").strip()
        history = Storage.join(config.get("hoodie.timeline.path") or "timeline",
                               config.get("hoodie.timeline.history.path") or "history")
        version = config.table_version
        return cls(version, int(layout) if layout.isdigit() else release_of(version).timeline_layout,
                   history_folder=history, archive_folder=config.archivelog_folder)

    @classmethod
    def for_version(cls, version: int) -> TableFormat:
        """The format of a new table of ``version`` (a write's ``hoodie.write.table.version``,
        before the table exists), in its release line's timeline layout."""
        return cls(version, release_of(version).timeline_layout)

    # ------------------------------------------------------------ the release line
    @property
    def release(self) -> HudiRelease:
        """The Hudi release line whose forms this table carries (:mod:`hudi_release`)."""
        return release_of(self.version)

    @property
    def log_file_layout(self) -> LogFileLayout:
        """How this table's log files are named, appended, compacted and rolled back."""
        return LogFileLayout(self.version)

    @property
    def stats_index_version(self) -> str:
        """The column-stats / partition-stats index version a new index definition gets."""
        return self.release.stats_index_version

    @property
    def clustering_action(self) -> str:
        """The action of a pending clustering: Hudi 1.x gives it its own (``clustering``),
        completing as a replacecommit; before, it was a pending replacecommit."""
        return self.release.clustering_action

    # ------------------------------------------------------------ the timeline layout
    @property
    def _layout_2(self) -> bool:
        """Hudi 1.x's timeline layout (``.hoodie/timeline``, LSM history); the one layout test."""
        return self.timeline_layout >= _LSM_LAYOUT

    @property
    def has_completion_times(self) -> bool:
        """Completed instants carry their completion time (layout 2); layout 1 has none."""
        return self._layout_2

    @property
    def waits_out_clock_skew(self) -> bool:
        """New instant times wait out the expected clock skew (Hudi 1.x's
        SkewAdjustingTimeGenerator, which comes with layout 2's completion-time order)."""
        return self._layout_2

    @property
    def archives_to_lsm(self) -> bool:
        """Archival writes an LSM tree under :attr:`history_folder` (layout 2); layout 1
        appends archive log files under :attr:`archive_folder`."""
        return self._layout_2

    @property
    def archival_rules(self) -> str:
        """Which archiver's rules choose the instants to archive: Hudi 1.x's
        TimelineArchiverV2 (``"1.x"``) with layout 2, else 0.14's (``"0.14"``);
        ``actions.archive_rules`` holds them."""
        return "1.x" if self._layout_2 else "0.14"

    @property
    def rolls_back_metadata_at_rollback_time(self) -> bool:
        """Rolling back an instant rolls the metadata table's delta commit of it back at the
        data rollback's own instant time (Hudi 1.x, layout 2); before, a delta commit records
        the rollback and a suffixed rollback undoes the target."""
        return self._layout_2

    @property
    def suffixes_metadata_service_instants(self) -> bool:
        """The metadata table's compaction and clean take the latest delta commit's time plus a
        suffix (``001``, ``002``; layout 1, HoodieTableMetadataUtil); layout 2 takes new
        instant times."""
        return not self._layout_2

    def history_path(self, meta_path: str) -> str:
        """Where a layout 2 table archives (``.hoodie/timeline/history`` by default)."""
        return Storage.join(meta_path, self.history_folder)

    def archived_timeline(self, storage: Storage, base_path: str) -> ArchivedTimeline:
        """The table's archived instants, from the LSM history or the archive log."""
        if self.archives_to_lsm:
            return ArchivedTimeline.load_lsm(storage, self.history_path(Storage.join(base_path, METAFOLDER)))
        return ArchivedTimeline.load(storage, base_path, self.archive_folder)

    # ------------------------------------------------------------ reading and writing
    @property
    def readable(self) -> bool:
        return self.version in READABLE_TABLE_VERSIONS

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
            if self.release.commits_in_avro:
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
