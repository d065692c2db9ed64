"""``HoodieMetadataRecord``: the one record type of Hudi's metadata table, as Hudi writes it
for each table version.

The schema (beside this module, without their docs: ``HoodieMetadataRecord.avsc``, Hudi 0.14's
fields, for table version 6; ``HoodieMetadataRecord_1x.avsc``, Hudi 1.x's, for 8 and 9)
carries every index's payload; the ``files`` partition fills ``key``, ``type``
and ``filesystemMetadata`` and leaves the others null. Blocks and HFiles carry the schema
with Hudi's five meta fields in front (HoodieAvroUtils.addMetadataFields), as real
metadata tables do, so Hudi and hudi-rs decode our records with the schema they expect.
"""

from __future__ import annotations

import io
import json
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

import fastavro

from airflow_hoodie.table.hudi_release import release_of
from airflow_hoodie.table.schema.meta_fields import META_COLUMNS

ALL_PARTITIONS_KEY = "__all_partitions__"
#: how the metadata table names the partition of a non-partitioned table
NON_PARTITIONED_NAME = "."
TYPE_PARTITION_LIST = 1
TYPE_FILE_LIST = 2


@lru_cache(maxsize=None)
def metadata_record_schema(table_version: int = 6) -> dict[str, Any]:
    """The writer schema of metadata records: meta fields, then HoodieMetadataRecord's, in
    the form the Hudi release of ``table_version`` writes (``HudiRelease.metadata_record_schema``:
    Hudi 1.x added fields, secondary index and typed column-stats values, that its readers
    expect in every block's schema)."""
    schema_file = release_of(table_version).metadata_record_schema
    text = resources.files(__package__).joinpath(schema_file).read_text("utf-8")
    schema = json.loads(text)
    meta = [{"name": name, "type": ["null", "string"], "doc": "", "default": None} for name in META_COLUMNS]
    return {**schema, "fields": meta + schema["fields"]}


def metadata_record_schema_json(table_version: int = 6) -> str:
    return json.dumps(metadata_record_schema(table_version), separators=(",", ":"))


@lru_cache(maxsize=None)
def _parsed(table_version: int) -> Any:
    return fastavro.parse_schema(metadata_record_schema(table_version))


def partition_key(partition_path: str) -> str:
    return partition_path or NON_PARTITIONED_NAME


def encode_record(record: Mapping[str, Any], table_version: int = 6) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _parsed(table_version), dict(record))
    return buf.getvalue()


def files_partition_records(
    files: Mapping[str, Mapping[str, int | None]], partitions: Mapping[str, bool] | None = None,
    table_version: int = 6,
) -> list[tuple[bytes, bytes]]:
    """(HFile key, Avro value) of the ``files`` records for a change, sorted by key.

    ``files``: partition -> file name -> size, or None for a deleted file (a tombstone).
    ``partitions``: partition -> deleted?, for the ``__all_partitions__`` record (Hudi
    lists every partition a commit touched there; HoodieTableMetadataUtil)."""
    records: dict[str, dict[str, Any]] = {}
    if partitions is not None:
        records[ALL_PARTITIONS_KEY] = {"key": "", "type": TYPE_PARTITION_LIST, "filesystemMetadata": {
            partition_key(p): {"size": 0, "isDeleted": bool(deleted)} for p, deleted in partitions.items()}}
    for part, names in files.items():
        records[partition_key(part)] = {"key": "", "type": TYPE_FILE_LIST, "filesystemMetadata": {
            name: {"size": int(size or 0), "isDeleted": size is None} for name, size in names.items()}}
    return sorted((key.encode("utf-8"), encode_record(rec, table_version)) for key, rec in records.items())
