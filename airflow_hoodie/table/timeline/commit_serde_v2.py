"""Commit metadata of table versions 8 and 9 (Hudi 1.x ``CommitMetadataSerDeV2``).

Hudi 1.x writes a completed commit, deltacommit or replacecommit as a one-record Avro
container of ``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata`` (the 1.x schemas in
:mod:`commit_schemas_v2`), where 0.x wrote Jackson JSON. Map entries are written in the
model's dict order, so a file decoded here and written back keeps Hudi's entry order and,
given the same sync marker, the same bytes.
"""

from __future__ import annotations

import io
import json
import os
from functools import lru_cache
from typing import Any, Mapping

import fastavro
from fastavro.schema import parse_schema

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieSchemaError
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, ReplaceCommitMetadata, WriteStat
from airflow_hoodie.table.timeline.commit_schemas_v2 import COMMIT_METADATA_V2, REPLACE_COMMIT_METADATA_V2


@lru_cache(maxsize=None)
def _schema(replace: bool) -> tuple[str, Any, tuple[str, ...]]:
    """(embedded text, fastavro schema, HoodieWriteStat field names) of the 1.x record."""
    text = REPLACE_COMMIT_METADATA_V2 if replace else COMMIT_METADATA_V2
    parsed = json.loads(text)
    stats = next(f for f in parsed["fields"] if f["name"] == "partitionToWriteStats")
    stat_fields = tuple(f["name"] for f in stats["type"][1]["values"]["items"]["fields"])
    return text, parse_schema(parsed), stat_fields


def _stat_record(stat: WriteStat, fields: tuple[str, ...]) -> dict[str, Any]:
    values = stat.to_dict()
    return {name: values.get(name) for name in fields}


def to_record(metadata: CommitMetadata) -> dict[str, Any]:
    """The 1.x Avro record of ``metadata`` (unlike the 0.x archive form, nothing is blanked)."""
    replace = isinstance(metadata, ReplaceCommitMetadata)
    _, _, fields = _schema(replace)
    record: dict[str, Any] = {
        "partitionToWriteStats": {
            p: [_stat_record(s, fields) for s in stats]
            for p, stats in metadata.partition_to_write_stats.items()
            if p is not None
        },
        "compacted": bool(metadata.compacted),
        "extraMetadata": dict(metadata.extra_metadata),
        "version": None,
        "operationType": metadata.operation_type,
    }
    if replace:
        record["partitionToReplaceFileIds"] = {
            p: list(ids) for p, ids in metadata.partition_to_replace_file_ids.items()  # type: ignore[attr-defined]
        }
    return record


def from_record(record: Mapping[str, Any], replace: bool = False) -> CommitMetadata:
    """Our model of a decoded 1.x record; stats keep every non-null field (delta stats stay delta)."""
    model = ReplaceCommitMetadata if replace else CommitMetadata
    meta = model()
    meta.partition_to_write_stats = {
        p: [WriteStat.from_dict({k: v for k, v in s.items() if v is not None}) for s in stats or []]
        for p, stats in (record.get("partitionToWriteStats") or {}).items()
    }
    meta.extra_metadata = dict(record.get("extraMetadata") or {})
    meta.operation_type = record.get("operationType")
    meta.compacted = bool(record.get("compacted")) or meta.operation_type == "COMPACT"
    if replace:
        meta.partition_to_replace_file_ids = {  # type: ignore[attr-defined]
            p: list(ids or []) for p, ids in (record.get("partitionToReplaceFileIds") or {}).items()
        }
    return meta


def serialize(metadata: CommitMetadata, sync_marker: bytes | None = None) -> bytes:
    """One-record Avro container as Hudi 1.x's ``CommitMetadataSerDeV2`` writes it."""
    text, schema, _ = _schema(isinstance(metadata, ReplaceCommitMetadata))
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, schema, to_record(metadata))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise HoodieSchemaError(
            f"Commit metadata does not fit Hudi 1.x's HoodieCommitMetadata schema: {exc}. "
            "Check the write stats' field types."
        ) from exc
    body = buf.getvalue()
    sync = sync_marker if sync_marker is not None else os.urandom(16)
    if len(sync) != 16:
        raise ValueError("an Avro sync marker is 16 bytes")
    z = avro_codec.zigzag_long
    header = (avro_codec.MAGIC + z(1) + avro_codec.avro_bytes(b"avro.schema")
              + avro_codec.avro_bytes(text.encode("utf-8")) + z(0) + sync)
    return header + z(1) + z(len(body)) + body + sync


def deserialize(data: bytes, replace: bool = False) -> CommitMetadata:
    """Decode a 1.x completed commit file (its own embedded schema is the writer schema)."""
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except Exception as exc:  # fastavro raises many types on garbage input
        raise HoodieCorruptedDataError(f"Not a Hudi 1.x commit metadata file: {type(exc).__name__}: {exc}") from exc
    if len(records) != 1:
        raise HoodieCorruptedDataError(f"expected one commit metadata record, found {len(records)}")
    return from_record(records[0], replace)
