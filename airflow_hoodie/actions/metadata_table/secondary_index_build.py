"""Building a secondary index (``secondary_index_<name>``) of an existing Hudi 1.x table: every
entry ``escape(value)$escape(recordKey)`` of the latest merged file slices, sorted into the
file groups the index version maps it to, written as one metadata-table delta commit.

What Hudi's HoodieBackedTableMetadataWriter does when it initializes a secondary-index
partition (initializeFromFilesystem for SECONDARY_INDEX): it reads the record key and the
indexed column of every latest file slice (base file merged with its logs, so an updated
row is indexed by its latest value and a deleted one not at all), sizes the partition with
estimateFileGroupCount on the record-index sizing settings, and writes, at the metadata
table's next initialization instant (``00000000000000000``, ``…001``, …), an empty
delete-block log for every file group and one base HFile for each file group that holds
entries (the real v9 tables' secondary indexes have no base file in their empty groups).
Records are ``HoodieMetadataRecord{key "", type 7, SecondaryIndexMetadata{isDeleted false}}``
under their HFile key. Index version V1 (table version 8) hashes the whole key to its file
group, V2 (table version 9) the escaped value with its ``$``.

This module writes the partition's files and its delta commit; listing the partition in
``hoodie.table.metadata.partitions`` is the caller's (the indexer moves it there from
``….inflight`` when its ``indexing`` instant completes). Keeping an index true through later
writes is the write path's business, not this module's.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.metadata_table.files_bootstrap import (
    partition_init_instant,
    write_empty_log,
)
from airflow_hoodie.actions.metadata_table.record_index_writer import file_group_count
from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError
from airflow_hoodie.settings.metadata_table import RecordIndexSizing
from airflow_hoodie.table.file_group.file_naming import make_write_token
from airflow_hoodie.table.file_group.file_slice_reader import (
    SliceReadOptions,
    read_file_slice,
)
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.merge_config import MergeConfig
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, WriteStat
from airflow_hoodie.table.metadata_table.files_listing import metadata_table_path
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile_arrays
from airflow_hoodie.table.metadata_table.metadata_record import (
    metadata_record_schema_json,
)
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS,
    listed_in,
)
from airflow_hoodie.table.metadata_table.secondary_index import (
    SecondaryIndexDefinition,
    entry_file_groups,
    file_group_id,
    index_values,
    secondary_index_key,
    secondary_index_cells,
)
from airflow_hoodie.table.parallel_map import parallel_map
from airflow_hoodie.table.schema.meta_fields import IS_DELETED, RECORD_KEY
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline

if TYPE_CHECKING:
    from airflow_hoodie.actions.executor import Executor
    from airflow_hoodie.table.file_group.file_group import FileSlice
    from airflow_hoodie.table.hoodie_table import HoodieTable


def _entry_keys(rows: pa.Table, column: str) -> list[str]:
    """The index keys of a slice's rows (soft-deleted ones, ``_hoodie_is_deleted``, left out
    as a snapshot reader leaves them out)."""
    if IS_DELETED in rows.column_names:
        rows = rows.filter(pc.invert(pc.fill_null(rows.column(IS_DELETED), False)))
    values = index_values(rows.column(column))
    return [secondary_index_key(v, k) for v, k in zip(values, rows.column(RECORD_KEY).to_pylist())]


def _slice_options(table: HoodieTable, timeline: Timeline, column: str) -> SliceReadOptions:
    """How a snapshot reader reads each latest slice (committed blocks only, merged), keeping
    the record key and the indexed column."""
    completed = timeline.completed_commits()
    last = completed.last()
    return SliceReadOptions(
        merge_config=MergeConfig.from_properties(table.config),
        columns=[RECORD_KEY, IS_DELETED, column],
        as_of=last.timestamp if last is not None else None,
        valid_instants=frozenset(i.timestamp for i in completed),
        timeline_start=timeline.first_non_savepoint_commit(),
        inflight_instants=frozenset(i.timestamp for i in timeline.filter(actions=Action.WRITE).pending()),
        base_only=not table.is_mor)


def _slice_entry_keys(base_uri: str, storage_options: Mapping[str, Any], opts: SliceReadOptions, column: str,
                      fs: FileSlice) -> list[str]:
    """The entry keys of one file slice (an executor task: it opens its own storage)."""
    storage, _ = Storage.for_uri(base_uri, dict(storage_options) or None)
    rows = read_file_slice(storage, fs, opts)
    if rows.num_rows == 0 or not rows.num_columns:
        return []
    if column not in rows.column_names:
        raise HoodieConfigError(f"The secondary index column {column!r} is not a column of {base_uri}.")
    return _entry_keys(rows, column)


def table_entry_keys(table: HoodieTable, column: str, executor: Executor | None = None) -> list[str]:
    """Every live entry key of an index on ``column``: one per row of the latest merged file
    slices, each slice merged through its logs in a task of ``executor`` (Spark in the job;
    None: a few threads here)."""
    if not table.config.populate_meta_fields:
        raise HoodieNotSupportedError(
            f"{table.base_uri} does not populate Hudi's meta fields (hoodie.populate.meta.fields=false), so its "
            "files hold no record keys to index. Build this secondary index with Hudi itself.")
    timeline = table.reload_timeline()
    task = partial(_slice_entry_keys, table.base_uri, dict(getattr(table, "storage_options", None) or {}),
                   _slice_options(table, timeline, column), column)
    slices = table.file_system_view(timeline).latest_merged_file_slices()
    per_slice = executor.map(task, slices) if executor is not None else \
        parallel_map(task, slices, 4, "hoodie-si-build")
    return [key for keys in per_slice for key in keys]


def _remove_unlisted_build(mdt: HoodieTable, partition: str) -> None:
    """A build that died before its partition was listed left the partition's folder and its
    delta commit (completed with only this partition's files, or pending with files of its
    time in the folder): both go before building again. No reader takes an unlisted
    partition, and we hold the table lock."""
    storage = mdt.storage
    folder = storage.join(mdt.base_path, partition)
    if not storage.exists(folder):
        return
    names = [st.name for st in storage.list_dir(folder)]
    timeline = mdt.reload_timeline()
    writer = mdt.timeline_writer()
    for inst in timeline.instants:
        if inst.action != Action.DELTA_COMMIT:
            continue
        if inst.is_completed:
            mine = set(timeline.commit_metadata(inst).partition_to_write_stats) == {partition}
        else:
            mine = any(f"_{inst.timestamp}." in name for name in names)
        if mine:
            writer.delete_instant_files(inst.timestamp, Action.DELTA_COMMIT)
    storage.delete_dir(folder)


def _write_group(mdt: HoodieTable, partition: str, index: int, keys: list[str], instant: str,
                 meta: CommitMetadata) -> None:
    """File group ``index``: its empty log, then its base HFile when it holds entries."""
    file_id = file_group_id(partition, index)
    write_empty_log(mdt, partition, file_id, instant)
    if not keys:
        return
    name = f"{file_id}_{make_write_token(index, 0, 0)}_{instant}.hfile"
    schema = metadata_record_schema_json(mdt.format.version)
    unique = pa.array(list(dict.fromkeys(keys)), pa.string())
    rows, values = secondary_index_cells(unique, pa.repeat(pa.scalar(False), len(unique)),
                                         mdt.format.version)
    data = write_hfile_arrays(rows, values, schema)
    mdt.storage.write_bytes(mdt.storage.join(mdt.base_path, partition, name), data)
    meta.add_write_stat(partition, WriteStat.new(
        fileId=file_id, path=f"{partition}/{name}", prevCommit="null", numWrites=len(keys), numInserts=len(keys),
        totalWriteBytes=len(data), partitionPath=partition, fileSizeInBytes=len(data)))


def build_secondary_index(table: HoodieTable, definition: SecondaryIndexDefinition, sizing: RecordIndexSizing,
                          list_partition: bool = False, executor: Executor | None = None) -> str:
    """Build the partition of ``definition`` from the table's latest merged file slices as
    one delta commit of its metadata table; returns that commit's instant. Runs under the
    table lock. ``list_partition``: also list it in ``hoodie.table.metadata.partitions``
    (the indexer lists it itself when its instant completes). ``executor``: where the
    slices are read (the HFiles are written here, as Hudi's initialization commits them once)."""
    if not table.format.release.records_index_definitions:
        raise HoodieNotSupportedError(
            f"A secondary index on {table.base_uri} (table version {table.format.version}): Hudi 0.x tables have "
            "none. Secondary indexes exist from table version 8 (Hudi 1.0); upgrade the table with Hudi first.")
    partition = definition.name
    keys = table_entry_keys(table, definition.source_field, executor)
    count = file_group_count(len(keys), sizing.min_file_groups, sizing.max_file_groups, sizing.max_file_group_bytes,
                             sizing.growth_factor)
    groups: list[list[str]] = [[] for _ in range(count)]
    for key, index in zip(keys, entry_file_groups(pa.array(keys, pa.string()), count, definition.version).tolist()):
        groups[index].append(key)
    mdt = table.metadata_table()
    _remove_unlisted_build(mdt, partition)
    instant = partition_init_instant(table, mdt.reload_timeline())
    writer = mdt.timeline_writer()
    writer.create_requested(Instant(instant, Action.DELTA_COMMIT, State.REQUESTED))
    writer.transition_to_inflight(Instant(instant, Action.DELTA_COMMIT, State.REQUESTED))
    write_partition_metadata(table.storage, metadata_table_path(table.base_path), partition, instant)
    meta = CommitMetadata(operation_type="BULK_INSERT_PREPPED",
                          extra_metadata={"schema": metadata_record_schema_json(mdt.format.version)})
    for index, group in enumerate(groups):
        _write_group(mdt, partition, index, group, instant, meta)
    commit.complete(mdt, Instant(instant, Action.DELTA_COMMIT, State.INFLIGHT), meta)
    if list_partition:
        table.update_config({METADATA_PARTITIONS: ",".join(sorted(set(listed_in(table.config)) | {partition}))})
    return instant


__all__ = ["build_secondary_index", "table_entry_keys"]
