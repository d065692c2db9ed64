"""Hudi 1.1's partitioned record index (``indexOptions.isPartitioned=true`` for
``record_index`` in ``index.json``) is not one we keep: every job refuses such a table by
name before it changes anything, and none writes it (or builds a record index against that
definition) as a global one."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.clean import run_clean
from airflow_hoodie.actions.clustering import run_clustering
from airflow_hoodie.actions.compaction import schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.metadata_table.maintenance import unmaintained_partitions
from airflow_hoodie.actions.restore import restore_to
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import ArrowWriteEngine, write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConcurrentWriterError, HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.partitions import listed_partitions
from airflow_hoodie.table.metadata_table.record_index import is_partitioned_record_index
from airflow_hoodie.table.read import read_table
from tests.table.table_files import copy_conformance_table

TABLE = "mor/v9_nonpartitioned_rollback"  # MOR, with a record index: every service applies
KEYS = {"hoodie.datasource.write.recordkey.field": "txn_id"}
REFUSAL = "partitioned record index.*isPartitioned=true.*Nothing was changed"


def _snapshot(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def _partitioned_copy(conformance_next: Path, tmp_path: Path, partitioned: bool = True) -> Path:
    base = copy_conformance_table(conformance_next, TABLE, tmp_path)
    path = base / ".hoodie" / ".index_defs" / "index.json"
    defs = json.loads(path.read_text())
    defs["indexDefinitions"]["record_index"]["indexOptions"]["isPartitioned"] = str(partitioned).lower()
    path.write_text(json.dumps(defs, indent=2))
    return base


def _row(base: Path) -> pa.Table:
    """A whole row of the table, so an upsert gets as far as the metadata table."""
    row = read_table(str(base)).slice(0, 1)
    return row.drop_columns([c for c in row.column_names if c.startswith("_hoodie_")])


def _last_commit(base: Path) -> str:
    return HoodieTable.load(str(base)).timeline.completed_commits().last().timestamp


ENTRY_POINTS = {
    "upsert": lambda b: write_arrow(str(b), _row(b), "upsert", KEYS),
    "compaction": lambda b: schedule_compaction(HoodieTable.load(str(b)), HoodieConfig({}), force=True),
    "clustering": lambda b: run_clustering(HoodieTable.load(str(b)), HoodieConfig({}), LocalExecutor()),
    "clean": lambda b: run_clean(HoodieTable.load(str(b)), HoodieConfig({}), LocalExecutor()),
    "rollback": lambda b: rollback_latest_or(HoodieTable.load(str(b)), None),
    "savepoint": lambda b: create_savepoint(HoodieTable.load(str(b)), _last_commit(b)),
    "restore": lambda b: restore_to(HoodieTable.load(str(b)), _last_commit(b)),
    "archive": lambda b: run_archive(HoodieTable.load(str(b)), HoodieConfig({})),
}


def test_the_index_definition_decides_whether_the_record_index_is_partitioned(conformance_next, tmp_path):
    assert not is_partitioned_record_index(HoodieTable.load(str(conformance_next / "tables" / TABLE)))
    table = HoodieTable.load(str(_partitioned_copy(conformance_next, tmp_path)))
    assert is_partitioned_record_index(table)
    # the commit path's check (another writer made it partitioned while a task ran) sees it too
    assert unmaintained_partitions(table) == ["record_index"]


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_job_refuses_a_partitioned_record_index_by_name_untouched(conformance_next, tmp_path, entry):
    base = _partitioned_copy(conformance_next, tmp_path)
    row = _row(base) if entry == "upsert" else None
    before = _snapshot(base)
    with pytest.raises(HoodieNotSupportedError, match=REFUSAL):
        if row is not None:
            write_arrow(str(base), row, "upsert", KEYS)
        else:
            ENTRY_POINTS[entry](base)
    assert _snapshot(base) == before


def test_the_same_table_with_a_global_record_index_is_written(conformance_next, tmp_path):
    base = _partitioned_copy(conformance_next, tmp_path, partitioned=False)
    write_arrow(str(base), _row(base), "upsert", KEYS)
    assert "record_index" in listed_partitions(HoodieTable.load(str(base)))


def test_no_global_record_index_is_built_against_a_partitioned_definition(conformance_next, tmp_path):
    base = _partitioned_copy(conformance_next, tmp_path)
    row = _row(base)
    # dropping the whole metadata table is the way out the refusal names
    write_arrow(str(base), row, "upsert", {**KEYS, "hoodie.metadata.enable": "false"})
    assert not (base / ".hoodie" / "metadata").exists()
    before = _snapshot(base)
    with pytest.raises(HoodieNotSupportedError, match=REFUSAL):
        write_arrow(str(base), row, "upsert", {**KEYS, "hoodie.metadata.record.index.enable": "true"})
    assert _snapshot(base) == before
    # without the record index the metadata table comes back, and no record index with it
    write_arrow(str(base), row, "upsert", KEYS)
    table = HoodieTable.load(str(base))
    assert "files" in listed_partitions(table) and "record_index" not in listed_partitions(table)
    assert is_partitioned_record_index(table)


def test_a_record_index_made_partitioned_meanwhile_stops_the_commit(conformance_next, tmp_path, monkeypatch):
    """A Hudi 1.1 writer may rebuild the record index as a partitioned one while our task
    runs: the commit stops, and nothing of the task reaches the record index."""
    base = _partitioned_copy(conformance_next, tmp_path, partitioned=False)
    row = _row(base)
    record_index = base / ".hoodie" / "metadata" / "record_index"
    before = {p.name: p.read_bytes() for p in record_index.iterdir()}
    real_write = ArrowWriteEngine.write

    def write_then_hudi_makes_it_partitioned(self, tasks, insert_plan, ctx):
        stats = real_write(self, tasks, insert_plan, ctx)
        path = base / ".hoodie" / ".index_defs" / "index.json"
        path.write_text(path.read_text().replace('"isPartitioned": "false"', '"isPartitioned": "true"'))
        return stats

    monkeypatch.setattr(ArrowWriteEngine, "write", write_then_hudi_makes_it_partitioned)
    with pytest.raises(HoodieConcurrentWriterError, match="record_index"):
        write_arrow(str(base), row, "upsert", KEYS)
    table = HoodieTable.load(str(base))
    assert is_partitioned_record_index(table)
    assert not table.timeline.pending().instants  # rolled back
    assert {p.name: p.read_bytes() for p in record_index.iterdir()} == before
