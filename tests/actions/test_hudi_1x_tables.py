"""Maintaining tables Hudi 1.x wrote (table versions 8 and 9): copies of every such table in the
conformance corpus take an upsert, a delete, a compaction (MOR), a clustering and a clean. After
each step our reader and hudi-rs (which lists a v9 table's files through its metadata table,
so a stale one shows at once) read exactly the rows a model of the changes expects, the
table keeps its version, and every instant is written in the 1.x timeline layout."""

from __future__ import annotations

import functools
import io
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.record_index import has_record_index, read_record_index
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.timeline.instant import Instant
from tests.conftest import conformance_next_dir
from tests.table.metadata_table.stats_check import assert_stats_describe_storage
from tests.table.normalize import hudi_rs_rows, normalize_table, normalize_value
from tests.table.table_files import copy_conformance_table

#: every v8/v9 table of the corpus whose metadata-table partitions we keep (the two with
#: secondary indexes are refused untouched: test_table_versions.py); the v8 one keeps no meta
#: fields (hoodie.populate.meta.fields=false): its keys come from its key generator
TABLES = ["cow/v8_simplekeygen_hivestyle_no_metafields", "cow/v9_timebasedkeygen_nonhivestyle",
          "cow/v9_txns_nonpart_nometa", "mor/v9_nonpartitioned_rollback", "mor/v9_txns_complex_nometa",
          "mor/v9_txns_nonpart_nometa"]
#: no clock-skew wait: one process writes
FAST = {"hoodie.time.generator.max_expected_clock_skew_ms": "0"}
META = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name")


def _properties(base: Path) -> dict[str, str]:
    text = (base / ".hoodie" / "hoodie.properties").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def _changed_column(table: pa.Table, skip: set[str]) -> str:
    """A plain string column the test can change (not a key, partition or ordering field)."""
    for f in table.schema:
        if f.name not in skip and not f.name.startswith("_hoodie_") and pa.types.is_string(f.type):
            return f.name
    raise AssertionError("no string column to change")


def _data_rows(rows: list[dict[str, Any]], keys: list[str]) -> dict[str, dict[str, Any]]:
    """Rows by their record-key fields' values (a table without meta fields has no
    ``_hoodie_record_key``), without the meta columns a rewrite changes."""
    return {_key(r, keys): {k: v for k, v in r.items() if k not in META} for r in rows}


def _key(row: dict[str, Any], keys: list[str]) -> str:
    return ",".join(str(row[k]) for k in keys)


@functools.lru_cache(maxsize=1)
def _hudi_schemas() -> dict[str, dict]:
    """The Avro schema Hudi 1.1 embedded in its own completed and inflight instant files of
    each action (file suffix -> schema), from the conformance corpus."""
    out: dict[str, dict] = {}
    root = conformance_next_dir() / "tables"
    for p in sorted(root.glob("*/v9_*/.hoodie/timeline/*")):
        data = p.read_bytes() if p.is_file() else b""
        if data.startswith(b"Obj\x01"):
            out.setdefault(p.name.split(".", 1)[1], fastavro.reader(io.BytesIO(data)).writer_schema)
    return out


def _check_timeline_layout(base: Path) -> None:
    """Every instant file is under .hoodie/timeline; every completed one carries its
    completion time in its name; and every Avro instant file we wrote decodes with the
    schema Hudi 1.1 wrote into its own file of that action (so Hudi 1.x's reader, which
    resolves against its schema, reads ours)."""
    assert not [p.name for p in (base / ".hoodie").iterdir() if p.is_file() and p.name[:1].isdigit()]
    schemas = _hudi_schemas()
    assert {"commit", "deltacommit", "replacecommit", "deltacommit.inflight"} <= set(schemas), sorted(schemas)
    for p in (base / ".hoodie" / "timeline").iterdir():
        inst = Instant.parse(p.name)
        if inst is None:
            continue
        data = p.read_bytes()
        if inst.is_completed:
            assert inst.completion_time and inst.completion_time >= inst.timestamp, p.name
            assert data.startswith(b"Obj\x01"), p.name
        hudi_schema = schemas.get(p.name.split(".", 1)[1])
        if data.startswith(b"Obj\x01") and hudi_schema is not None:
            assert len(list(fastavro.reader(io.BytesIO(data), reader_schema=hudi_schema))) == 1, p.name


def _check_record_index(base: Path) -> None:
    """Where the table keeps a record index, it maps every key to the file group holding it
    (Hudi's writers look keys up there instead of in the files)."""
    table = HoodieTable.load(str(base))
    if not has_record_index(table.config):
        return
    rows = read_table(str(base), columns=["_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"])
    actual = {r["_hoodie_record_key"]: (r["_hoodie_partition_path"], r["_hoodie_file_name"].split("_")[0])
              for r in rows.to_pylist()}
    indexed = {k: tuple(loc) for k, loc in read_record_index(table).items()}
    assert indexed == actual


@pytest.mark.parametrize("name", TABLES)
def test_hudi_1x_table_takes_every_job(conformance_next, tmp_path, name):
    base = copy_conformance_table(conformance_next, name, tmp_path)
    props = _properties(base)
    table = HoodieTable.load(str(base))
    tc = table.config
    keys = tc.record_key_fields or []
    ordering = [f for f in (props.get("hoodie.table.ordering.fields") or props.get("hoodie.table.precombine.field")
                            or "").split(",") if f]
    stored = read_table(str(base))
    assert normalize_table(stored) == hudi_rs_rows(str(base))
    model = _data_rows(normalize_table(stored), keys)
    column = _changed_column(stored, set(keys) | set(tc.partition_fields or []) | set(ordering))
    cfg = {**FAST, "hoodie.datasource.write.recordkey.field": ",".join(keys)}

    def check(step: str) -> None:
        ours = normalize_table(read_table(str(base)))
        assert _data_rows(ours, keys) == model, f"our reader after {step}"
        assert hudi_rs_rows(str(base)) == ours, f"hudi-rs after {step}"
        assert _properties(base)["hoodie.table.version"] == props["hoodie.table.version"]
        _check_timeline_layout(base)
        _check_record_index(base)
        checked = assert_stats_describe_storage(base)  # the column_stats/partition_stats Hudi built, kept true
        if "column_stats" in props.get("hoodie.table.metadata.partitions", ""):
            assert checked["column_stats"] > 0

    # an upsert changing two stored records (their ordering value raised so they win)
    stored_keys = [_key({k: normalize_value(v) for k, v in r.items()}, keys) for r in stored.select(keys).to_pylist()]
    rows = stored.drop_columns([c for c in stored.column_names if c.startswith("_hoodie_")])
    first_two = rows.slice(0, 2)
    first_two = first_two.set_column(first_two.schema.get_field_index(column), column,
                                     pa.array(["changed-0", "changed-1"], pa.string()))
    for f in ordering:
        typ = first_two.schema.field(f).type
        if pa.types.is_integer(typ):
            first_two = first_two.set_column(first_two.schema.get_field_index(f), f,
                                             pa.array([2 ** 50, 2 ** 50], typ))
    write_arrow(str(base), first_two, "upsert", cfg)
    for i, key in enumerate(stored_keys[:2]):
        model[key] = {**model[key], column: f"changed-{i}"}
        for f in ordering:
            if pa.types.is_integer(first_two.schema.field(f).type):
                model[key][f] = 2 ** 50
    check("upsert")

    # a delete of a third record, rolled back, then deleted again
    deleted = model.pop(stored_keys[2])
    write_arrow(str(base), rows.slice(2, 1), "delete", cfg)
    check("delete")
    rolled = rollback_latest_or(HoodieTable.load(str(base)), None, HoodieConfig(FAST))
    model[stored_keys[2]] = deleted
    check("rollback")
    mdt_timeline = base / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    if mdt_timeline.exists():  # Hudi 1.x rolls the metadata table back at the data rollback's time
        assert any(n.name.startswith(f"{rolled['instant']}_") and n.name.endswith(".rollback")
                   for n in mdt_timeline.iterdir())
    # the metadata table compacts here, so archival (which stays behind its latest compaction) has work
    write_arrow(str(base), rows.slice(2, 1), "delete", {**cfg, "hoodie.metadata.compact.max.delta.commits": "2"})
    model.pop(stored_keys[2])
    check("delete")

    if table.is_mor:
        sched = c.schedule_compaction(HoodieTable.load(str(base)), HoodieConfig(FAST), force=True)
        assert sched.instant is not None, sched.reason
        done = c.execute_pending_compactions(HoodieTable.load(str(base)), LocalExecutor(), HoodieConfig(FAST))
        assert done["state"] == "completed", done
        check("compaction")

    res = cu.run_clustering(HoodieTable.load(str(base)), HoodieConfig(FAST), LocalExecutor())
    assert res["state"] == "completed", res
    timeline = sorted(p.name for p in (base / ".hoodie" / "timeline").iterdir())
    assert f"{res['instant']}.clustering.requested" in timeline  # Hudi 1.x's pending clustering action
    assert any(n.startswith(f"{res['instant']}_") and n.endswith(".replacecommit") for n in timeline)
    check("clustering")

    res = cl.run_clean(HoodieTable.load(str(base)), HoodieConfig(
        {**FAST, cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS, cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor())
    assert res["state"] == "completed" and res["files_deleted"] > 0, res
    check("clean")

    # archival into the LSM timeline, behind the metadata table's latest compaction
    res = run_archive(HoodieTable.load(str(base)), HoodieConfig(
        {**FAST, "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1",
         cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS, cl.FILE_VERSIONS_RETAINED: "1"}))
    assert res.get("archived_instants"), res
    history = base / ".hoodie" / "timeline" / "history"
    assert (history / "_version_").exists() and list(history.glob("*_0.parquet"))
    check("archival")


def test_a_merge_on_read_table_without_meta_fields_is_refused_untouched(tmp_path):
    """Its log records would carry no keys: creating one, and writing into one, is refused."""
    cfg = {**FAST, "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.table.type": "MERGE_ON_READ", "hoodie.populate.meta.fields": "false", "hoodie.write.table.version": "9"}
    with pytest.raises(HoodieNotSupportedError, match="MERGE_ON_READ with hoodie.populate.meta.fields=false"):
        write_arrow(str(tmp_path / "t"), pa.table({"id": [1], "ts": [1], "v": ["a"]}), "upsert", cfg, table_name="t")
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").rglob("*.parquet"))
    assert not (tmp_path / "t" / ".hoodie" / "hoodie.properties").exists()


@pytest.mark.parametrize("skew_ms", [0, 30])
def test_every_time_a_1x_write_takes_waits_out_the_configured_clock_skew(tmp_path, monkeypatch, skew_ms):
    """Hudi 1.x's SkewAdjustingTimeGenerator: each instant and completion time is followed by a
    wait of hoodie.time.generator.max_expected_clock_skew_ms, the write's own setting from its
    first instant time on; version 6 tables take no wait."""
    import airflow_hoodie.table.hoodie_table as ht

    waits: list[float] = []
    monkeypatch.setattr(ht.time, "sleep", waits.append)
    cfg = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.time.generator.max_expected_clock_skew_ms": str(skew_ms)}
    rows = pa.table({"id": [1, 2], "ts": [1, 1], "v": ["a", "b"]})
    write_arrow(str(tmp_path / "v6"), rows, "upsert", cfg, table_name="t")
    assert waits == []
    write_arrow(str(tmp_path / "v9"), rows, "upsert", {**cfg, "hoodie.write.table.version": "9"}, table_name="t")
    if skew_ms == 0:
        assert waits == []
    else:  # the instant time, the metadata table's and the write's completion at least
        assert len(waits) >= 3 and set(waits) == {skew_ms / 1000}
