"""Commit metadata JSON: every commit file real Hudi wrote survives parse -> write byte for byte."""

from __future__ import annotations

import json
import pathlib

import pytest

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata.commit_metadata import (
    CommitMetadata,
    ReplaceCommitMetadata,
    WriteStat,
    java_hash_map_order,
    java_string_hash,
    parse_commit_metadata,
    to_jackson_json,
)

REPLACE_DIR = "tables/cow/v6_simplekeygen_nonhivestyle_overwritetable/.hoodie"
SUFFIXES = (".commit", ".deltacommit", ".replacecommit", ".inflight")


def _commit_files(root: pathlib.Path) -> list[pathlib.Path]:
    files = [
        p
        for p in sorted((root / "tables").glob("*/*/.hoodie/*"))
        if p.name.endswith(SUFFIXES) and p.stat().st_size > 0
    ]
    assert len(files) >= 30
    return files


def _action(path: pathlib.Path) -> str | None:
    return "replacecommit" if ".replacecommit" in path.name else None


def test_every_conformance_commit_round_trips(conformance) -> None:
    for path in _commit_files(conformance):
        data = path.read_bytes()
        meta = parse_commit_metadata(data, _action(path))
        again = parse_commit_metadata(meta.to_json(), _action(path))
        assert again == meta, path
        assert set(json.loads(meta.to_json())) == set(json.loads(data)), path
        # byte for byte, and Java HashMap order reproduces Hudi's map order
        assert meta.to_json() == data, path
        assert meta.to_json(java_map_order=True) == data, path
        for stat_json, stat in zip(
            (s for lst in json.loads(data)["partitionToWriteStats"].values() for s in lst), meta.write_stats
        ):
            assert list(stat.to_dict()) == list(stat_json), path


def test_deltacommit_views(conformance) -> None:
    path = conformance / "tables/mor/v6_nonpartitioned_rollback/.hoodie/20250126060846931.deltacommit"
    meta = CommitMetadata.from_json(path.read_bytes())
    assert meta.operation_type == "UPSERT" and meta.compacted is False
    assert meta.partitions == [""]
    (stat,) = meta.write_stats
    assert stat.is_delta and stat.log_version == 3 and stat.base_file.endswith(".parquet")
    assert stat.prev_commit == "20250126040823628"
    assert meta.files_written() == [stat.path]
    assert meta.total_updates == 1 and meta.total_records_written == 1 and meta.total_inserts == 0
    assert json.loads(meta.schema)["name"] == "v6_nonpartitioned_rollback_record"


def test_replacecommit_parses(conformance) -> None:
    data = (conformance / REPLACE_DIR / "20240707001303088.replacecommit").read_bytes()
    meta = parse_commit_metadata(data)
    assert isinstance(meta, ReplaceCommitMetadata)
    assert meta.operation_type == "INSERT_OVERWRITE_TABLE"
    assert meta.replaced_file_ids() == {
        ("30", "d398fae1-c0e6-4098-8124-f55f7098bdba-0"),
        ("20", "88163884-fef0-4aab-865d-c72327a8a1d5-0"),
        ("10", "4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0"),
    }
    assert meta.file_ids() == {("30", "ebcb261d-62d3-4895-90ec-5b3c9622dff4-0")}
    assert ReplaceCommitMetadata.from_json(data) == meta
    # the inflight of a replacecommit is a plain commit body; parsing it as replace adds nothing
    inflight = (conformance / REPLACE_DIR / "20240707001303088.replacecommit.inflight").read_bytes()
    assert parse_commit_metadata(inflight, "replacecommit").to_json() == inflight


def test_archive_form_is_valid_avro(conformance) -> None:
    for path in _commit_files(conformance):
        meta = parse_commit_metadata(path.read_bytes(), _action(path))
        name = "HoodieReplaceCommitMetadata" if isinstance(meta, ReplaceCommitMetadata) else "HoodieCommitMetadata"
        record = meta.to_avro()
        back = avro_codec.deserialize(avro_codec.serialize(name, record), name)
        assert back == record
        restored = type(meta).from_avro(back)
        assert [s.file_id for s in restored.write_stats] == [s.file_id for s in meta.write_stats]
        assert restored.total_records_written == meta.total_records_written
        entry = avro_codec.default_record(
            "HoodieArchivedMetaEntry", commitTime="001", actionType="commit", actionState="COMPLETED"
        )
        entry["hoodieCommitMetadata" if name == "HoodieCommitMetadata" else "hoodieReplaceCommitMetadata"] = record
        assert avro_codec.deserialize(avro_codec.serialize("HoodieArchivedMetaEntry", entry)) == entry


def test_new_commit_looks_like_hudis() -> None:
    meta = CommitMetadata(operation_type="UPSERT", extra_metadata={"schema": "{}"})
    stat = WriteStat(file_id="f1-0", path="p1/f1-0_0-1-2_001.parquet", partition_path="p1", num_writes=3, num_inserts=3)
    meta.add_write_stat("p1", stat)
    meta.add_write_stat("p2", WriteStat.delta(file_id="f2-0", path="p2/.f2-0_001.log.1_0-1-2", partition_path="p2"))
    text = meta.to_json(java_map_order=True).decode()
    assert text.startswith('{\n  "partitionToWriteStats" : {\n')
    assert '"prevCommit" : "null"' in text and '"logFiles" : [ ]' in text and '"recordsStats" : {\n' in text
    assert not text.endswith("\n")
    parsed = CommitMetadata.from_json(text.encode())
    assert parsed == meta
    assert parsed.write_stats[1].is_delta and not parsed.write_stats[0].is_delta
    assert meta.total_inserts == 3


def test_empty_and_broken_json() -> None:
    assert CommitMetadata.from_json(b"").write_stats == []
    with pytest.raises(HoodieCorruptedDataError, match="not valid JSON"):
        CommitMetadata.from_json(b"{ not json")
    with pytest.raises(HoodieCorruptedDataError, match="JSON object"):
        CommitMetadata.from_json(b"[1, 2]")
    with pytest.raises(HoodieCorruptedDataError, match="UTF-8"):
        CommitMetadata.from_json(b"\xff\xfe")


def test_unknown_keys_survive() -> None:
    text = to_jackson_json(
        {"partitionToWriteStats": {"a": [{"fileId": "x", "futureStat": 5}]}, "compacted": True,
         "extraMetadata": {}, "operationType": "COMPACT", "futureKey": [1, 2]}
    )
    meta = CommitMetadata.from_json(text)
    assert meta.extra == {"futureKey": [1, 2]}
    assert meta.write_stats[0].extra == {"futureStat": 5}
    assert meta.to_json().decode() == text


def test_java_helpers() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    assert java_hash_map_order(["10", "20", "30"]) == ["30", "20", "10"]
    assert to_jackson_json({"a": 1.0, "b": 1e-4, "c": [], "d": {}}) == (
        '{\n  "a" : 1.0,\n  "b" : 1.0E-4,\n  "c" : [ ],\n  "d" : { }\n}'
    )
