"""Initialize a metadata table whose ``files`` partition holds a given listing, and the
initialization instants of the partitions built after it.

What Hudi's HoodieBackedTableMetadataWriter does when it builds the metadata table of an
existing table from the file system: a MERGE_ON_READ table under ``.hoodie/metadata``, of
the data table's version, with HFile base files, one ``files-0000-0`` file group whose base
HFile, written by the delta commit ``00000000000000010`` (version 6; ``00000000000000000``
with an empty delete-block log on versions 8 and 9), holds the
``__all_partitions__`` record and one file list per partition; then the data table lists
``files`` in ``hoodie.table.metadata.partitions``. Every later data instant appends to it
(:mod:`metadata_writer`); a write with the metadata table enabled builds it when missing
(:func:`maintenance.ensure_files_partition`), and the listing benchmark and tests build the
metadata tables they read with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from airflow_hoodie.actions import commit
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.log.delete_block import delete_block
from airflow_hoodie.table.log.log_writer import LogWriter
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, WriteStat
from airflow_hoodie.table.metadata_table.files_listing import (
    FILES_PARTITION,
    metadata_table_path,
)
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile
from airflow_hoodie.table.metadata_table.metadata_record import (
    files_partition_records,
    metadata_record_schema_json,
)
from airflow_hoodie.table.metadata_table.partitions import METADATA_PARTITIONS
from airflow_hoodie.table.properties import TableConfig
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable
    from airflow_hoodie.table.table_format import TableFormat

#: Hudi's first metadata-table instant (SOLO_COMMIT_TIMESTAMP + "010") on table version 6
INIT_INSTANT = "00000000000000010"
#: Hudi 1.x (versions 8, 9) counts its initialization instants from SOLO_COMMIT_TIMESTAMP + "000"
INIT_PREFIX = "00000000000000"
#: the operation suffix of a partition built on an existing metadata table (v6 writer)
INIT_SUFFIX = 10
FILE_GROUP = "files-0000-0"
WRITE_TOKEN = "0-0-0"

_MDT_PROPERTIES = {
    "hoodie.table.type": "MERGE_ON_READ",
    "hoodie.table.version": "6",
    "hoodie.table.base.file.format": "HFILE",
    "hoodie.archivelog.folder": "archived",
    "hoodie.timeline.layout.version": "1",
    "hoodie.populate.meta.fields": "false",
    "hoodie.table.recordkey.fields": "key",
    "hoodie.table.keygenerator.class": "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator",
    "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
    "hoodie.datasource.write.drop.partition.columns": "false",
}

#: what Hudi 1.0/1.1 writes instead into a metadata table's hoodie.properties (the version
#: itself and hoodie.table.initial.version are the data table's)
_MDT_PROPERTIES_1X = {
    "hoodie.table.type": "MERGE_ON_READ",
    "hoodie.table.base.file.format": "HFILE",
    "hoodie.archivelog.folder": "history",
    "hoodie.timeline.layout.version": "2",
    "hoodie.timeline.path": "timeline",
    "hoodie.timeline.history.path": "history",
    "hoodie.populate.meta.fields": "false",
    "hoodie.table.recordkey.fields": "key",
    "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
    "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
    "hoodie.datasource.write.drop.partition.columns": "false",
    "hoodie.record.merge.mode": "CUSTOM",
    "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
}


def metadata_table_properties(table: HoodieTable) -> dict[str, str]:
    """hoodie.properties of a new metadata table of ``table``, as the Hudi release of the
    data table's version writes it."""
    if not table.format.release.initializes_metadata_as_1x:
        return {**_MDT_PROPERTIES, "hoodie.table.name": f"{table.table_name}_metadata"}
    version = str(table.format.version)
    return {**_MDT_PROPERTIES_1X, "hoodie.table.version": version, "hoodie.table.initial.version": version,
            "hoodie.table.name": f"{table.table_name}_metadata"}


def initialization_instant(fmt: TableFormat, taken: set[str]) -> str:
    """The instant initializing a metadata-table partition on a table of this version: on
    Hudi 1.x the first of ``00000000000000000``, ``…001``, … the metadata table has not
    used (several partitions built together take consecutive ones); version 6 builds
    ``files`` at ``00000000000000010`` (later partitions: :func:`partition_init_instant`)."""
    if not fmt.release.initializes_metadata_as_1x:
        return INIT_INSTANT
    offset = 0
    while f"{INIT_PREFIX}{offset:03d}" in taken:
        offset += 1
    return f"{INIT_PREFIX}{offset:03d}"


def partition_init_instant(table: HoodieTable, mdt_timeline: Timeline) -> str:
    """The instant building a partition on an existing metadata table (the record index, a
    statistics partition). createIndexInitTimestamp of the v6 writer: the latest completed data instant (or
    Hudi's solo-commit time) + ``010``, ``011``, ... the first the metadata table lacks;
    Hudi 1.x counts ``…000``, ``…001``, ... instead (:func:`initialization_instant`)."""
    if table.format.release.initializes_metadata_as_1x:
        return initialization_instant(table.format, {i.timestamp for i in mdt_timeline.instants})
    last = table.reload_timeline().completed().last()
    base = last.timestamp if last is not None else "00000000000000"
    taken = {i.timestamp for i in mdt_timeline.instants}
    offset = 0
    while f"{base}{INIT_SUFFIX + offset:03d}" in taken:
        offset += 1
    return f"{base}{INIT_SUFFIX + offset:03d}"


def write_empty_log(mdt: HoodieTable, partition: str, file_id: str, instant: str) -> None:
    """Hudi 1.x opens every file group it initializes with an empty delete block at the
    initialization instant (HoodieBackedTableMetadataWriter.initializeFileGroups), so the
    group has a file slice even before it holds a record."""
    if not mdt.format.release.initializes_metadata_as_1x:
        return
    log = LogWriter.for_instant(mdt.storage, mdt.storage.join(mdt.base_path, partition), file_id, None, instant,
                                WRITE_TOKEN, mdt.format, max_file_size=0)
    try:
        log.append([delete_block([], instant)])
    finally:
        log.close()


def initialize_files_partition(table: HoodieTable, listing: Mapping[str, Mapping[str, int]]) -> str:
    """Build ``.hoodie/metadata`` with ``listing`` (partition -> file name -> size) and list
    the ``files`` partition in the table config; returns the base HFile's path. The new
    metadata table's instants wait out the data change's expected clock skew (Hudi 1.x)."""
    storage, mdt = table.storage, metadata_table_path(table.base_path)
    config = TableConfig(metadata_table_properties(table))
    metadata_table = type(table)(storage, mdt, config.save(storage, mdt, create=True),
                                 clock_skew_ms=table.expected_clock_skew_ms())
    version = metadata_table.format.version
    init = initialization_instant(metadata_table.format, set())
    writer = metadata_table.timeline_writer()
    writer.create_requested(Instant(init, Action.DELTA_COMMIT, State.REQUESTED))
    writer.transition_to_inflight(Instant(init, Action.DELTA_COMMIT, State.REQUESTED))
    write_partition_metadata(storage, mdt, FILES_PARTITION, init)
    write_empty_log(metadata_table, FILES_PARTITION, FILE_GROUP, init)
    name = f"{FILE_GROUP}_{WRITE_TOKEN}_{init}.hfile"
    path = storage.join(mdt, FILES_PARTITION, name)
    schema = metadata_record_schema_json(version)
    data = write_hfile(files_partition_records(listing, {part: False for part in listing}, version), schema)
    storage.write_bytes(path, data)
    meta = CommitMetadata(operation_type="BULK_INSERT", extra_metadata={"schema": schema})
    meta.add_write_stat(FILES_PARTITION, WriteStat.new(
        fileId=FILE_GROUP, path=f"{FILES_PARTITION}/{name}", prevCommit="null", numWrites=len(listing) + 1,
        numInserts=len(listing) + 1, totalWriteBytes=len(data), partitionPath=FILES_PARTITION,
        fileSizeInBytes=len(data)))
    commit.complete(metadata_table, Instant(init, Action.DELTA_COMMIT, State.INFLIGHT), meta)
    table.update_config({METADATA_PARTITIONS: FILES_PARTITION})
    return path
