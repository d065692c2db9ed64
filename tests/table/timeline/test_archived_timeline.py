"""Archived timeline read from log-format archive files."""

from __future__ import annotations

from airflow_hoodie.table.log.data_block import encode_avro_records
from airflow_hoodie.table.log.log_block import (
    BlockType,
    HeaderKey,
    LogBlock,
    serialize_block,
)
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.archived_timeline import ArchivedTimeline
from airflow_hoodie.table.timeline.instant import Action, Instant, State


def _entry(ts, action, state, **meta):
    return avro_codec.default_record(
        "HoodieArchivedMetaEntry", commitTime=ts, actionType=action, actionState=state, **meta)


def _archive_bytes(records, instant="20250101000000009"):
    schema = avro_codec.schema_json("HoodieArchivedMetaEntry")
    block = LogBlock(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: schema}, {},
                     encode_avro_records(records, schema))
    return serialize_block(block)


def test_read_archive(tmp_path):
    commit_meta = avro_codec.default_record("HoodieCommitMetadata", operationType="UPSERT")
    f1 = [
        _entry("20250101000000001", "commit", "REQUESTED"),
        _entry("20250101000000001", "commit", "INFLIGHT"),
        _entry("20250101000000001", "commit", "COMPLETED", hoodieCommitMetadata=commit_meta),
        _entry("20250101000000002", "clean", "COMPLETED"),
    ]
    f2 = [_entry("20250101000000003", "deltacommit", "COMPLETED"), _entry("bad", "commit", "COMPLETED")]
    arch = tmp_path / "t/.hoodie/archived"
    arch.mkdir(parents=True)
    (arch / ".commits_.archive.2_1-0-1").write_bytes(_archive_bytes(f2))
    (arch / ".commits_.archive.1_1-0-1").write_bytes(_archive_bytes(f1))
    (arch / "mergeArchivePlan").write_bytes(b"junk")
    storage, base = Storage.for_uri(str(tmp_path / "t"))
    at = ArchivedTimeline.load(storage, base)
    assert at.instants == [
        Instant("20250101000000001", Action.COMMIT, State.COMPLETED),
        Instant("20250101000000002", Action.CLEAN, State.COMPLETED),
        Instant("20250101000000003", Action.DELTA_COMMIT, State.COMPLETED),
    ]
    assert len(at.entries) == 5 and len(at.files) == 2 and not at.skipped
    assert at.metadata("20250101000000001")["operationType"] == "UPSERT"
    assert at.entry("20250101000000001", State.REQUESTED)["actionState"] == "REQUESTED"
    assert [i.timestamp for i in at.completed_commits()] == ["20250101000000001", "20250101000000003"]
    assert [i.timestamp for i in at.between("20250101000000001", None)] == ["20250101000000002", "20250101000000003"]
    assert at.as_timeline().completed_commits().timestamps == ["20250101000000001", "20250101000000003"]


def test_corrupt_archive_skipped(tmp_path):
    arch = tmp_path / "t/.hoodie/archived"
    arch.mkdir(parents=True)
    good = _archive_bytes([_entry("20250101000000001", "commit", "COMPLETED")])
    (arch / ".commits_.archive.1_1-0-1").write_bytes(good + b"#HUDI#garbage-garbage")
    storage, base = Storage.for_uri(str(tmp_path / "t"))
    at = ArchivedTimeline.load(storage, base)
    assert at.timestamps == ["20250101000000001"]


def test_no_archive(tmp_path, conformance):
    storage, base = Storage.for_uri(str(conformance / "tables/mor/v6_nonpartitioned_rollback"))
    assert len(ArchivedTimeline.load(storage, base)) == 0
