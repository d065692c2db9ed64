"""Initialize a metadata table whose ``files`` partition holds a given listing.

What Hudi's HoodieBackedTableMetadataWriter does when it builds the metadata table of an
existing table from the file system (table version 6): a MERGE_ON_READ table under
``.hoodie/metadata`` with HFile base files, one ``files-0000-0`` file group whose base
HFile, written by the delta commit ``00000000000000010``, holds the
``__all_partitions__`` record and one file list per partition; then the data table lists
``files`` in ``hoodie.table.metadata.partitions``. It is the first half of keeping the
metadata table in step with our writes (later changes would append HFile log blocks),
and builds the metadata tables the listing benchmark and tests read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, WriteStat
from airflow_hoodie.table.metadata_table.files_listing import FILES_PARTITION, metadata_table_path
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile
from airflow_hoodie.table.metadata_table.metadata_record import files_partition_records, metadata_record_schema_json
from airflow_hoodie.table.metadata_table.removal import METADATA_PARTITIONS
from airflow_hoodie.table.properties import TableConfig
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.timeline import TimelineWriter

if TYPE_CHECKING:  # the table imports this module
    from airflow_hoodie.table.hoodie_table import HoodieTable

#: Hudi's first metadata-table instant (SOLO_COMMIT_TIMESTAMP + "010")
INIT_INSTANT = "00000000000000010"
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


def initialize_files_partition(table: HoodieTable, listing: Mapping[str, Mapping[str, int]]) -> str:
    """Build ``.hoodie/metadata`` with ``listing`` (partition -> file name -> size) and list
    the ``files`` partition in the table config; returns the base HFile's path."""
    storage, mdt = table.storage, metadata_table_path(table.base_path)
    config = TableConfig({**_MDT_PROPERTIES, "hoodie.table.name": f"{table.table_name}_metadata"})
    metadata_table = type(table)(storage, mdt, config.save(storage, mdt, create=True))
    writer = TimelineWriter(storage, mdt)
    writer.create_requested(Instant(INIT_INSTANT, Action.DELTA_COMMIT, State.REQUESTED))
    writer.transition_to_inflight(Instant(INIT_INSTANT, Action.DELTA_COMMIT, State.REQUESTED))
    write_partition_metadata(storage, mdt, FILES_PARTITION, INIT_INSTANT)
    name = f"{FILE_GROUP}_{WRITE_TOKEN}_{INIT_INSTANT}.hfile"
    path = storage.join(mdt, FILES_PARTITION, name)
    schema = metadata_record_schema_json()
    data = write_hfile(files_partition_records(listing, {part: False for part in listing}), schema)
    storage.write_bytes(path, data)
    meta = CommitMetadata(operation_type="BULK_INSERT", extra_metadata={"schema": schema})
    meta.add_write_stat(FILES_PARTITION, WriteStat.new(
        fileId=FILE_GROUP, path=f"{FILES_PARTITION}/{name}", prevCommit="null", numWrites=len(listing) + 1,
        numInserts=len(listing) + 1, totalWriteBytes=len(data), partitionPath=FILES_PARTITION,
        fileSizeInBytes=len(data)))
    metadata_table.complete(Instant(INIT_INSTANT, Action.DELTA_COMMIT, State.INFLIGHT), meta)
    table.update_config({METADATA_PARTITIONS: FILES_PARTITION})
    return path
