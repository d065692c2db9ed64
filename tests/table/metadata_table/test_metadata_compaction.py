"""The metadata table compacts and cleans itself as Hudi 0.14's writer does, and its listing
stays the storage listing through every step."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata.plans import CompactionPlan
from airflow_hoodie.actions.metadata_table.files_bootstrap import initialize_files_partition
from airflow_hoodie.table.metadata_table.files_listing import load_files_listing
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline
from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter
from tests.table.normalize import normalize_table
from tests.table.table_files import copy_conformance_table, storage_listing

CONF = {"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p"}
MAX_DELTAS = "hoodie.metadata.compact.max.delta.commits"


def _batch(n: int) -> pa.Table:
    # an update of key 0 (a new file version) and a new key per round, over two partitions
    return pa.table({"id": [0, n + 1], "ts": [n, n], "p": ["a", "b" if n % 2 else "c"], "v": [f"v{n}", "w"]})


def _new_table(tmp_path: Path, conf: dict[str, str]) -> Path:
    """A table of ours with a metadata table (built by the first write, or bootstrapped)."""
    base = tmp_path / "t"
    write_arrow(str(base), _batch(0), "upsert", conf, table_name="t")
    if not (base / ".hoodie" / "metadata").exists():
        initialize_files_partition(HoodieTable.load(str(base)), storage_listing(base))
    return base


def _listing(base: Path) -> dict[str, dict[str, int]]:
    table = HoodieTable.load(str(base))
    return load_files_listing(table.storage, table.base_path, table.timeline).files


def _mdt_timeline(base: Path) -> Timeline:
    return Timeline.load(Storage.local(), str(base / ".hoodie" / "metadata"))


def _compactions(base: Path) -> list[str]:
    return [i.timestamp for i in _mdt_timeline(base).instants if i.action == Action.COMMIT and i.is_completed]


def _hfile_listing(path: Path) -> dict[str, dict[str, int]]:
    hfile = HFile(path.read_bytes(), str(path))
    schema = fastavro.parse_schema(json.loads(hfile.schema_json))
    out = {}
    for key, value in hfile.records():
        rec = fastavro.schemaless_reader(io.BytesIO(value), schema)
        if rec["type"] == 2:
            out["" if key == b"." else key.decode()] = {n: i["size"] for n, i in rec["filesystemMetadata"].items()}
    return out


def _same_rows(base: Path) -> None:
    by_listing = normalize_table(read_table(str(base), metadata_enable=False))
    assert normalize_table(read_table(str(base), metadata_enable=True)) == by_listing


def test_the_metadata_table_compacts_after_ten_delta_commits_and_lists_storage_at_every_step(tmp_path):
    base = _new_table(tmp_path, CONF)
    listings = {}
    for n in range(1, 13):
        result = write_arrow(str(base), _batch(n), "upsert", CONF)
        listing = _listing(base)
        assert listing == storage_listing(base), f"after write {n}"
        listings[result.instant] = listing
    _same_rows(base)
    timeline = _mdt_timeline(base)
    (compaction,) = _compactions(base)  # one: 10 delta commits (init + 9 writes), then 4 more
    deltas = [i.timestamp for i in timeline.instants if i.action == Action.DELTA_COMMIT and i.is_completed]
    latest = compaction[:-3]
    assert compaction.endswith("001") and latest in deltas
    assert len([d for d in deltas if d <= latest]) == 10  # the initializing one counts, as in Hudi
    from airflow_hoodie.actions.metadata_table.metadata_compaction import compacted_through

    assert compacted_through(timeline) == latest
    # the plan names the slice it merged; the new base holds exactly the listing of then
    plan = CompactionPlan.from_bytes(timeline.read_plan(Instant(compaction, Action.COMPACTION, State.REQUESTED)))
    (op,) = plan.operations
    assert (op.file_id, op.partition_path, op.base_instant_time) == ("files-0000-0", "files", "00000000000000010")
    assert len(op.delta_file_paths) == 9
    hfile = base / ".hoodie" / "metadata" / "files" / f"files-0000-0_0-0-0_{compaction}.hfile"
    assert _hfile_listing(hfile) == listings[latest]
    meta = json.loads(timeline.read_details(Instant(compaction, Action.COMMIT, State.COMPLETED)))
    (stat,) = meta["partitionToWriteStats"]["files"]
    assert meta["compacted"] and meta["operationType"] == "COMPACT"
    assert stat["path"] == f"files/{hfile.name}" and stat["fileSizeInBytes"] == hfile.stat().st_size
    assert stat["prevCommit"] == "00000000000000010" and stat["totalLogFilesCompacted"] == 9
    # the later delta commits went to log files of the new base
    logs = [p.name for p in hfile.parent.iterdir() if p.name.startswith(".files-0000-0_")]
    assert len([n for n in logs if f"_{compaction}.log." in n]) == 4


def test_the_compacted_base_file_of_a_real_hudi_metadata_table_decodes_with_its_record_schema(conformance_next,
                                                                                                tmp_path):
    base = copy_conformance_table(conformance_next, "cow/v6_autokeys_mdt", tmp_path)
    files = base / ".hoodie" / "metadata" / "files"
    real = HFile((files / "files-0000-0_0-6-5_00000000000000010.hfile").read_bytes(), "fixture")
    real_schema = json.loads(real.schema_json)
    assert _listing(base) == storage_listing(base)
    listings = {}
    for n in range(9):  # an auto-key table takes inserts
        result = write_arrow(str(base), pa.table({"ts": [n], "uuid": [f"u{n}"], "rider": ["r"], "driver": ["d"],
                                                  "fare": [1.5], "city": ["chennai" if n % 2 else "sao_paulo"]}),
                             "insert", {}, table_name="trips_table")
        listings[result.instant] = _listing(base)
        assert listings[result.instant] == storage_listing(base), f"after insert {n}"
    _same_rows(base)
    (compaction,) = _compactions(base)  # Hudi's 3 delta commits + 7 of ours
    ours = HFile((files / f"files-0000-0_0-0-0_{compaction}.hfile").read_bytes(), "ours")
    assert [f["name"] for f in json.loads(ours.schema_json)["fields"]] == [f["name"] for f in real_schema["fields"]]
    parsed = fastavro.parse_schema(real_schema)
    records = {k.decode(): fastavro.schemaless_reader(io.BytesIO(v), parsed) for k, v in ours.records()}
    assert sorted(records) == ["__all_partitions__", "chennai", "san_francisco", "sao_paulo"]
    real_record = {k.decode(): fastavro.schemaless_reader(io.BytesIO(v), parsed) for k, v in real.records()}
    for key, rec in records.items():
        assert set(rec) == set(real_record["__all_partitions__"])
        assert rec["_hoodie_file_name"] == f"files-0000-0_0-0-0_{compaction}.hfile"  # as Hudi's merge handle
        assert [rec[f] for f in ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                 "_hoodie_partition_path")] == [None] * 4
        assert rec["key"] == "" and rec["BloomFilterMetadata"] is None and rec["ColumnStatsMetadata"] is None
        assert rec["recordIndexMetadata"] is None
        assert rec["type"] == (1 if key == "__all_partitions__" else 2)
        assert all(info["isDeleted"] is False for info in rec["filesystemMetadata"].values())
    assert records["__all_partitions__"]["filesystemMetadata"] == {
        p: {"size": 0, "isDeleted": False} for p in ("chennai", "san_francisco", "sao_paulo")}
    # Hudi's own entries survive the merge with their sizes (its log blocks wrote them)
    assert records["chennai"]["filesystemMetadata"][
        "68d3c349-f621-4cd8-9e8b-c6dd8eb20d08-0_4-12-0_20240402123035233.parquet"]["size"] == 435892
    assert {p: {n: i["size"] for n, i in r["filesystemMetadata"].items()} for p, r in records.items()
            if p != "__all_partitions__"} == listings[compaction[:-3]]
    assert len(records["san_francisco"]["filesystemMetadata"]) == 4


def test_the_metadata_table_cleans_slices_out_of_its_twenty_retained_commits(tmp_path):
    # with 4: the clean can run (3 instants after a compaction) before the next compaction
    conf = {**CONF, MAX_DELTAS: "4"}
    base = _new_table(tmp_path, conf)
    files = base / ".hoodie" / "metadata" / "files"
    init_base = files / "files-0000-0_0-0-0_00000000000000010.hfile"
    assert init_base.exists()
    for n in range(1, 23):
        write_arrow(str(base), _batch(n), "upsert", conf)
        assert _listing(base) == storage_listing(base), f"after write {n}"
    timeline = _mdt_timeline(base)
    cleans = [i for i in timeline.instants if i.action == Action.CLEAN and i.is_completed]
    assert cleans and all(c.timestamp.endswith("002") for c in cleans)
    assert not init_base.exists()  # the first slice went, with its log files
    assert not [p for p in files.iterdir() if "_00000000000000010.log." in p.name]
    # nothing of the latest slices went: every compaction of the last 20 commits still has its base file
    commits = [i for i in timeline.instants if i.action in (Action.COMMIT, Action.DELTA_COMMIT) and i.is_completed]
    kept = [c.timestamp for c in commits[-20:] if c.action == Action.COMMIT]
    assert kept and all((files / f"files-0000-0_0-0-0_{ts}.hfile").exists() for ts in kept)
    _same_rows(base)


def test_a_pending_data_instant_before_the_latest_delta_commit_holds_compaction_back(tmp_path):
    conf = {**CONF, MAX_DELTAS: "3"}
    base = _new_table(tmp_path, conf)
    table = HoodieTable.load(str(base))
    first = table.timeline.completed_commits().first().timestamp
    # a pending data-table instant before the metadata table's delta commits (a clean that
    # was only requested): the compaction waits for it, as Hudi's writer does
    stuck = Instant(first[:-3] + "000" if first[-3:] != "000" else first[:-1] + "0", Action.CLEAN, State.REQUESTED)
    assert stuck.timestamp <= first
    TimelineWriter(table.storage, table.base_path).create_requested(stuck)
    for n in range(1, 6):
        write_arrow(str(base), _batch(n), "upsert", conf)
        assert _listing(base) == storage_listing(base)
    assert _compactions(base) == []
    with pytest.raises(HoodieTimelineError, match="max.deltacommits.when_pending"):
        write_arrow(str(base), _batch(6), "upsert", {**conf, "hoodie.metadata.max.deltacommits.when_pending": "4"})
    (base / ".hoodie" / stuck.file_name).unlink()
    write_arrow(str(base), _batch(7), "upsert", conf)
    assert len(_compactions(base)) == 1
    assert _listing(base) == storage_listing(base)
    _same_rows(base)


def test_a_crashed_compaction_is_finished_before_the_next_delta_commit(tmp_path, monkeypatch):
    from airflow_hoodie.actions.metadata_table import metadata_compaction as mc

    conf = {**CONF, MAX_DELTAS: "3"}
    base = _new_table(tmp_path, conf)
    calls = {"n": 0}
    original = mc._compact_operation

    def crash(*args, **kwargs):
        calls["n"] += 1
        raise RuntimeError("executor lost")

    monkeypatch.setattr(mc, "_compact_operation", crash)
    with pytest.raises(RuntimeError):
        for n in range(1, 5):
            write_arrow(str(base), _batch(n), "upsert", conf)
    assert calls["n"] == 1
    pending = [i for i in _mdt_timeline(base).instants if i.action == Action.COMPACTION and not i.is_completed]
    assert len(pending) == 1 and pending[0].state == State.INFLIGHT
    monkeypatch.setattr(mc, "_compact_operation", original)
    shutil.rmtree(base / ".hoodie" / ".heartbeat", ignore_errors=True)
    write_arrow(str(base), _batch(9), "upsert", conf)
    assert _compactions(base) == [pending[0].timestamp]
    assert _listing(base) == storage_listing(base)
    _same_rows(base)


def test_every_action_keeps_the_compacting_metadata_table_true(tmp_path):
    """Writes and every table service of a MERGE_ON_READ table, with the metadata table
    compacting every 3 delta commits: its listing is storage's after each step."""
    from airflow_hoodie.actions import clean as cl
    from airflow_hoodie.actions import clustering as cu
    from airflow_hoodie.actions import compaction as c
    from airflow_hoodie.actions import restore as rs
    from airflow_hoodie.actions import savepoint as sp
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.actions.rollback import rollback_latest_or
    from airflow_hoodie.config import HoodieConfig
    from tests.actions.services_fixtures import batch, load, table_config, write

    base = tmp_path / "mor"
    cfg = table_config("MERGE_ON_READ", **{MAX_DELTAS: "3"})
    services = HoodieConfig({MAX_DELTAS: "3"})
    steps = []

    def check(step: str) -> None:
        steps.append(step)
        assert _listing(base) == storage_listing(base), f"after {step}"

    for t in range(1, 5):
        write(str(base), batch(range(0, 6), t), cfg)
        check(f"write {t}")
    c.schedule_compaction(load(str(base)), services, force=True)
    c.execute_pending_compactions(load(str(base)), LocalExecutor(), services)
    check("compaction")
    cu.run_clustering(load(str(base)), services, LocalExecutor())
    check("clustering")
    cl.run_clean(load(str(base)), services.with_values({cl.POLICY: "KEEP_LATEST_FILE_VERSIONS",
                                                         cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor())
    check("clean")
    kept = write(str(base), batch(range(0, 6), 5), cfg)
    sp.create_savepoint(load(str(base)), kept, config=services)
    check("savepoint")
    last = write(str(base), batch(range(0, 3), 9), cfg)
    rollback_latest_or(load(str(base)), last, services)
    check("rollback")
    write(str(base), batch(range(0, 3), 10), cfg)
    rs.restore_to(load(str(base)), kept, services)
    check("restore")
    for t in range(11, 15):
        write(str(base), batch(range(0, 4), t), cfg)
        check(f"write {t}")
    assert len(_compactions(base)) >= 3
    _same_rows(base)


def test_delta_commits_archived_from_the_metadata_timeline_still_count(tmp_path):
    """Hudi's writer archives the metadata table's timeline up to the data table's earliest
    instant; while a pending data instant holds compaction back, the latest slice keeps
    blocks of archived delta commits, and Hudi's log scanner still reads them."""
    base = _new_table(tmp_path, CONF)
    for n in range(1, 6):
        write_arrow(str(base), _batch(n), "upsert", CONF)
    assert _compactions(base) == []
    mdt_meta = base / ".hoodie" / "metadata" / ".hoodie"
    archived = [i for i in _mdt_timeline(base).instants if i.action == Action.DELTA_COMMIT][:3]
    for inst in archived:  # what Hudi's archiver leaves: the instant files gone, the blocks kept
        for state in (inst.requested(), inst.inflight(), inst.completed()):
            (mdt_meta / state.file_name).unlink()
    assert _listing(base) == storage_listing(base)
    _same_rows(base)


def test_a_metadata_table_with_a_partition_we_do_not_compact_is_not_compacted(tmp_path):
    """Hudi compacts every metadata partition at once and the archival barrier relies on it;
    we compact ``files`` and ``record_index``, so another partition keeps compaction off."""
    from airflow_hoodie.actions.metadata_table.metadata_compaction import run_table_services
    from airflow_hoodie.table.properties import TableConfig

    def mdt_of(table: HoodieTable) -> HoodieTable:
        return HoodieTable.load(str(base / ".hoodie" / "metadata"))

    base = _new_table(tmp_path, CONF)
    for n in range(1, 9):
        write_arrow(str(base), _batch(n), "upsert", CONF)
    assert _compactions(base) == []  # 10 delta commits: due at the next one
    table = HoodieTable.load(str(base))
    table.config = TableConfig({**dict(table.config.items()), "hoodie.table.metadata.partitions": "files,secondary_index_x"})
    assert run_table_services(table, mdt_of(table)).compacted == []
    assert _compactions(base) == []
    table = HoodieTable.load(str(base))
    assert len(run_table_services(table, mdt_of(table)).compacted) == 1
    assert _listing(base) == storage_listing(base)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_the_record_index_is_compacted_with_the_files_partition_and_stays_exact(tmp_path, table_type):
    """Hudi compacts every metadata partition at once: the record index's file groups get
    base files at the same compaction instant, merged as its reader merges (a later record
    replaces, a delete removes), and every live key still maps to its file group."""
    from airflow_hoodie.table.metadata_table.record_index import read_record_index
    from tests.actions.services_fixtures import batch, table_config
    from tests.table.metadata_table.test_record_index import assert_index_exact

    base = tmp_path / "ri"
    cfg = table_config(table_type, **{"hoodie.metadata.record.index.enable": "true", MAX_DELTAS: "3"})
    for t in range(1, 9):
        write_arrow(str(base), batch(range(t, t + 6), t), "upsert", cfg)
        if t % 3 == 0:
            write_arrow(str(base), batch([t + 1], t), "delete", cfg)
        assert_index_exact(base, f"after write {t}")
        assert _listing(base) == storage_listing(base), f"after write {t}"
    compactions = _compactions(base)
    assert len(compactions) >= 2
    timeline = _mdt_timeline(base)
    plan = CompactionPlan.from_bytes(timeline.read_plan(Instant(compactions[-1], Action.COMPACTION, State.REQUESTED)))
    assert {op.partition_path for op in plan.operations} == {"files", "record_index"}
    folder = base / ".hoodie" / "metadata" / "record_index"
    for op in plan.operations:
        if op.partition_path == "record_index":
            hfile = folder / f"{op.file_id}_0-0-0_{compactions[-1]}.hfile"
            ours = HFile(hfile.read_bytes(), str(hfile))
            schema = fastavro.parse_schema(json.loads(ours.schema_json))
            recs = [fastavro.schemaless_reader(io.BytesIO(v), schema) for _, v in ours.records()]
            assert recs and all(r["type"] == 5 and r["recordIndexMetadata"] and r["_hoodie_file_name"] == hfile.name
                                for r in recs)
    assert read_record_index(HoodieTable.load(str(base)))
    _same_rows(base)
