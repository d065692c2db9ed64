"""The metadata table kept true (hoodie.metadata.enable, Hudi's default true): after every
write and service its files partition lists exactly the files on storage, and our blocks
are laid out as a real Hudi metadata table's are."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import fastavro
import io
import pyarrow as pa
import pytest

from airflow_hoodie.actions import archive as ar
from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions import restore as rs
from airflow_hoodie.actions import savepoint as sp
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.log_reader import scan_log_files
from airflow_hoodie.table.metadata_table.files_listing import load_files_listing
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.storage.storage import Storage
from tests.table.normalize import normalize_table
from tests.table.table_files import storage_listing

FIXTURE = "tables/cow/v6_autokeys_mdt"


def _copy_fixture(conformance_next: Path, tmp_path: Path) -> Path:
    base = tmp_path / "t"
    shutil.copytree(conformance_next / FIXTURE, base)
    for p in base.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return base


def assert_listing_true(base: Path, what: str) -> None:
    """Every data file on storage is listed with its size, and nothing else; our reader reads
    the same rows through the metadata table as by listing storage."""
    table = HoodieTable.load(str(base))
    listing = load_files_listing(table.storage, table.base_path, table.timeline)
    assert {p: f for p, f in listing.files.items() if f} == storage_listing(base), what
    assert normalize_table(read_table(str(base))) == normalize_table(read_table(str(base), metadata_enable=False)), what


def _blocks(files_dir: Path) -> list:
    storage, _ = Storage.for_uri(str(files_dir))
    logs = sorted(str(p) for p in files_dir.glob(".files-0000-0_*.log.*"))
    instants = {p.name.split(".")[0] for p in (files_dir.parent / ".hoodie").glob("*.deltacommit")}
    return [b.block for b in scan_log_files(storage, logs, None, instants, decode=False).blocks
            if b.block.type_name == "HFILE_DATA"]


def _records(block) -> dict[bytes, dict]:
    hfile = HFile(block.content, "block")
    schema = fastavro.parse_schema(json.loads(block.schema))
    return {k: fastavro.schemaless_reader(io.BytesIO(v), schema) for k, v in hfile.records()}


def test_a_real_hudi_metadata_table_stays_true_through_every_action(conformance_next, tmp_path):
    base = _copy_fixture(conformance_next, tmp_path)
    real = _blocks(base / ".hoodie" / "metadata" / "files")
    rows = read_table(str(base)).drop_columns([n for n in read_table(str(base)).column_names if n.startswith("_hoodie")])
    assert_listing_true(base, "as Hudi left it")
    write_arrow(str(base), rows.slice(0, 2), "insert", {})
    assert_listing_true(base, "insert")
    write_arrow(str(base), rows.slice(2, 2), "bulk_insert", {})
    assert_listing_true(base, "bulk_insert")
    cu.run_clustering(HoodieTable.load(str(base)), HoodieConfig({}), LocalExecutor())
    assert_listing_true(base, "clustering")
    cl.run_clean(HoodieTable.load(str(base)), HoodieConfig({cl.POLICY: "KEEP_LATEST_FILE_VERSIONS",
                                                            cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor())
    assert_listing_true(base, "clean")
    kept = write_arrow(str(base), rows.slice(0, 1), "insert", {}).instant
    sp.create_savepoint(HoodieTable.load(str(base)), kept)
    latest = write_arrow(str(base), rows.slice(1, 3), "insert", {}).instant
    rollback_latest_or(HoodieTable.load(str(base)), latest)
    assert_listing_true(base, "rollback")
    write_arrow(str(base), rows.slice(1, 3), "insert", {})
    rs.restore_to(HoodieTable.load(str(base)), kept)
    assert_listing_true(base, "restore")
    assert HoodieTable.load(str(base)).config.table_version == 6

    # our delta commits' blocks, field by field against the ones Hudi wrote in the fixture
    ours = _blocks(base / ".hoodie" / "metadata" / "files")[len(real):]
    assert ours, "no block of ours"
    real_schema, real_records = json.loads(real[-1].schema), _records(real[-1])
    for block in ours:
        assert set(block.headers) == set(real[-1].headers)
        assert [f["name"] for f in json.loads(block.schema)["fields"]] == [f["name"] for f in real_schema["fields"]]
        hfile, real_hfile = HFile(block.content, "ours"), HFile(real[-1].content, "real")
        assert set(hfile.file_info) == set(real_hfile.file_info)
        for key, rec in _records(block).items():
            assert set(rec) == set(next(iter(real_records.values())))
            assert rec["type"] in (1, 2) and rec["key"] == ""
            assert (key == b"__all_partitions__") == (rec["type"] == 1)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_table_we_create_gets_a_metadata_table_kept_true(tmp_path, table_type):
    from tests.actions.services_fixtures import batch, table_config

    base = tmp_path / "t"
    cfg = table_config(table_type)
    write_arrow(str(base), batch(range(0, 8), 1), "upsert", cfg)
    table = HoodieTable.load(str(base))
    assert table.config.get("hoodie.table.metadata.partitions") == "files"
    assert (base / ".hoodie" / "metadata" / ".hoodie" / "00000000000000010.deltacommit").exists()
    assert_listing_true(base, "first write")
    write_arrow(str(base), batch(range(4, 12), 2), "upsert", cfg)
    write_arrow(str(base), batch(range(0, 3), 3), "delete", cfg)
    assert_listing_true(base, "upsert and delete")
    if table_type == "MERGE_ON_READ":
        c.schedule_compaction(HoodieTable.load(str(base)), HoodieConfig({}), force=True)
        c.execute_pending_compactions(HoodieTable.load(str(base)), LocalExecutor())
        assert_listing_true(base, "compaction")
    cu.run_clustering(HoodieTable.load(str(base)), HoodieConfig({}), LocalExecutor())
    assert_listing_true(base, "clustering")
    cl.run_clean(HoodieTable.load(str(base)), HoodieConfig({cl.COMMITS_RETAINED: "1"}), LocalExecutor())
    assert_listing_true(base, "clean")
    last = write_arrow(str(base), batch(range(20, 24), 4), "upsert", cfg).instant
    rollback_latest_or(HoodieTable.load(str(base)), last)
    assert_listing_true(base, "rollback")
    for t in range(5, 9):
        write_arrow(str(base), batch(range(t, t + 3), t), "upsert", cfg)
    ar.run_archive(HoodieTable.load(str(base)), HoodieConfig({ar.MIN_COMMITS: "2", ar.MAX_COMMITS: "3",
                                                              cl.COMMITS_RETAINED: "1"}))
    assert_listing_true(base, "archival")


def _digest(base: Path) -> dict[str, str]:
    return {str(p.relative_to(base)): hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(base.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("partition", ["secondary_index_city", "expr_index_x"])
def test_a_partition_we_cannot_maintain_stops_the_job_before_any_change(conformance_next, tmp_path, partition):
    base = _copy_fixture(conformance_next, tmp_path)
    HoodieTable.load(str(base)).update_config({"hoodie.table.metadata.partitions": f"files,{partition}"})
    before = _digest(base)
    rows = pa.table({"ts": [1], "uuid": ["u"], "rider": ["r"], "driver": ["d"], "fare": [1.0], "city": ["chennai"]})
    with pytest.raises(HoodieNotSupportedError, match=f"{partition}.*hoodie.metadata.enable=false"):
        write_arrow(str(base), rows, "insert", {})
    with pytest.raises(HoodieNotSupportedError, match=partition):
        cl.run_clean(HoodieTable.load(str(base)), HoodieConfig({}), LocalExecutor())
    assert _digest(base) == before


def test_an_expression_index_on_a_function_we_do_not_evaluate_is_refused_by_its_name(conformance_next, tmp_path):
    base = _copy_fixture(conformance_next, tmp_path)
    defs = base / ".hoodie" / ".index_defs" / "index.json"
    defs.parent.mkdir(parents=True, exist_ok=True)
    defs.write_text(json.dumps({"indexDefinitions": {"expr_index_x": {
        "indexName": "expr_index_x", "indexType": "column_stats", "indexFunction": "concat", "sourceFields": ["city"],
        "indexOptions": {}, "version": "V1"}}}))
    HoodieTable.load(str(base)).update_config({"hoodie.table.metadata.partitions": "files,expr_index_x",
                                               "hoodie.table.index.defs.path": ".hoodie/.index_defs/index.json"})
    before = _digest(base)
    rows = pa.table({"ts": [1], "uuid": ["u"], "rider": ["r"], "driver": ["d"], "fare": [1.0], "city": ["chennai"]})
    with pytest.raises(HoodieNotSupportedError, match="expression index function 'concat'"):
        write_arrow(str(base), rows, "insert", {})
    assert _digest(base) == before
    write_arrow(str(base), rows, "insert", {"hoodie.metadata.enable": "false"})  # the user's choice: drop it
    assert not (base / ".hoodie" / "metadata").exists()


def test_statistics_partitions_are_dropped_the_way_hudi_drops_them(conformance_next, tmp_path):
    """Stale column statistics would make Spark prune files that hold matches."""
    base = _copy_fixture(conformance_next, tmp_path)
    stats = base / ".hoodie" / "metadata" / "column_stats"
    stats.mkdir()
    (stats / ".hoodie_partition_metadata").write_text("commitTime=00000000000000010\npartitionDepth=1\n")
    HoodieTable.load(str(base)).update_config({"hoodie.table.metadata.partitions": "column_stats,files"})
    rows = pa.table({"ts": [1], "uuid": ["u"], "rider": ["r"], "driver": ["d"], "fare": [1.0], "city": ["chennai"]})
    write_arrow(str(base), rows, "insert", {})
    assert HoodieTable.load(str(base)).config.get("hoodie.table.metadata.partitions") == "files"
    assert not stats.exists()
    assert_listing_true(base, "after the drop")


def test_a_write_that_fails_after_its_metadata_delta_commit_leaves_a_true_listing(tmp_path, monkeypatch):
    """The metadata table's delta commit completes before the data instant; when the data
    instant then fails, its rollback R is mirrored as Hudi's metadata writer does it: a delta
    commit R listing the log files left behind, then a rollback R + "006" of the failed
    write's delta commit, so its base files never show."""
    from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter
    from tests.actions.services_fixtures import batch, table_config

    base = tmp_path / "t"
    cfg = table_config("MERGE_ON_READ")
    write_arrow(str(base), batch(range(0, 6), 1), "upsert", cfg)
    real_complete = TimelineWriter.complete

    def data_completion_fails(self, instant, content, completion_time=None):
        if "/.hoodie/metadata" not in self.base_path and instant.action == "deltacommit":
            raise OSError(28, "No space left on device")  # the write's own completion only
        return real_complete(self, instant, content, completion_time)

    monkeypatch.setattr(TimelineWriter, "complete", data_completion_fails)
    with pytest.raises(OSError, match="No space left"):
        write_arrow(str(base), batch(range(3, 9), 2), "upsert", cfg)
    monkeypatch.undo()
    data = HoodieTable.load(str(base))
    mdt = HoodieTable.load(str(base / ".hoodie" / "metadata"))
    (rollback,) = [i for i in data.timeline.instants if i.action == "rollback"]
    assert mdt.timeline.get(rollback.timestamp).action == "deltacommit"
    assert mdt.timeline.get(rollback.timestamp + "006").action == "rollback"
    assert_listing_true(base, "after the failed write")
    assert sorted(read_table(str(base)).column("id").to_pylist()) == [f"k{i:04d}" for i in range(6)]


def test_rolling_back_a_write_whose_metadata_records_were_compacted_keeps_the_listing_true(tmp_path):
    """No rollback block reaches records a metadata-table compaction merged into a base
    file; the rollback's own delta commit tombstones the files it deleted instead."""
    from airflow_hoodie.actions.metadata_table.metadata_compaction import compacted_through
    from airflow_hoodie.table.timeline.timeline import Timeline
    from tests.actions.services_fixtures import batch, table_config

    base = tmp_path / "t"
    often = {"hoodie.metadata.compact.max.delta.commits": "3"}
    cfg = table_config("COPY_ON_WRITE", **often)
    for t in range(1, 5):
        write_arrow(str(base), batch(range(0, 6), t), "upsert", cfg)
    last = write_arrow(str(base), batch(range(100, 106), 9), "upsert", cfg).instant
    # the clean's delta commit first compacts the metadata table, through the last write
    cl.run_clean(HoodieTable.load(str(base)), HoodieConfig({**often, cl.POLICY: "KEEP_LATEST_FILE_VERSIONS",
                                                            cl.FILE_VERSIONS_RETAINED: "2"}), LocalExecutor())
    storage, _ = Storage.for_uri(str(base))
    assert compacted_through(Timeline.load(storage, str(base / ".hoodie" / "metadata"))) >= last
    rollback_latest_or(HoodieTable.load(str(base)), last, HoodieConfig(often))
    assert_listing_true(base, "rollback of a compacted write")
    assert sorted(read_table(str(base)).column("id").to_pylist()) == [f"k{i:04d}" for i in range(6)]
