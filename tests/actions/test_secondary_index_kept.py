"""Secondary indexes kept exact by every job, on table versions 9 (copies of the tables Hudi 1.1
wrote, V2 indexes) and 8 (tables our writer made, V1 indexes), copy-on-write and
merge-on-read: upserts that change indexed values (escaped characters included), inserts, a
hard and a soft delete, an insert_overwrite, rollbacks (one past a metadata-table compaction),
compaction, clustering, a restore to a savepoint and a clean, with the
metadata table compacting every second delta commit. After every step each index record sits
in the file group Hudi's mapping gives it, and the live entries are exactly those of the rows
hudi-rs and our reader read (:func:`secondary_index_fixtures.check_indexes`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.metadata_table import secondary_index_writer as siw
from airflow_hoodie.actions.metadata_table.metadata_compaction import run_table_services
from airflow_hoodie.actions.restore import restore_to
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.settings.metadata_table import MetadataTableSettings
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.secondary_index import (
    secondary_index_definitions,
)
from airflow_hoodie.table.read import read_table
from tests.actions.secondary_index_fixtures import (
    AWKWARD,
    FAST,
    check_indexes,
    v8_table_with_index,
)
from tests.table.normalize import hudi_rs_rows, normalize_table
from tests.table.table_files import copy_conformance_table

TABLES = ["v9-cow", "v9-mor", "v8-cow", "v8-mor"]


def _table(conformance_next: Path, tmp_path: Path, which: str) -> Path:
    version, kind = which.split("-")
    if version == "v9":
        return copy_conformance_table(conformance_next, f"{kind}/v9_txns_simple_meta", tmp_path)
    return v8_table_with_index(tmp_path, "MERGE_ON_READ" if kind == "mor" else "COPY_ON_WRITE")


def _data(rows: pa.Table) -> pa.Table:
    """The data columns of stored rows, with ``_hoodie_is_deleted`` false (every write carries
    it: the soft delete adds it to the table's schema)."""
    rows = rows.drop_columns([n for n in rows.column_names if n.startswith("_hoodie_")])
    return rows.append_column("_hoodie_is_deleted", pa.repeat(pa.scalar(False), rows.num_rows))


def _with(rows: pa.Table, column: str, values: list) -> pa.Table:
    return rows.set_column(rows.schema.get_field_index(column), column, pa.array(values, rows.schema.field(column).type))


def _later(rows: pa.Table, ts: int) -> pa.Table:
    """The rows with an ordering value that wins over the stored one."""
    return _with(rows, "txn_ts", [ts] * rows.num_rows)


def _services(base: Path, step: str) -> None:
    table = HoodieTable.load(str(base))
    if table.is_mor:
        sched = c.schedule_compaction(table, HoodieConfig(FAST), force=True)
        assert sched.instant is not None, sched.reason
        done = c.execute_pending_compactions(HoodieTable.load(str(base)), LocalExecutor(), HoodieConfig(FAST))
        assert done["state"] == "completed", done
        check_indexes(base, f"{step}: compaction")
    res = cu.run_clustering(HoodieTable.load(str(base)), HoodieConfig(FAST), LocalExecutor())
    assert res["state"] == "completed", res
    check_indexes(base, f"{step}: clustering")


@pytest.mark.parametrize("which", TABLES)
def test_every_job_keeps_the_secondary_indexes_exact(conformance_next, tmp_path, which, monkeypatch):
    base = _table(conformance_next, tmp_path, which)
    cfg = {**FAST, "hoodie.datasource.write.recordkey.field": "txn_id"}
    start = check_indexes(base, "start")
    stored = read_table(str(base)).sort_by("_hoodie_record_key")
    rows = _data(stored)
    ts = 2 ** 50  # above every stored ordering value

    # values change (escaped characters, a null, a date), and new keys come in
    changed = _with(_later(rows.slice(0, 3), ts), "merchant_name", AWKWARD[:2] + [None])
    changed = _with(changed, "txn_date", [changed["txn_date"][1].as_py(), changed["txn_date"][0].as_py(), None])
    inserted = _with(_with(_later(rows.slice(0, 2), ts), "txn_id", ["NEW-1", "NEW$2\\"]), "merchant_name", AWKWARD[2:])
    write_arrow(str(base), pa.concat_tables([changed, inserted]), "upsert", cfg)
    assert check_indexes(base, "upsert")["secondary_index_merchant_idx"] == start["secondary_index_merchant_idx"] + 2
    savepointed = HoodieTable.load(str(base)).timeline.completed_commits().last().timestamp
    create_savepoint(HoodieTable.load(str(base)), savepointed)
    now = {r["txn_id"]: r["merchant_name"] for r in read_table(str(base)).to_pylist()}
    assert [now[k] for k in changed["txn_id"].to_pylist()] == AWKWARD[:2] + [None]

    # a hard delete, then a soft one (_hoodie_is_deleted)
    write_arrow(str(base), rows.slice(3, 1), "delete", cfg)
    check_indexes(base, "hard delete")
    soft = _with(_later(rows.slice(4, 1), ts), "_hoodie_is_deleted", [True])
    write_arrow(str(base), soft, "upsert", cfg)
    after_deletes = check_indexes(base, "soft delete")
    assert after_deletes["secondary_index_merchant_idx"] == start["secondary_index_merchant_idx"]

    # a write rolled back: its entries go, the ones it replaced come back
    write_arrow(str(base), _with(_later(rows.slice(5, 2), ts + 1), "merchant_name", ["rolled", "back"]), "upsert", cfg)
    check_indexes(base, "upsert to roll back")
    rollback_latest_or(HoodieTable.load(str(base)), None, HoodieConfig(FAST))
    check_indexes(base, "rollback")

    _services(base, "first")

    # insert_overwrite of one partition: the replaced rows' entries go
    region = rows["region"][0].as_py()
    fresh = _with(_later(rows.filter(pa.compute.equal(rows["region"], region)).slice(0, 1), ts + 2), "txn_id", ["OVR-1"])
    write_arrow(str(base), _with(fresh, "merchant_name", ["over$written"]), "insert_overwrite", cfg)
    check_indexes(base, "insert_overwrite")
    again = _data(read_table(str(base)).sort_by("_hoodie_record_key").slice(0, 2))
    write_arrow(str(base), _with(_later(again, ts + 3), "merchant_name", ["once more", AWKWARD[0]]), "upsert", cfg)
    check_indexes(base, "upsert before compaction")
    _services(base, "second")

    # a write whose metadata delta commit a metadata-table compaction merged, rolled back:
    # the index is reconciled with the rows
    write_arrow(str(base), _with(_later(again, ts + 4), "merchant_name", ["merged", "away"]), "upsert",
                {**cfg, "hoodie.metadata.compact.max.delta.commits": "100"})
    check_indexes(base, "upsert merged away")
    every = MetadataTableSettings.for_change(HoodieConfig({**FAST, "hoodie.metadata.compact.max.delta.commits": "1"}))
    table = HoodieTable.load(str(base))
    assert run_table_services(table, table.metadata_table(), every).compacted
    check_indexes(base, "metadata compaction")
    scans: list[str] = []
    real = siw.reconcile_secondary_indexes
    monkeypatch.setattr(siw, "reconcile_secondary_indexes", lambda *a, **k: scans.append("full") or real(*a, **k))
    rollback_latest_or(HoodieTable.load(str(base)), None, HoodieConfig(FAST))
    assert scans, "the rolled-back write's index records were merged by a metadata-table compaction"
    check_indexes(base, "rollback past a metadata compaction")

    # a restore to the savepoint taken after the first upsert
    restore_to(HoodieTable.load(str(base)), savepointed, HoodieConfig(FAST))
    check_indexes(base, "restore")
    res = cl.run_clean(HoodieTable.load(str(base)), HoodieConfig(
        {**FAST, cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS, cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor())
    assert res.get("state", "completed") == "completed", res  # (nothing to clean on some tables)
    check_indexes(base, "clean")
    mdt_commits = [p.name for p in (base / ".hoodie" / "metadata" / ".hoodie" / "timeline").iterdir()
                   if p.name.endswith(".commit")]
    assert mdt_commits, "the metadata table compacted"
    bases = list((base / ".hoodie" / "metadata" / "secondary_index_merchant_idx").glob("*.hfile"))
    assert any(p.name.split("_")[-1] > "00000000000000010" for p in bases), "its compaction wrote index base files"


def test_a_secondary_index_of_another_version_is_refused_by_its_name(tmp_path):
    base = v8_table_with_index(tmp_path, "COPY_ON_WRITE")
    path = base / ".hoodie" / ".index_defs" / "index.json"
    path.write_text(path.read_text().replace('"version": "V1"}', '"version": "V9"}', 1))
    with pytest.raises(HoodieNotSupportedError, match="secondary_index_merchant_idx.*V9"):
        write_arrow(str(base), read_table(str(base)).slice(0, 1), "upsert",
                    {**FAST, "hoodie.datasource.write.recordkey.field": "txn_id"})


def test_the_v8_fixture_builds_exact_v1_indexes(tmp_path):
    base = v8_table_with_index(tmp_path, "COPY_ON_WRITE", groups=4)
    table = HoodieTable.load(str(base))
    assert [(d.name, d.version) for d in secondary_index_definitions(table)] == [
        ("secondary_index_merchant_idx", "V1"), ("secondary_index_txn_date_idx", "V1")]
    assert check_indexes(base, "built") == {"secondary_index_merchant_idx": 12, "secondary_index_txn_date_idx": 12}


@pytest.mark.parametrize("which", ["v9-mor", "v8-cow"])
def test_a_rollback_takes_its_entries_with_its_metadata_delta_commit(conformance_next, tmp_path, which, monkeypatch):
    """With no metadata-table compaction since the rolled-back write, the rollback rolls its
    metadata delta commit back (Hudi 1.x's way), index records included: no full scan."""
    base = _table(conformance_next, tmp_path, which)
    cfg = {**FAST, "hoodie.metadata.compact.max.delta.commits": "100", "hoodie.datasource.write.recordkey.field": "txn_id"}
    before = check_indexes(base, "start")
    rows = _data(read_table(str(base)).sort_by("_hoodie_record_key"))
    new = _with(_with(_later(rows.slice(0, 1), 2 ** 50), "txn_id", ["GONE$1"]), "merchant_name", ["gone"])
    changed = _with(_later(rows.slice(1, 2), 2 ** 50), "merchant_name", ["x$y", None])
    write_arrow(str(base), pa.concat_tables([new, changed]), "upsert", cfg)
    check_indexes(base, "upsert")
    scans: list[str] = []
    real = siw.reconcile_secondary_indexes
    monkeypatch.setattr(siw, "reconcile_secondary_indexes", lambda *a, **k: scans.append("full") or real(*a, **k))
    rollback_latest_or(HoodieTable.load(str(base)), None, HoodieConfig(cfg))
    assert check_indexes(base, "rollback") == before
    assert scans == []


def test_an_index_on_a_column_whose_text_we_do_not_know_stops_the_job_before_any_change(tmp_path):
    base = v8_table_with_index(tmp_path, "COPY_ON_WRITE")
    cfg = {**FAST, "hoodie.datasource.write.recordkey.field": "txn_id"}
    scored = _data(read_table(str(base)).slice(0, 1)).drop_columns(["_hoodie_is_deleted"])
    scored = scored.append_column("score", pa.array([1.5]))
    write_arrow(str(base), scored, "upsert", cfg)  # the table gets a double column
    path = base / ".hoodie" / ".index_defs" / "index.json"
    path.write_text(path.read_text().replace('"sourceFields": ["merchant_name"]', '"sourceFields": ["score"]'))
    before = sorted(p.name for p in (base / ".hoodie").rglob("*"))
    with pytest.raises(HoodieNotSupportedError, match="secondary_index_merchant_idx.*score.*double.*nothing was changed"):
        write_arrow(str(base), scored, "upsert", cfg)
    assert sorted(p.name for p in (base / ".hoodie").rglob("*")) == before


def test_a_table_without_record_keys_is_refused_before_any_change(tmp_path):
    """Every entry names a record key; a table that stores none cannot keep its index."""
    base = v8_table_with_index(tmp_path, "COPY_ON_WRITE")
    rows = _data(read_table(str(base)).slice(0, 1)).drop_columns(["_hoodie_is_deleted"])
    HoodieTable.load(str(base)).update_config({"hoodie.populate.meta.fields": "false"})
    before = sorted(p.name for p in (base / ".hoodie").rglob("*"))
    with pytest.raises(HoodieNotSupportedError, match="secondary_index_merchant_idx.*populate.meta.fields=false"):
        write_arrow(str(base), rows, "upsert", {**FAST, "hoodie.datasource.write.recordkey.field": "txn_id"})
    assert sorted(p.name for p in (base / ".hoodie").rglob("*")) == before


def test_secondary_index_enable_false_deletes_the_indexes_as_hudi_does(conformance_next, tmp_path):
    base = copy_conformance_table(conformance_next, "cow/v9_txns_simple_meta", tmp_path)
    rows = _data(read_table(str(base)).slice(0, 1)).drop_columns(["_hoodie_is_deleted"])
    write_arrow(str(base), _later(rows, 2 ** 50), "upsert", {**FAST, "hoodie.datasource.write.recordkey.field": "txn_id",
                                                              "hoodie.metadata.index.secondary.enable": "false"})
    listed = HoodieTable.load(str(base)).config.get("hoodie.table.metadata.partitions")
    assert "secondary_index" not in listed and "record_index" in listed
    assert not list((base / ".hoodie" / "metadata").glob("secondary_index_*"))
    assert normalize_table(read_table(str(base))) == hudi_rs_rows(str(base))


@pytest.mark.parametrize("compact_every", ["1", "100"])
def test_a_write_killed_after_its_metadata_commit_leaves_no_entry_once_rolled_back(conformance_next, tmp_path,
                                                                                  compact_every):
    """The dead write's index records went in with its metadata delta commit; the next write
    rolls it back, and the index then holds exactly the rows (whether a metadata-table
    compaction merged them first, ``compact_every=1``, or not)."""
    from tests.actions.test_attack_crash_steps import expire_heartbeats, run_killed

    base = copy_conformance_table(conformance_next, "mor/v9_txns_simple_meta", tmp_path)
    cfg = {**FAST, "hoodie.datasource.write.recordkey.field": "txn_id",
           "hoodie.metadata.compact.max.delta.commits": compact_every}
    rows = _data(read_table(str(base)).sort_by("_hoodie_record_key"))
    dead = _with(_with(_later(rows.slice(0, 2), 2 ** 50), "txn_id", ["TXN-001", "DEAD$1"]), "merchant_name",
                 ["dead", "dead"])

    def completing_the_data_write(name: str, path: str) -> bool:
        return name == "create_if_absent" and "/.hoodie/metadata/" not in path and path.endswith(".deltacommit")

    assert run_killed(lambda: write_arrow(str(base), dead, "upsert", cfg), completing_the_data_write)
    expire_heartbeats(str(base))
    assert write_arrow(str(base), _with(_later(rows.slice(3, 1), 2 ** 50), "merchant_name", ["next"]), "upsert",
                       cfg).rolled_back
    check_indexes(base, "the rollback of a write killed after its metadata commit")
    write_arrow(str(base), _later(rows.slice(4, 1), 2 ** 51), "upsert", cfg)
    check_indexes(base, "the write after")
