"""MOR upsert, compaction and rollback on a table Hudi 1.1 wrote (table version 9).

The table is conformance-next's ``v9_txns_nonpart_nometa`` copied to tmp: two live file
groups (``ec4ffa51...`` holding TXN-001..014 after a clustering, ``318f797b...`` holding
TXN-015/016). Each test checks the files on disk (Hudi 1.x's log naming), our reader and
hudi-rs. Until the table layer writes version 9 by default, the tests allow it by
monkeypatching ``WRITABLE_TABLE_VERSIONS``.
"""

from __future__ import annotations

import pathlib
import shutil
import stat

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import make_rollback_plan, rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.file_group.file_group import LogFile
from airflow_hoodie.table.file_group.file_naming import parse_log_file_name
from airflow_hoodie.table.file_group.log_file_layout import LogFileLayout
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.log_block import HeaderKey
from airflow_hoodie.table.log.log_reader import read_log_blocks_from_bytes
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.timeline import commit_serde_v2
from tests.table.normalize import hudi_rs_rows, normalize_table

TABLE = "v9_txns_nonpart_nometa"
BIG_GROUP = "ec4ffa51-0b14-46af-b117-a34ebc7a95ea-0"
SMALL_GROUP = "318f797b-9c1e-4e35-9c55-b17c1b8ca9a8-0"
CONFIG = {
    "hoodie.table.name": "v9_txns_mor_nonpart_nometa",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "txn_id",
    "hoodie.datasource.write.precombine.field": "txn_ts",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
    "hoodie.datasource.write.partitionpath.field": "",
    "hoodie.metadata.enable": "false",
}


@pytest.fixture
def v9(conformance_next: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.setattr("airflow_hoodie.table.table_format.WRITABLE_TABLE_VERSIONS", (6, 8, 9))
    dst = tmp_path / TABLE
    shutil.copytree(conformance_next / "tables" / "mor" / TABLE, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return dst


def _data(base: pathlib.Path) -> pa.Table:
    t = read_table(str(base))
    return t.drop_columns([n for n in t.column_names if n.startswith("_hoodie")])


def _changed(base: pathlib.Path, keys: list[str], account: str, ts: int) -> pa.Table:
    rows = _data(base).filter(pc.is_in(pc.field("txn_id"), pa.array(keys)))
    assert rows.num_rows == len(keys)
    rows = rows.set_column(rows.schema.get_field_index("account_id"), "account_id",
                           pa.array([account] * rows.num_rows, pa.string()))
    return rows.set_column(rows.schema.get_field_index("txn_ts"), "txn_ts",
                           pa.array([ts] * rows.num_rows, pa.int64()))


def _accounts(base: pathlib.Path) -> dict[str, str]:
    t = read_table(str(base)).select(["txn_id", "account_id"]).to_pylist()
    return {r["txn_id"]: r["account_id"] for r in t}


def _files(base: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in base.iterdir() if p.is_file() and ".hoodie_partition" not in p.name}


def _logs_of(base: pathlib.Path, instant: str) -> list[str]:
    out = []
    for name in _files(base):
        parsed = parse_log_file_name(name)
        if parsed is not None and parsed.base_instant == instant:
            out.append(name)
    return sorted(out)


def _assert_readers_agree(base: pathlib.Path) -> None:
    assert normalize_table(read_table(str(base))) == hudi_rs_rows(str(base))


def test_upsert_and_delete_write_one_log_per_delta_commit(v9: pathlib.Path) -> None:
    before = _files(v9)
    accounts = _accounts(v9)
    r1 = write_arrow(str(v9), _changed(v9, ["TXN-001", "TXN-015"], "ACC-Z", 1_800_000_000_000), "upsert", CONFIG)
    r2 = write_arrow(str(v9), _changed(v9, ["TXN-003"], "ACC-Y", 1_800_000_000_001), "upsert", CONFIG)
    r3 = write_arrow(str(v9), _data(v9).filter(pc.equal(pc.field("txn_id"), "TXN-016")), "delete", CONFIG)
    after = _files(v9)
    # nothing Hudi wrote was touched: every new delta commit has files of its own
    assert all(after[n] == b for n, b in before.items())
    new = sorted(set(after) - set(before))
    assert new == sorted(_logs_of(v9, r1.instant) + _logs_of(v9, r2.instant) + _logs_of(v9, r3.instant))
    assert {parse_log_file_name(n).file_id for n in _logs_of(v9, r1.instant)} == {BIG_GROUP, SMALL_GROUP}
    assert {parse_log_file_name(n).file_id for n in _logs_of(v9, r2.instant)} == {BIG_GROUP}
    assert {parse_log_file_name(n).file_id for n in _logs_of(v9, r3.instant)} == {SMALL_GROUP}
    for name in new:
        parsed = parse_log_file_name(name)
        assert parsed.version == 1
        blocks = read_log_blocks_from_bytes(after[name], name)
        assert {b.instant_time for b in blocks} == {parsed.base_instant}
        assert all(set(b.headers) == {HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA} for b in blocks)
    # the delta write stats as Hudi 1.x writes them
    (completed,) = (v9 / ".hoodie" / "timeline").glob(f"{r1.instant}_*.deltacommit")
    stats = [st for _, st in commit_serde_v2.deserialize(completed.read_bytes()).iter_write_stats()]
    assert sorted(st.file_name for st in stats) == _logs_of(v9, r1.instant)
    for st in stats:
        assert st.prev_commit == r1.instant and st.base_file == "" and st.log_files == [st.file_name]
        assert st.log_version == 1
    expected = dict(accounts, **{"TXN-001": "ACC-Z", "TXN-015": "ACC-Z", "TXN-003": "ACC-Y"})
    del expected["TXN-016"]
    assert _accounts(v9) == expected
    _assert_readers_agree(v9)


def test_compaction_plans_and_merges_the_v9_logs(v9: pathlib.Path) -> None:
    r1 = write_arrow(str(v9), _changed(v9, ["TXN-001", "TXN-015"], "ACC-Z", 1_800_000_000_000), "upsert", CONFIG)
    r2 = write_arrow(str(v9), _changed(v9, ["TXN-004"], "ACC-Y", 1_800_000_000_001), "upsert", CONFIG)
    want = _accounts(v9)
    sched = c.schedule_compaction(HoodieTable.load(str(v9)), HoodieConfig({}), force=True)
    assert sched.instant is not None
    ops = {op["fileId"]: op for op in sched.plan["operations"]}
    assert set(ops) == {BIG_GROUP, SMALL_GROUP}
    # each operation: the slice's base file and its delta commits' own log files
    assert ops[BIG_GROUP]["baseInstantTime"] == "20260307135937430"
    assert ops[BIG_GROUP]["deltaFilePaths"] == sorted(
        n for n in _logs_of(v9, r1.instant) + _logs_of(v9, r2.instant) if n.startswith("." + BIG_GROUP))
    assert ops[SMALL_GROUP]["baseInstantTime"] == "20260307135937880"
    assert ops[SMALL_GROUP]["deltaFilePaths"] == [n for n in _logs_of(v9, r1.instant) if n.startswith("." + SMALL_GROUP)]
    res = c.execute_pending_compactions(HoodieTable.load(str(v9)), LocalExecutor())
    assert res["state"] == "completed" and res["operations"] == 2
    ts = sched.instant.timestamp
    assert sorted(p.name.split("_")[0] for p in v9.glob(f"*_{ts}.parquet")) == sorted([BIG_GROUP, SMALL_GROUP])
    assert _accounts(v9) == want
    ro = read_table(str(v9), query_type="read_optimized").select(["txn_id", "account_id"]).to_pylist()
    assert {r["txn_id"]: r["account_id"] for r in ro} == want
    _assert_readers_agree(v9)
    # a later delta commit starts the new slice at the compaction's base file
    r3 = write_arrow(str(v9), _changed(v9, ["TXN-015"], "ACC-X", 1_800_000_000_002), "upsert", CONFIG)
    view = HoodieTable.load(str(v9)).file_system_view()
    latest = {s.file_id: s for s in view.latest_file_slices()}
    assert latest[SMALL_GROUP].base_instant == ts
    assert [lf.base_instant for lf in latest[SMALL_GROUP].log_files] == [r3.instant]
    assert _accounts(v9)["TXN-015"] == "ACC-X"
    _assert_readers_agree(v9)


class Crash(Exception):
    pass


class FailsAfterFirst:
    """An executor whose second file-group write task fails after the first wrote its files
    (other maps, such as the index lookup, run normally)."""

    def map(self, fn, items):
        items = list(items)
        if not (items and isinstance(items[0], tuple) and type(items[0][0]).__name__ == "FileGroupTask"):
            return [fn(i) for i in items]
        assert len(items) == 2
        fn(items[0])
        raise Crash("task failed")


def _rollback_metadata(base: pathlib.Path) -> list[dict]:
    table = HoodieTable.load(str(base))
    return [avro_codec.deserialize(table.timeline.read_details(r), "HoodieRollbackMetadata")
            for r in table.timeline.filter(actions="rollback").completed().instants]


def test_failed_delta_commit_rolled_back_by_deleting_its_logs(v9: pathlib.Path) -> None:
    """Hudi 1.x rolls a failed delta commit back by deleting the log files it named (they
    hold nothing else): no rollback command block, no new log file."""
    before = _files(v9)
    accounts = _accounts(v9)
    with pytest.raises(Crash):
        write_arrow(str(v9), _changed(v9, ["TXN-001", "TXN-015"], "BAD", 1_900_000_000_000), "upsert", CONFIG,
                    executor=FailsAfterFirst())
    (md,) = _rollback_metadata(v9)
    (failed,) = md["commitsRollback"]
    assert HoodieTable.load(str(v9)).timeline.get(failed) is None
    # the one log file the first task wrote is gone, and nothing else was added or changed
    assert _files(v9) == before
    (pm,) = md["partitionMetadata"].values()
    assert len(pm["successDeleteFiles"]) == 1
    deleted = parse_log_file_name(pm["successDeleteFiles"][0].rsplit("/", 1)[-1])
    assert deleted is not None and deleted.base_instant == failed
    assert pm["rollbackLogFiles"] == {} and pm["logFilesFromFailedCommit"] == {}
    assert md["totalFilesDeleted"] == 1
    assert _accounts(v9) == accounts
    _assert_readers_agree(v9)


def test_completed_delta_commit_rolled_back(v9: pathlib.Path) -> None:
    accounts = _accounts(v9)
    before = _files(v9)
    r = write_arrow(str(v9), _changed(v9, ["TXN-001", "TXN-015"], "ACC-Z", 1_800_000_000_000), "upsert", CONFIG)
    logs = _logs_of(v9, r.instant)
    assert len(logs) == 2
    plan = make_rollback_plan(HoodieTable.load(str(v9)), r.instant, "deltacommit")
    (req,) = plan["RollbackRequests"]
    assert sorted(p.rsplit("/", 1)[-1] for p in req["filesToBeDeleted"]) == logs
    assert req["fileId"] == "" and req["latestBaseInstant"] == "" and req["logBlocksToBeDeleted"] == {}
    out = rollback_latest_or(HoodieTable.load(str(v9)), None)
    assert out["rolled_back"] == r.instant
    assert _files(v9) == before
    assert _accounts(v9) == accounts
    _assert_readers_agree(v9)
    # writing goes on: the next delta commit names its own log again
    r2 = write_arrow(str(v9), _changed(v9, ["TXN-015"], "ACC-W", 1_800_000_000_003), "upsert", CONFIG)
    assert [parse_log_file_name(n).file_id for n in _logs_of(v9, r2.instant)] == [SMALL_GROUP]
    assert _accounts(v9)["TXN-015"] == "ACC-W"
    _assert_readers_agree(v9)


def _log(instant: str, version: int = 1) -> LogFile:
    return LogFile(f"/t/.f-0_{instant}.log.{version}_0-1-2", f".f-0_{instant}.log.{version}_0-1-2", "f-0",
                   instant, version, "0-1-2", 10, "")


def test_compaction_takes_only_logs_completed_before_its_instant() -> None:
    """Hudi 1.x's plan keeps a log when its delta commit completed before the compaction
    instant: a delta commit still pending (or completing after the plan) stays for the
    slice the compaction opens. Version 6 takes every log of the slice."""
    logs = [_log("100"), _log("200"), _log("300"), _log("050")]
    done = {"100": "150", "200": "450"}  # 200 completed after the plan at 400; 300 pending
    v9_kept = LogFileLayout(9).logs_to_compact(logs, "400", done, first_active="090")
    # 050 predates the active timeline: an archived, completed delta commit
    assert [lf.base_instant for lf in v9_kept] == ["100", "050"]
    assert LogFileLayout(6).logs_to_compact(logs, "400", done) == logs


def test_partitioned_complex_key_table(conformance_next: pathlib.Path, tmp_path: pathlib.Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The same file layer on ``v9_txns_complex_nometa`` (partitioned by region, complex
    keys): one log per touched group, in its partition folder, named by the delta commit;
    compaction merges them; a rolled-back delta commit leaves no file."""
    monkeypatch.setattr("airflow_hoodie.table.table_format.WRITABLE_TABLE_VERSIONS", (6, 8, 9))
    base = tmp_path / "complex"
    shutil.copytree(conformance_next / "tables" / "mor" / "v9_txns_complex_nometa", base)
    for p in [base, *base.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    cfg = dict(CONFIG, **{"hoodie.datasource.write.recordkey.field": "txn_id,account_id",
                          "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
                          "hoodie.datasource.write.partitionpath.field": "region",
                          "hoodie.datasource.write.hive_style_partitioning": "true"})
    data = _data(base)
    # one row of each region
    picked = pa.concat_tables([data.filter(pc.equal(pc.field("region"), r)).slice(0, 1) for r in ("us", "eu", "apac")])
    changed = picked.set_column(picked.schema.get_field_index("currency"), "currency", pa.array(["ZZZ"] * 3))
    changed = changed.set_column(changed.schema.get_field_index("txn_ts"), "txn_ts",
                                 pa.array([1_900_000_000_000] * 3, pa.int64()))
    r = write_arrow(str(base), changed, "upsert", cfg)
    logs = sorted(str(p.relative_to(base)) for p in base.rglob(f".*_{r.instant}.log.1_*"))
    assert [log.split("/")[0] for log in logs] == ["region=apac", "region=eu", "region=us"]
    _assert_readers_agree(base)
    sched = c.schedule_compaction(HoodieTable.load(str(base)), HoodieConfig({}), force=True)
    planned = sorted(f"{op['partitionPath']}/{n}" for op in sched.plan["operations"] for n in op["deltaFilePaths"])
    assert planned == logs
    c.execute_pending_compactions(HoodieTable.load(str(base)), LocalExecutor())
    got = read_table(str(base)).select(["txn_id", "currency"]).to_pylist()
    assert sum(1 for row in got if row["currency"] == "ZZZ") == 3
    _assert_readers_agree(base)
    before = sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and ".hoodie" not in p.parts)
    r2 = write_arrow(str(base), changed.slice(0, 1), "upsert", cfg)
    rollback_latest_or(HoodieTable.load(str(base)), None)
    after = sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and ".hoodie" not in p.parts)
    assert after == before and not any(r2.instant in f for f in after)
    _assert_readers_agree(base)
