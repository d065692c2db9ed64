"""The LSM timeline writer against Hudi 1.x's definitions (LSMTimelineWriter,
HoodieLSMTimelineManifest, LSMTimeline, HoodieLSMTimelineInstant.avsc) and our reader."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.archived_timeline import ArchivedTimeline
from airflow_hoodie.table.timeline.lsm_timeline import LsmRecord, read_records, snapshot_files
from airflow_hoodie.table.timeline.lsm_timeline_writer import (
    LsmSettings,
    LsmTimelineWriter,
    ManifestEntry,
    compacted_file_name,
    manifest_json,
)


def _records(first: int, count: int) -> list[LsmRecord]:
    out = []
    for i in range(first, first + count):
        ts = f"20240101000000{i:03d}"
        out.append(LsmRecord(ts, f"20240101000001{i:03d}", "commit", f"meta-{i}".encode(), None))
    return out


def _writer(tmp_path: pathlib.Path, batch: int = 10, **kw) -> LsmTimelineWriter:
    return LsmTimelineWriter(Storage.local(), str(tmp_path / "history"), LsmSettings(compaction_batch_size=batch, **kw))


def _names(folder: pathlib.Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_batch_becomes_a_level_zero_file_named_by_its_instant_range(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path)
    recs = _records(0, 3)
    name = w.write(recs)
    assert name == "20240101000000000_20240101000000002_0.parquet"
    assert _names(tmp_path / "history") == [name, "_version_", "manifest_1"]
    assert read_records(w.storage, w.folder) == recs


def test_parquet_schema_is_hoodie_lsm_timeline_instant(tmp_path: pathlib.Path) -> None:
    """Column names, types and repetition as parquet-avro derives them from the avsc:
    nullable unions -> optional, string -> UTF8 binary, bytes -> binary, int -> required int32."""
    w = _writer(tmp_path)
    name = w.write([LsmRecord("20240101000000000", "20240101000000500", "clean", b"\x00meta", b"plan")])
    pf = pq.ParquetFile(tmp_path / "history" / name)
    cols = {c.name: c for c in pf.schema}
    assert list(cols) == ["instantTime", "completionTime", "action", "metadata", "plan", "version"]
    for c in ("instantTime", "completionTime", "action"):
        assert cols[c].physical_type == "BYTE_ARRAY" and str(cols[c].logical_type) == "String"
        assert cols[c].max_definition_level == 1  # optional
    for c in ("metadata", "plan"):
        assert cols[c].physical_type == "BYTE_ARRAY" and str(cols[c].logical_type) == "None"
        assert cols[c].max_definition_level == 1
    assert cols["version"].physical_type == "INT32" and cols["version"].max_definition_level == 0  # required
    footer = pf.metadata.metadata
    avro = json.loads(footer[b"parquet.avro.schema"])
    assert (avro["name"], avro["namespace"]) == ("HoodieLSMTimelineInstant", "org.apache.hudi.avro.model")
    assert [(f["name"], f["type"]) for f in avro["fields"]] == [
        ("instantTime", ["null", "string"]), ("completionTime", ["null", "string"]), ("action", ["null", "string"]),
        ("metadata", ["null", "bytes"]), ("plan", ["null", "bytes"]), ("version", "int")]
    assert footer[b"writer.model.name"] == b"avro"
    assert b"ARROW:schema" not in footer
    assert pf.metadata.row_group(0).column(0).compression == "GZIP"  # hoodie.parquet.compression.codec
    row = pf.read().to_pylist()[0]
    assert row == {"instantTime": "20240101000000000", "completionTime": "20240101000000500", "action": "clean",
                   "metadata": b"\x00meta", "plan": b"plan", "version": 1}


def test_manifest_is_jacksons_pretty_json_of_files_with_their_lengths(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path)
    first = w.write(_records(0, 2))
    second = w.write(_records(2, 2))
    folder = tmp_path / "history"
    len1, len2 = (folder / first).stat().st_size, (folder / second).stat().st_size
    expected = (
        '{\n  "files" : [ {\n    "fileName" : "%s",\n    "fileLen" : %d\n  }, {\n'
        '    "fileName" : "%s",\n    "fileLen" : %d\n  } ]\n}' % (first, len1, second, len2)
    )
    assert (folder / "manifest_2").read_bytes() == expected.encode()
    assert manifest_json([ManifestEntry(first, len1), ManifestEntry(second, len2)]) == expected.encode()
    assert json.loads((folder / "manifest_1").read_text()) == {"files": [{"fileName": first, "fileLen": len1}]}


def test_version_file_holds_the_latest_snapshot_number_and_starts_at_one(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path)
    w.write(_records(0, 1))
    assert (tmp_path / "history" / "_version_").read_bytes() == b"1"
    w.write(_records(1, 1))
    assert (tmp_path / "history" / "_version_").read_bytes() == b"2"
    assert snapshot_files(w.storage, w.folder) == [
        "20240101000000000_20240101000000000_0.parquet", "20240101000000001_20240101000000001_0.parquet"]


def test_a_file_left_by_a_crash_before_its_manifest_is_rewritten(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path)
    recs = _records(0, 2)
    folder = tmp_path / "history"
    folder.mkdir()
    (folder / "20240101000000000_20240101000000001_0.parquet").write_bytes(b"half a parquet file")
    assert w.write(recs) == "20240101000000000_20240101000000001_0.parquet"
    assert read_records(w.storage, w.folder) == recs


def test_a_batch_already_published_is_not_written_again(tmp_path: pathlib.Path) -> None:
    """Archival crashed after the manifest, while deleting active instant files: the retry
    finds its file in the latest snapshot and publishes nothing new."""
    w = _writer(tmp_path)
    recs = _records(0, 2)
    w.write(recs)
    assert w.write(recs) is None
    assert (tmp_path / "history" / "_version_").read_bytes() == b"1"
    assert not (tmp_path / "history" / "manifest_2").exists()


def test_a_manifest_whose_version_file_was_never_written_is_replaced(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path)
    w.write(_records(0, 1))
    (tmp_path / "history" / "manifest_2").write_bytes(b"{ not json")  # crash before _version_
    w.write(_records(1, 1))
    assert (tmp_path / "history" / "_version_").read_bytes() == b"2"
    assert len(json.loads((tmp_path / "history" / "manifest_2").read_text())["files"]) == 2


def test_batch_size_files_of_a_layer_compact_into_the_next(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path, batch=3)
    everything: list[LsmRecord] = []
    for i in range(0, 6, 2):
        everything += _records(i, 2)
        w.write(_records(i, 2))
        if i < 4:
            assert w.compact_and_clean() == []
    assert w.compact_and_clean() == ["20240101000000000_20240101000000005_1.parquet"]
    assert snapshot_files(w.storage, w.folder) == ["20240101000000000_20240101000000005_1.parquet"]
    assert read_records(w.storage, w.folder) == everything
    rows = pq.read_table(tmp_path / "history" / "20240101000000000_20240101000000005_1.parquet")
    assert rows.column("instantTime").to_pylist() == [r.instant_time for r in everything]  # in order


def test_compaction_cascades_down_the_layers(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path, batch=2)
    w.write(_records(0, 1))
    w.compact_and_clean()
    w.write(_records(1, 1))
    assert w.compact_and_clean() == ["20240101000000000_20240101000000001_1.parquet"]
    w.write(_records(2, 1))
    w.compact_and_clean()
    w.write(_records(3, 1))
    assert w.compact_and_clean() == ["20240101000000002_20240101000000003_1.parquet",
                                     "20240101000000000_20240101000000003_2.parquet"]
    assert snapshot_files(w.storage, w.folder) == ["20240101000000000_20240101000000003_2.parquet"]
    assert [r.instant_time for r in read_records(w.storage, w.folder)] == [r.instant_time for r in _records(0, 4)]


def test_compaction_groups_stop_at_the_target_size(tmp_path: pathlib.Path) -> None:
    """Hudi's getCandidateFiles: a group stops once its bytes pass the target; a lone file
    past it starts the group over (it is too large to gain from a merge)."""
    w = _writer(tmp_path, batch=3, target_file_max_bytes=1)
    for i in range(3):
        w.write(_records(i, 1))
    # every file alone passes 1 byte: no group of 2 forms before the batch limit is hit
    assert w.compact_and_clean() == []
    w2 = _writer(tmp_path / "b", batch=3)
    for i in range(3):
        w2.write(_records(i, 1))
    sizes = [e.file_len for e in w2.manifest()]
    w2.settings = LsmSettings(compaction_batch_size=3, target_file_max_bytes=sizes[0] + 1)
    assert w2.compact_and_clean() == ["20240101000000000_20240101000000001_1.parquet"]
    assert snapshot_files(w2.storage, w2.folder) == [
        "20240101000000000_20240101000000001_1.parquet", "20240101000000002_20240101000000002_0.parquet"]


def test_cleaning_keeps_three_snapshots_plus_one_per_compaction(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path, batch=3)
    for i in range(3):
        w.write(_records(i, 1))  # manifests 1..3
    w.compact_and_clean()  # manifest 4 (the compacted file); keeps 3 + 1 snapshots: all four
    folder = tmp_path / "history"
    assert [n for n in _names(folder) if n.startswith("manifest_")] == [
        "manifest_1", "manifest_2", "manifest_3", "manifest_4"]
    # every level-0 file is still listed by a kept snapshot
    assert len([n for n in _names(folder) if n.endswith("_0.parquet")]) == 3
    for i in range(3, 6):
        w.write(_records(i, 1))
    w.compact_and_clean()  # manifest 8 (compaction); keep 5..8
    names = _names(folder)
    assert [n for n in names if n.startswith("manifest_")] == ["manifest_5", "manifest_6", "manifest_7", "manifest_8"]
    live = {e["fileName"] for v in (5, 6, 7, 8) for e in json.loads((folder / f"manifest_{v}").read_text())["files"]}
    assert {n for n in names if n.endswith(".parquet")} == live
    assert "20240101000000000_20240101000000000_0.parquet" not in names  # only snapshots 1..3 listed it
    assert [r.instant_time for r in read_records(w.storage, w.folder)] == [r.instant_time for r in _records(0, 6)]


def test_no_cleaning_without_a_compaction_beyond_the_retained_snapshots(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path, batch=10)
    for i in range(3):
        w.write(_records(i, 1))
        w.compact_and_clean()
    assert [n for n in _names(tmp_path / "history") if n.startswith("manifest_")] == [
        "manifest_1", "manifest_2", "manifest_3"]
    w.write(_records(3, 1))
    w.compact_and_clean()
    assert [n for n in _names(tmp_path / "history") if n.startswith("manifest_")] == [
        "manifest_2", "manifest_3", "manifest_4"]


def test_compacted_file_spans_its_inputs_one_layer_down() -> None:
    assert compacted_file_name(["001_005_1.parquet", "006_009_1.parquet", "003_010_1.parquet"]) == "001_010_2.parquet"


def test_batch_size_key_default_and_validation() -> None:
    assert LsmSettings.from_config(HoodieConfig({})).compaction_batch_size == 10
    assert LsmSettings.from_config(HoodieConfig({"hoodie.timeline.compaction.batch.size": "4"})).compaction_batch_size == 4
    with pytest.raises(HoodieConfigError, match="hoodie.timeline.compaction.batch.size"):
        LsmSettings.from_config(HoodieConfig({"hoodie.timeline.compaction.batch.size": "1"}))


def test_archived_timeline_reads_what_the_writer_wrote(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path)
    w.write([LsmRecord("20240101000000000", "20240101000000900", "deltacommit", None, None),
             LsmRecord("20240101000000100", "20240101000000200", "commit", None, b"plan")])
    archived = ArchivedTimeline.load_lsm(w.storage, w.folder)
    assert [(i.timestamp, i.action, i.completion_time) for i in archived.instants] == [
        ("20240101000000000", "deltacommit", "20240101000000900"), ("20240101000000100", "commit", "20240101000000200")]
    assert archived.completion_times() == {"20240101000000000": "20240101000000900",
                                           "20240101000000100": "20240101000000200"}


def test_null_columns_round_trip(tmp_path: pathlib.Path) -> None:
    w = _writer(tmp_path)
    rec = LsmRecord("20240101000000000", None, "rollback", None, None)
    name = w.write([rec])
    table = pq.read_table(tmp_path / "history" / name)
    assert table.schema.field("version").type == pa.int32()
    assert table.to_pylist() == [{"instantTime": "20240101000000000", "completionTime": None, "action": "rollback",
                                  "metadata": None, "plan": None, "version": 1}]
