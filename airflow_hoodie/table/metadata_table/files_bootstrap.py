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

import io
import json
from typing import TYPE_CHECKING, Any, Mapping

import fastavro

from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.metadata_table.files_listing import (
    ALL_PARTITIONS_KEY,
    FILES_PARTITION,
    NON_PARTITIONED_NAME,
    TYPE_FILE_LIST,
    TYPE_PARTITION_LIST,
    metadata_table_path,
)
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile
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

#: HoodieMetadataRecord as far as the files partition uses it (the readers resolve the
#: other index fields to their null defaults)
METADATA_RECORD_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "HoodieMetadataRecord", "namespace": "org.apache.hudi.avro.model",
    "doc": "A record saved within the Metadata Table",
    "fields": [
        {"name": "key", "type": "string"},
        {"name": "type", "type": "int", "doc": "Type of the metadata record"},
        {"name": "filesystemMetadata", "doc": "Contains information about partitions and files within the dataset",
         "type": ["null", {"type": "map", "values": {
             "type": "record", "name": "HoodieMetadataFileInfo",
             "fields": [{"name": "size", "type": "long", "doc": "Size of the file"},
                        {"name": "isDeleted", "type": "boolean", "doc": "True if this file has been deleted"}]}}],
         "default": None},
    ],
}

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


def _encode(record: Mapping[str, Any], parsed: Any) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed, dict(record))
    return buf.getvalue()


def files_partition_records(listing: Mapping[str, Mapping[str, int]]) -> list[tuple[bytes, bytes]]:
    """(key, Avro value) of every files-partition record for ``listing``, sorted by key."""
    parsed = fastavro.parse_schema(METADATA_RECORD_SCHEMA)
    names = {part: (part or NON_PARTITIONED_NAME) for part in listing}
    records = {ALL_PARTITIONS_KEY: {"key": "", "type": TYPE_PARTITION_LIST, "filesystemMetadata": {
        name: {"size": 0, "isDeleted": False} for name in names.values()}}}
    for part, files in listing.items():
        records[names[part]] = {"key": "", "type": TYPE_FILE_LIST, "filesystemMetadata": {
            name: {"size": int(size), "isDeleted": False} for name, size in files.items()}}
    return sorted((key.encode("utf-8"), _encode(rec, parsed)) for key, rec in records.items())


def initialize_files_partition(table: HoodieTable, listing: Mapping[str, Mapping[str, int]]) -> str:
    """Build ``.hoodie/metadata`` with ``listing`` (partition -> file name -> size) and list
    the ``files`` partition in the table config; returns the base HFile's path."""
    storage, mdt = table.storage, metadata_table_path(table.base_path)
    config = TableConfig({**_MDT_PROPERTIES, "hoodie.table.name": f"{table.table_name}_metadata"})
    config.save(storage, mdt, create=True)
    writer = TimelineWriter(storage, mdt)
    writer.create_requested(Instant(INIT_INSTANT, Action.DELTA_COMMIT, State.REQUESTED))
    writer.transition_to_inflight(Instant(INIT_INSTANT, Action.DELTA_COMMIT, State.REQUESTED))
    write_partition_metadata(storage, mdt, FILES_PARTITION, INIT_INSTANT)
    name = f"{FILE_GROUP}_{WRITE_TOKEN}_{INIT_INSTANT}.hfile"
    path = storage.join(mdt, FILES_PARTITION, name)
    schema = json.dumps(METADATA_RECORD_SCHEMA)
    data = write_hfile(files_partition_records(listing), schema)
    storage.write_bytes(path, data)
    stat = {"fileId": FILE_GROUP, "path": f"{FILES_PARTITION}/{name}", "prevCommit": "null",
            "numWrites": len(listing) + 1, "numDeletes": 0, "numUpdateWrites": 0, "numInserts": len(listing) + 1,
            "totalWriteBytes": len(data), "totalWriteErrors": 0, "partitionPath": FILES_PARTITION,
            "fileSizeInBytes": len(data)}
    metadata = {"partitionToWriteStats": {FILES_PARTITION: [stat]}, "compacted": False,
                "extraMetadata": {"schema": schema}, "operationType": "BULK_INSERT"}
    writer.complete(Instant(INIT_INSTANT, Action.DELTA_COMMIT, State.INFLIGHT),
                    json.dumps(metadata, indent=2).encode("utf-8"))
    table.update_config({METADATA_PARTITIONS: FILES_PARTITION})
    return path
