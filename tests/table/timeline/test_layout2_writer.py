"""Timeline layout 2 (table versions 8/9): completed commit bytes and instant file names,
checked against the files Hudi 1.0/1.1 wrote in the conformance-next corpus."""

from __future__ import annotations

import io
import shutil

import fastavro
import pytest

from airflow_hoodie.errors import HoodieNotSupportedError, HoodieTimelineError
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, ReplaceCommitMetadata, WriteStat
from airflow_hoodie.table.properties import TableConfig, load_java_properties
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.table_format import TableFormat
from airflow_hoodie.table.timeline import commit_serde_v2
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline
from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter

_COMMITS = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)


def _tables(root):
    found = sorted(p.parent.parent for p in (root / "tables").glob("*/*/.hoodie/timeline"))
    assert found, "no layout-2 tables in the corpus"
    return found


def _format(table) -> TableFormat:
    props = load_java_properties((table / ".hoodie" / "hoodie.properties").read_text())
    return TableFormat.of(TableConfig(props))


def _completed(table):
    for path in sorted((table / ".hoodie" / "timeline").iterdir()):
        inst = Instant.parse(path.name)
        if inst is not None and inst.is_completed:
            yield path, inst


def _record(data: bytes) -> dict:
    (rec,) = list(fastavro.reader(io.BytesIO(data)))
    return rec


def test_corpus_has_v8_and_v9_layout2_tables(conformance_next):
    versions = {_format(t).version for t in _tables(conformance_next)}
    assert {8, 9} <= versions
    assert all(_format(t).timeline_layout == 2 for t in _tables(conformance_next))


def test_completed_commit_files_reencode_to_hudi_bytes(conformance_next):
    checked = 0
    for table in _tables(conformance_next):
        fmt = _format(table)
        storage, base = Storage.for_uri(str(table))
        timeline = Timeline.load(storage, base)
        for path, inst in _completed(table):
            if inst.action not in _COMMITS:
                continue
            data = path.read_bytes()  # the reader hands out JSON; the raw file is the Avro
            meta = commit_serde_v2.deserialize(data, replace=inst.action == Action.REPLACE_COMMIT)
            # the existing (JSON-converting) reader sees the same commit
            seen = timeline.commit_metadata(inst)
            assert seen.operation_type == meta.operation_type
            assert sorted(seen.files_written()) == sorted(meta.files_written())
            out = fmt.encode_completed(inst.action, meta, sync_marker=data[-16:])
            original, again = _record(data), _record(out)
            for field in original:
                assert again[field] == original[field], (path.name, field)
            assert out == data, path.name
            checked += 1
    assert checked >= 30


def test_completed_rollback_reencodes_to_hudi_bytes(conformance_next):
    checked = 0
    for table in _tables(conformance_next):
        fmt = _format(table)
        for path, inst in _completed(table):
            if inst.action not in (Action.ROLLBACK, Action.CLEAN):
                continue
            data = path.read_bytes()
            schema = "HoodieRollbackMetadata" if inst.action == Action.ROLLBACK else "HoodieCleanMetadata"
            rec = avro_codec.deserialize(data, schema)
            out = fmt.encode_completed(inst.action, rec, sync_marker=data[-16:])
            assert _record(out) == _record(data)
            assert out == data, path.name
            checked += 1
    assert checked >= 1


def test_completed_file_names_round_trip(conformance_next):
    checked = 0
    for table in _tables(conformance_next):
        for path, inst in _completed(table):
            requested, _, rest = path.name.partition("_")
            completion, _, action = rest.partition(".")
            assert (inst.timestamp, inst.completion_time, inst.action) == (requested, completion, action)
            assert inst.completion_time >= inst.timestamp
            rebuilt = Instant(requested, action, State.COMPLETED, completion)
            assert rebuilt.file_name == path.name
            checked += 1
    assert checked >= 30


def _stat() -> WriteStat:
    return WriteStat.new(fileId="f1-0", path="p/f1-0_0-1-1_20260101000000000.parquet", prevCommit="null",
                         numWrites=3, numInserts=3, partitionPath="p", totalWriteBytes=10, fileSizeInBytes=10)


def test_v9_commit_metadata_is_avro_with_the_1x_fields():
    meta = CommitMetadata(operation_type="UPSERT", extra_metadata={"schema": "{}"})
    meta.add_write_stat("p", _stat())
    data = TableFormat(9, 2).encode_completed(Action.COMMIT, meta)
    assert data.startswith(b"Obj\x01")
    rec = _record(data)
    assert rec["compacted"] is False and rec["operationType"] == "UPSERT"
    assert rec["extraMetadata"] == {"schema": "{}"}
    stat = rec["partitionToWriteStats"]["p"][0]
    assert stat["numInserts"] == 3 and "runtimeStats" in stat and "logFiles" in stat
    # a clustering completes as a replacecommit record, even from plain commit metadata
    rep = _record(TableFormat(8, 2).encode_completed(Action.CLUSTERING, meta))
    assert rep["partitionToReplaceFileIds"] == {}
    # version 6 is unchanged: Jackson JSON
    assert TableFormat(6, 1).encode_completed(Action.COMMIT, meta).lstrip().startswith(b"{")


def test_writes_to_versions_we_do_not_write_are_refused():
    meta = CommitMetadata(operation_type="UPSERT")
    for version in (5, 7, 10):
        with pytest.raises(HoodieNotSupportedError):
            TableFormat(version, 2 if version >= 8 else 1).serialize_completed(Action.COMMIT, meta)
    assert TableFormat(6, 1).serialize_completed(Action.COMMIT, meta)[:1] == b"{"
    for version in (8, 9):
        assert TableFormat(version, 2).serialize_completed(Action.COMMIT, meta)[:4] == b"Obj\x01"


@pytest.fixture
def v9_copy(conformance_next, tmp_path):
    src = conformance_next / "tables" / "mor" / "v9_nonpartitioned_rollback"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    return dst


def test_layout2_writer_creates_requested_inflight_and_completed_once(v9_copy):
    storage, base = Storage.for_uri(str(v9_copy))
    writer = _format(v9_copy).timeline_writer(storage, base)
    assert writer.layout == 2 and writer.meta_path.endswith(".hoodie/timeline")
    ts, ct = "20270101000000000", "20270101000001000"
    inst = Instant(ts, Action.DELTA_COMMIT, State.REQUESTED)
    writer.create_requested(inst)
    writer.transition_to_inflight(inst)
    with pytest.raises(HoodieTimelineError, match="completion time"):
        writer.complete(inst, b"x")
    with pytest.raises(HoodieTimelineError, match="before the requested"):
        writer.complete(inst, b"x", completion_time="20261231000000000")
    done = writer.complete(inst, b"body", completion_time=ct)
    folder = v9_copy / ".hoodie" / "timeline"
    assert done.file_name == f"{ts}_{ct}.deltacommit"
    assert (folder / done.file_name).read_bytes() == b"body"
    assert (folder / f"{ts}.deltacommit.requested").exists() and (folder / f"{ts}.deltacommit.inflight").exists()
    assert not (v9_copy / ".hoodie" / f"{ts}.deltacommit").exists()
    # write-once, whatever completion time a racing writer took
    with pytest.raises(HoodieTimelineError, match="already completed"):
        writer.complete(inst, b"other", completion_time="20270101000002000")
    assert len(list(folder.glob(f"{ts}_*"))) == 1
    loaded = Timeline.load(storage, base).get(ts)
    assert loaded is not None and loaded.is_completed and loaded.completion_time == ct
    assert writer.completed_file(ts, Action.DELTA_COMMIT).file_name == done.file_name
    writer.revert_completed_to_inflight(inst)
    assert not (folder / done.file_name).exists() and (folder / f"{ts}.deltacommit.inflight").exists()


def test_layout2_delete_instant_files_finds_the_completion_time(v9_copy):
    storage, base = Storage.for_uri(str(v9_copy))
    writer = TimelineWriter(storage, base, layout=2)
    ts = "20270101000000000"
    inst = Instant(ts, Action.COMMIT, State.REQUESTED)
    writer.create_requested(inst)
    writer.transition_to_inflight(inst)
    writer.complete(inst, b"", completion_time="20270101000000500")
    deleted = writer.delete_instant_files(ts, Action.COMMIT)
    assert deleted == [f"{ts}_20270101000000500.commit", f"{ts}.inflight", f"{ts}.commit.requested"]


def test_layout1_writer_is_unchanged(tmp_path):
    storage, base = Storage.for_uri(str(tmp_path))
    writer = TimelineWriter(storage, base)
    inst = Instant("20270101000000000", Action.COMMIT, State.REQUESTED)
    writer.create_requested(inst)
    writer.transition_to_inflight(inst)
    with pytest.raises(HoodieTimelineError):
        writer.complete(inst, b"{}", completion_time="20270101000000500")
    assert writer.complete(inst, b"{}").file_name == "20270101000000000.commit"
    assert (tmp_path / ".hoodie" / "20270101000000000.commit").exists()
    with pytest.raises(HoodieTimelineError):
        TimelineWriter(storage, base, layout=3)
