"""The indexer (Hudi's HoodieIndexer) building a secondary index on an existing table: the
indexing instant as Hudi writes it (plan, inflight partitions, commit metadata), every entry
of the new index in the file group Hudi's mapping gives it and the live ones exactly the rows
hudi-rs reads, the same entries as the index real Hudi built on its own table, and refusals
by name of what it cannot build."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.indexer import run_indexer
from airflow_hoodie.actions.metadata_table.record_index_writer import file_group_count
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS,
    METADATA_PARTITIONS_INFLIGHT,
    listed_in,
)
from airflow_hoodie.table.metadata_table.secondary_index import (
    entry_file_group,
    index_values,
    live_keys,
    secondary_index_definitions,
    secondary_index_entries,
    secondary_index_key,
)
from airflow_hoodie.table.timeline.instant import Action

NO_SKEW = {"hoodie.time.generator.max_expected_clock_skew_ms": "0"}
CITIES = ["a$b", "c\\d", "plain", None, "x\\$y", "$", "\\"]


def _cfg(version: int, table_type: str = "MERGE_ON_READ") -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": table_type,
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.parquet.small.file.limit": "0",
            **({"hoodie.write.table.version": str(version)} if version != 6 else {}), **NO_SKEW}


def _rows(ids: range, ts: int, shift: int = 0) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": [f"k{i:03d}" if i % 5 else f"k$\\{i:03d}" for i in ids], "p": [f"p{i % 2}" for i in ids],
                     "ts": [ts] * len(ids), "city": [CITIES[(i + shift) % len(CITIES)] for i in ids]})


def make_table(base: str, version: int) -> None:
    """Two inserts, then updates (new values: logs on MOR) and deletes."""
    cfg = _cfg(version)
    write_arrow(base, _rows(range(30), 1), "upsert", cfg)
    write_arrow(base, _rows(range(30, 50), 1), "upsert", cfg)
    write_arrow(base, _rows(range(12), 2, shift=3), "upsert", cfg)
    write_arrow(base, _rows(range(40, 44), 3), "delete", cfg)


def _hudi_rs(base: str) -> pa.Table:
    from hudi import HudiReadOptions, HudiTableBuilder

    return pa.Table.from_batches(list(HudiTableBuilder.from_base_uri(base).build().read(HudiReadOptions())))


def _expected_keys(rows: pa.Table, column: str) -> set[str]:
    return {secondary_index_key(v, k)
            for v, k in zip(index_values(rows.column(column)), rows.column("_hoodie_record_key").to_pylist())}


def check_index(base: str, name: str, column: str, version: str) -> None:
    """Every record in its file group; the live ones are the rows hudi-rs reads."""
    table = HoodieTable.load(base)
    (definition,) = [d for d in secondary_index_definitions(table) if d.name == name]
    assert definition.version == version and definition.source_field == column
    entries = list(secondary_index_entries(table, definition))
    groups = {e.file_group for e in entries}
    count = len([n for n in os.listdir(os.path.join(base, ".hoodie", "metadata", name)) if n.endswith(".log.1_0-0-0")])
    assert count == file_group_count(len(entries), 10, 1000, 1 << 30, 2.0) == 10
    for e in entries:
        assert not e.deleted
        assert e.file_group == entry_file_group(e.key, count, version), e
    assert groups and len(groups) <= count
    assert live_keys(entries) == _expected_keys(_hudi_rs(base), column)


@pytest.mark.parametrize(("version", "si_version"), [(9, "V2"), (8, "V1")])
def test_builds_a_secondary_index_on_a_table_without_one(tmp_path, version, si_version):
    base = str(tmp_path / "t")
    make_table(base, version)
    out = run_indexer(HoodieTable.load(base), HoodieConfig(NO_SKEW), "scheduleAndExecute",
                      "RECORD_INDEX,SECONDARY_INDEX", "city_idx", "city")
    assert out["state"] == "COMPLETED" and out["partitions"] == ["record_index", "secondary_index_city_idx"]
    table = HoodieTable.load(base)
    assert {"files", "record_index", "secondary_index_city_idx"} <= set(listed_in(table.config))
    assert listed_in(table.config, METADATA_PARTITIONS_INFLIGHT) == []
    defs = json.loads((tmp_path / "t" / ".hoodie" / ".index_defs" / "index.json").read_text())["indexDefinitions"]
    assert defs["secondary_index_city_idx"] == {
        "indexName": "secondary_index_city_idx", "indexType": "secondary_index", "indexFunction": "identity",
        "sourceFields": ["city"], "indexOptions": {}, "version": si_version}
    check_index(base, "secondary_index_city_idx", "city", si_version)
    # a second run finds it built and writes nothing
    again = run_indexer(table, HoodieConfig(NO_SKEW), "scheduleAndExecute", "SECONDARY_INDEX", "city_idx", "city")
    assert again["instant"] is None and "already built" in again["reason"]


def test_schedule_then_execute_writes_the_instant_files_hudi_writes(tmp_path):
    base = str(tmp_path / "t")
    make_table(base, 9)
    conf = HoodieConfig(NO_SKEW)
    run_indexer(HoodieTable.load(base), conf, "scheduleAndExecute", "RECORD_INDEX")
    table = HoodieTable.load(base)
    last = table.timeline.completed().last().timestamp
    planned = run_indexer(table, conf, "schedule", "SECONDARY_INDEX", "secondary_index_city", "city")
    ts = planned["instant"]
    table = HoodieTable.load(base)
    assert listed_in(table.config, METADATA_PARTITIONS_INFLIGHT) == ["secondary_index_city"]
    assert "secondary_index_city" not in listed_in(table.config, METADATA_PARTITIONS)
    plan = avro_codec.deserialize(table.timeline.read_plan(ts), "HoodieIndexPlan")
    assert plan == {"version": 1, "indexPartitionInfos": [
        {"version": 1, "metadataPartitionPath": "secondary_index_city", "indexUptoInstant": last, "extraMetadata": {}}]}
    with pytest.raises(HoodieConfigError, match="--mode execute"):
        run_indexer(table, conf, "schedule", "SECONDARY_INDEX", "city", "city")
    done = run_indexer(HoodieTable.load(base), conf, "execute", "SECONDARY_INDEX", "city", "city")
    assert done["instant"] == ts and done["state"] == "COMPLETED"
    table = HoodieTable.load(base)
    names = sorted(os.listdir(os.path.join(base, ".hoodie", "timeline")))
    assert f"{ts}.indexing.requested" in names and f"{ts}.indexing.inflight" in names
    assert os.path.getsize(os.path.join(base, ".hoodie", "timeline", f"{ts}.indexing.inflight")) == 0
    (completed,) = [n for n in names if n.startswith(f"{ts}_") and n.endswith(".indexing")]
    data = Path(base, ".hoodie", "timeline", completed).read_bytes()
    assert avro_codec.deserialize(data, "HoodieIndexCommitMetadata") == {
        "version": 1, "operationType": None, "indexPartitionInfos": plan["indexPartitionInfos"]}
    assert table.timeline.get(ts, Action.INDEXING).is_completed
    assert listed_in(table.config, METADATA_PARTITIONS_INFLIGHT) == []
    check_index(base, "secondary_index_city", "city", "V2")
    assert run_indexer(table, conf, "execute", "SECONDARY_INDEX", "city", "city")["instant"] is None


def _writable_copy(src, dst) -> str:
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            path = os.path.join(root, name)
            os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR)
    return str(dst)


@pytest.mark.parametrize(("name", "index", "column"), [("cow/v9_txns_simple_meta", "merchant_idx", "merchant_name"),
                                                    ("cow/v9_txns_simple_meta", "txn_date_idx", "txn_date"),
                                                    ("mor/v9_txns_simple_meta", "merchant_idx", "merchant_name")])
def test_rebuilding_hudis_own_secondary_index_gives_its_entries(conformance_next, tmp_path, name, index, column):
    base = _writable_copy(conformance_next / "tables" / name, tmp_path / "t")
    table = HoodieTable.load(base)
    real = {d.name: d for d in secondary_index_definitions(table)}[f"secondary_index_{index}"]
    real_entries = list(secondary_index_entries(table, real))
    real_live = {(e.key, e.file_group) for e in real_entries if e.key in live_keys(real_entries)}
    # drop the index as Hudi's DROP INDEX leaves the table: unlisted, folder gone, definition gone
    listed = [p for p in listed_in(table.config) if p != real.name]
    table.update_config({METADATA_PARTITIONS: ",".join(listed)})
    shutil.rmtree(os.path.join(base, ".hoodie", "metadata", real.name))
    defs_path = Path(base, ".hoodie", ".index_defs", "index.json")
    defs = json.loads(defs_path.read_text())
    defs["indexDefinitions"].pop(real.name)
    defs_path.write_text(json.dumps(defs))
    out = run_indexer(HoodieTable.load(base), HoodieConfig(NO_SKEW), "scheduleAndExecute", "SECONDARY_INDEX",
                      index, column)
    assert out["state"] == "COMPLETED"
    table = HoodieTable.load(base)
    rebuilt = {d.name: d for d in secondary_index_definitions(table)}[real.name]
    assert rebuilt == real
    ours = list(secondary_index_entries(table, rebuilt))
    assert all(not e.deleted for e in ours)
    assert {(e.key, e.file_group) for e in ours} == real_live and real_live
    check_index(base, real.name, column, "V2")
    if name.startswith("cow/"):  # base files only in the groups that hold entries, as Hudi's
        folder = Path(base, ".hoodie", "metadata", real.name)
        real_folder = conformance_next / "tables" / name / ".hoodie" / "metadata" / real.name
        assert sorted(n.name.split("_")[0] for n in folder.iterdir() if n.name.endswith(".hfile")) == \
            sorted(n.name.split("_")[0] for n in real_folder.iterdir() if n.name.endswith(".hfile"))


def test_a_secondary_index_on_table_version_6_is_refused_by_name(tmp_path):
    base = str(tmp_path / "t")
    write_arrow(base, _rows(range(10), 1), "upsert", {**_cfg(6), "hoodie.metadata.record.index.enable": "true"})
    before = sorted(os.listdir(os.path.join(base, ".hoodie")))
    with pytest.raises(HoodieNotSupportedError, match="SECONDARY_INDEX.*table version 6"):
        run_indexer(HoodieTable.load(base), HoodieConfig({}), "scheduleAndExecute", "SECONDARY_INDEX", "c", "city")
    assert sorted(os.listdir(os.path.join(base, ".hoodie"))) == before


@pytest.mark.parametrize(("kinds", "match"), [("BOGUS", "BOGUS"), ("EXPRESSION_INDEX", "EXPRESSION_INDEX"),
                                              ("FILES", "FILES"), ("RECORD_INDEX,NOPE", "NOPE")])
def test_an_index_type_we_cannot_build_is_refused_by_name(tmp_path, kinds, match):
    base = str(tmp_path / "t")
    write_arrow(base, _rows(range(10), 1), "upsert", _cfg(9))
    with pytest.raises(HoodieNotSupportedError, match=match):
        run_indexer(HoodieTable.load(base), HoodieConfig(NO_SKEW), "scheduleAndExecute", kinds)


def test_bad_arguments_are_refused_before_anything_is_written(tmp_path):
    base = str(tmp_path / "t")
    write_arrow(base, _rows(range(10), 1), "upsert", _cfg(9))
    table = HoodieTable.load(base)
    conf = HoodieConfig(NO_SKEW)
    with pytest.raises(HoodieConfigError, match="RECORD_INDEX,SECONDARY_INDEX"):
        run_indexer(table, conf, "scheduleAndExecute", "SECONDARY_INDEX", "c", "city")
    with pytest.raises(HoodieConfigError, match="--index-column"):
        run_indexer(table, conf, "scheduleAndExecute", "SECONDARY_INDEX", "c")
    with pytest.raises(HoodieConfigError, match="nope"):
        run_indexer(table, conf, "scheduleAndExecute", "RECORD_INDEX,SECONDARY_INDEX", "c", "nope")
    with pytest.raises(HoodieConfigError, match="hoodie.metadata.enable"):
        run_indexer(table, HoodieConfig({"hoodie.metadata.enable": "false"}), "schedule", "RECORD_INDEX")
    assert not [n for n in os.listdir(os.path.join(base, ".hoodie", "timeline")) if "indexing" in n]


def test_clean_and_archive_take_an_indexing_instant_in_their_stride(tmp_path):
    from airflow_hoodie.actions.archive import run_archive
    from airflow_hoodie.actions.clean import run_clean
    from airflow_hoodie.actions.executor import LocalExecutor

    base = str(tmp_path / "t")
    cfg = {**_cfg(9, "COPY_ON_WRITE"), "hoodie.parquet.small.file.limit": "104857600"}
    write_arrow(base, _rows(range(10), 1), "upsert", cfg)
    indexing = run_indexer(HoodieTable.load(base), HoodieConfig(NO_SKEW), "scheduleAndExecute", "RECORD_INDEX")
    for ts in range(2, 9):
        write_arrow(base, _rows(range(10), ts), "upsert", cfg)
    services = HoodieConfig({**NO_SKEW, "hoodie.cleaner.commits.retained": "1", "hoodie.keep.min.commits": "2",
                             "hoodie.keep.max.commits": "3"})
    run_clean(HoodieTable.load(base), services, LocalExecutor())
    run_archive(HoodieTable.load(base), services)
    table = HoodieTable.load(base)
    # the archiver moves commits (cleans, rollbacks) off the active timeline, as Hudi's selects
    # them; the indexing instant stays, and readers take the timeline as it is
    archived = {i.timestamp for i in table.archived_timeline().instants}
    assert archived and max(archived) > indexing["instant"]
    assert table.timeline.get(indexing["instant"], Action.INDEXING).is_completed
    assert _hudi_rs(base).num_rows == 10


def test_the_settings_name_partitions_as_the_format_layer_reads_them():
    from airflow_hoodie.settings import indexer as settings
    from airflow_hoodie.table.metadata_table import secondary_index

    assert settings.SECONDARY_INDEX_PREFIX == secondary_index.SECONDARY_INDEX_PREFIX
    assert settings.secondary_index_partition("idx") == settings.secondary_index_partition("secondary_index_idx") \
        == "secondary_index_idx"
    with pytest.raises(HoodieConfigError, match="--index-name"):
        settings.secondary_index_partition("bad name/..")


def test_plan_and_commit_metadata_are_byte_for_byte_hudis(conformance_next):
    """Hudi 1.1's files of the indexing that built merchant_idx, written again from their records."""
    from airflow_hoodie.actions.indexer import _plan

    base = conformance_next / "tables" / "cow" / "v9_txns_simple_meta"
    table = HoodieTable.load(str(base))
    folder = base / ".hoodie" / "timeline"
    plan_bytes = (folder / "20260307162457540.indexing.requested").read_bytes()
    done_bytes = (folder / "20260307162457540_20260307162458389.indexing").read_bytes()
    plan = _plan(["secondary_index_merchant_idx"], "20260307162456179")
    assert avro_codec.serialize("HoodieIndexPlan", plan, plan_bytes[-16:]) == plan_bytes
    done = {"version": 1, "operationType": None, "indexPartitionInfos": plan["indexPartitionInfos"]}
    assert table.format.encode_completed(Action.INDEXING, done, sync_marker=done_bytes[-16:]) == done_bytes


def test_a_pending_compaction_is_read_through_its_merged_slices(tmp_path):
    """Entries come from the latest merged slices: a log written after a compaction was
    planned belongs with the slice the plan compacts, as every reader merges them."""
    from airflow_hoodie.actions.compaction import schedule_compaction

    base = str(tmp_path / "t")
    make_table(base, 9)
    sched = schedule_compaction(HoodieTable.load(base), HoodieConfig(NO_SKEW), force=True)
    assert sched.instant is not None
    write_arrow(base, _rows(range(20, 26), 5, shift=1), "upsert", _cfg(9))  # new values, logs in the new slices
    run_indexer(HoodieTable.load(base), HoodieConfig(NO_SKEW), "scheduleAndExecute", "RECORD_INDEX,SECONDARY_INDEX",
                "city_idx", "city")
    check_index(base, "secondary_index_city_idx", "city", "V2")


@pytest.mark.parametrize(("version", "table_type"), [(9, "MERGE_ON_READ"), (8, "COPY_ON_WRITE")])
def test_writes_after_the_indexer_keep_its_index_exact(tmp_path, version, table_type):
    """The index the indexer builds is the one every later write keeps (secondary_index_writer):
    changed values, inserts, deletes and a metadata-table compaction leave it equal to the rows."""
    from tests.actions.secondary_index_fixtures import check_indexes

    base = str(tmp_path / "t")
    cfg = {**_cfg(version, table_type), "hoodie.metadata.compact.max.delta.commits": "2"}
    write_arrow(base, _rows(range(30), 1), "upsert", cfg)
    run_indexer(HoodieTable.load(base), HoodieConfig(NO_SKEW), "scheduleAndExecute",
                "RECORD_INDEX,SECONDARY_INDEX", "city_idx", "city")
    check_indexes(Path(base), "built")
    write_arrow(base, _rows(range(0, 20, 2), 2, shift=2), "upsert", cfg)  # values change
    check_indexes(Path(base), "values changed")
    write_arrow(base, _rows(range(30, 36), 2), "insert", cfg)
    check_indexes(Path(base), "inserted")
    write_arrow(base, _rows(range(1, 9, 3), 3), "delete", cfg)
    counts = check_indexes(Path(base), "deleted")
    assert counts, "no secondary index was checked"


def test_a_write_while_an_index_is_scheduled_waits_for_its_build(tmp_path):
    """Between the indexer's schedule and execute the partition is listed inflight: a write is
    refused, naming the indexing instant and how to finish it, and changes nothing; after
    execute the same write goes through and keeps the index exact."""
    from tests.actions.secondary_index_fixtures import check_indexes

    base = str(tmp_path / "t")
    cfg = _cfg(9)
    write_arrow(base, _rows(range(20), 1), "upsert", cfg)
    run_indexer(HoodieTable.load(base), HoodieConfig(NO_SKEW), "scheduleAndExecute", "RECORD_INDEX")
    out = run_indexer(HoodieTable.load(base), HoodieConfig(NO_SKEW), "schedule", "SECONDARY_INDEX", "city_idx", "city")
    timeline_before = sorted(os.listdir(os.path.join(base, ".hoodie", "timeline")))
    with pytest.raises(HoodieNotSupportedError, match=f"--mode execute --instant-time {out['instant']}"):
        write_arrow(base, _rows(range(5), 2, shift=1), "upsert", cfg)
    assert sorted(os.listdir(os.path.join(base, ".hoodie", "timeline"))) == timeline_before
    run_indexer(HoodieTable.load(base), HoodieConfig(NO_SKEW), "execute", "SECONDARY_INDEX", "city_idx", "city")
    write_arrow(base, _rows(range(5), 2, shift=1), "upsert", cfg)
    check_indexes(Path(base), "after the build")
