"""Keeping a table's metadata table true, one data instant at a time: the delta commit that
mirrors it into ``files``, ``record_index``, the secondary indexes and the statistics partitions.

Hudi's HoodieBackedTableMetadataWriter, for table versions 6, 8 and 9: every data-table
instant is mirrored by a metadata-table delta commit *with the same instant time*, completed
before the data instant (through the one commit path, ``actions.commit.complete``). First
the metadata table's own services run (:mod:`metadata_compaction`: compaction, clean,
archival). Then the delta commit appends one HFile data block (HoodieMetadataRecords keyed
by partition, plus ``__all_partitions__``) to a new log version of the ``files-0000-0`` file
group, as Hudi's Spark writer does on every commit; in the same delta commit, the instant's
record-index records (:mod:`record_index_writer`), its secondary-index records
(:mod:`secondary_index_writer`), the column_stats, partition_stats and
bloom_filters records of the files it wrote or deleted (:mod:`stats_index_writer`) and those of
the expression indexes (:mod:`expression_index_writer`). The
record schema and log layout are the table version's (Hudi 1.x's records carry more fields;
its log files are named by the writing instant). Readers take such a block only once the
data instant completed too (files_listing.valid_data_instants), so a data instant that
fails after this step leaves nothing visible, and a retry writes the same records again
(merging them is idempotent: a file keeps its largest size, a tombstone removes it).
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.metadata_table.expression_index_writer import (
    add_expression_index_changes,
)
from airflow_hoodie.actions.metadata_table.metadata_compaction import run_table_services
from airflow_hoodie.actions.metadata_table.record_index_writer import (
    RecordIndexChange,
    append_record_index,
)
from airflow_hoodie.actions.metadata_table.secondary_index_writer import (
    SecondaryIndexChange,
    append_secondary_index,
)
from airflow_hoodie.actions.metadata_table.stats_index_writer import (
    append_stats,
    stats_for_change,
)
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.settings.metadata_table import MetadataTableSettings
from airflow_hoodie.table.file_group.file_group import FileSlice
from airflow_hoodie.table.file_group.file_naming import make_write_token
from airflow_hoodie.table.log.log_block import BlockType, HeaderKey, LogBlock
from airflow_hoodie.table.log.log_writer import LogWriter
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, WriteStat
from airflow_hoodie.table.metadata_table.damage import refuse_damaged_slice
from airflow_hoodie.table.metadata_table.files_change import FilesChange
from airflow_hoodie.table.metadata_table.files_listing import FILES_PARTITION
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile
from airflow_hoodie.table.metadata_table.metadata_record import (
    files_partition_records,
    metadata_record_schema_json,
)
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline
from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable

#: the file group Hudi keeps the files partition in (one, for every table size)
FILES_FILE_GROUP = "files-0000-0"


def _files_slice(mdt: HoodieTable) -> FileSlice:
    """The latest slice of the ``files-0000-0`` file group."""
    slices = [s for s in mdt.file_system_view().latest_file_slices(FILES_PARTITION) if s.file_id == FILES_FILE_GROUP]
    if not slices:
        raise HoodieNotSupportedError(
            f"The metadata table of {mdt.base_uri.rsplit('/.hoodie', 1)[0]} has no {FILES_FILE_GROUP} file group in its "
            "files partition; airflow-hoodie keeps only Hudi's one-file-group layout true. Run with "
            "hoodie.metadata.enable=false to drop the metadata table (a Hudi writer rebuilds it).")
    return slices[0]


def _begin(writer: TimelineWriter, timeline: Timeline, instant_time: str) -> bool:
    """Requested and inflight for our delta commit; False when it completed already (a
    retried data commit whose metadata-table step ran before)."""
    existing = timeline.get(instant_time, Action.DELTA_COMMIT)
    if existing is not None and existing.is_completed:
        return False
    if existing is None:
        writer.create_requested(Instant(instant_time, Action.DELTA_COMMIT, State.REQUESTED))
    if existing is None or existing.state == State.REQUESTED:
        writer.transition_to_inflight(Instant(instant_time, Action.DELTA_COMMIT, State.REQUESTED))
    return True


def update_files_partition(table: HoodieTable, instant_time: str, change: FilesChange,
                           settings: MetadataTableSettings,
                           record_index: RecordIndexChange | None = None,
                           secondary_index: SecondaryIndexChange | None = None) -> str | None:
    """Mirror ``change`` (what data instant ``instant_time`` did to the file listing) into the
    metadata table as its delta commit ``instant_time``; returns the log file written, or
    None when there was nothing to write or it was written before. ``record_index``: the
    instant's record-index records, appended in the same delta commit (:mod:`record_index_writer`);
    ``secondary_index``: its secondary-index records, likewise (:mod:`secondary_index_writer`);
    ``settings``: the change's, which the metadata table's services follow."""
    mdt = table.metadata_table()
    services = run_table_services(table, mdt, settings)  # Hudi's writer runs them before its next delta commit
    writer = mdt.timeline_writer()
    # the services read the timeline (each one that acted read it again): loaded anew only
    # when the archiver moved instants out of it (on an object store, a LIST and a HEAD saved)
    timeline = mdt.reload_timeline() if services.archived else mdt.timeline
    if not _begin(writer, timeline, instant_time):
        return None
    version = mdt.format.version
    schema = metadata_record_schema_json(version)
    block = LogBlock(BlockType.HFILE_DATA, {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema},
                     content=write_hfile(files_partition_records(change.files, change.partitions, version), schema))
    files_slice = _files_slice(mdt)
    refuse_damaged_slice(mdt.storage, files_slice, FILES_PARTITION)  # never build on a damaged listing
    base_instant = files_slice.base_instant
    # a new log version per delta commit, with this writer's own token (Hudi's Spark writer
    # rolls over the same way; a store without append gets no special case); the slice's log
    # names give the next version without listing the partition again
    token = make_write_token(secrets.randbelow(1 << 16), secrets.randbelow(1 << 16), 0)
    log = LogWriter.for_instant(mdt.storage, mdt.storage.join(mdt.base_path, FILES_PARTITION), FILES_FILE_GROUP,
                                base_instant, instant_time, token, mdt.format, max_file_size=0,
                                known_log_files=[lf.file_name for lf in files_slice.log_files])
    try:
        (result,) = log.append([block])
    finally:
        log.close()
    name = result.log_path.rsplit("/", 1)[-1]
    meta = CommitMetadata(operation_type="UPSERT_PREPPED", extra_metadata={"schema": schema})
    meta.add_write_stat(FILES_PARTITION, WriteStat.new(
        fileId=FILES_FILE_GROUP, path=f"{FILES_PARTITION}/{name}", prevCommit=base_instant,
        numWrites=len(change.files) + 1, numUpdateWrites=len(change.files) + 1, totalWriteBytes=result.size,
        # the block went to the end of the file: its end is the file's size (no HEAD to ask it)
        partitionPath=FILES_PARTITION, totalLogBlocks=1, fileSizeInBytes=result.offset + result.size,
        logVersion=result.version, logOffset=result.offset, baseFile="", logFiles=[name]))
    if record_index:
        append_record_index(mdt, instant_time, record_index, meta)
    if secondary_index:
        append_secondary_index(mdt, instant_time, secondary_index, meta)
    # column_stats, partition_stats and bloom_filters of the files this instant wrote or
    # deleted, and the expression indexes' records of them, in the same delta commit
    # (:mod:`stats_index_writer`, :mod:`expression_index_writer`)
    batch = stats_for_change(table, instant_time, change, settings)
    add_expression_index_changes(table, instant_time, change, settings, batch)
    append_stats(mdt, instant_time, batch, meta)
    commit.complete(mdt, Instant(instant_time, Action.DELTA_COMMIT, State.INFLIGHT), meta)
    return result.log_path
