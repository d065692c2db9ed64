"""Table versions: Hudi 1.x tables (8, 9) read like version 6; versions we do not write, and
metadata-table indexes we cannot keep, are refused before anything is touched."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.clean import run_clean
from airflow_hoodie.actions.clustering import run_clustering
from airflow_hoodie.actions.compaction import schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.restore import restore_to
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.properties import compute_checksum
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.timeline.instant import Action
from tests.table.table_files import copy_conformance_table


def _snapshot(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def _last_commit(base: Path) -> str:
    return HoodieTable.load(str(base)).timeline.completed_commits().last().timestamp


ENTRY_POINTS = {
    "upsert": lambda b: write_arrow(str(b), pa.table({"txn_id": ["X"], "txn_ts": [1], "region": ["us"]}), "upsert",
                                    {"hoodie.datasource.write.recordkey.field": "txn_id"}),
    "compaction": lambda b: schedule_compaction(HoodieTable.load(str(b)), HoodieConfig({}), force=True),
    "clustering": lambda b: run_clustering(HoodieTable.load(str(b)), HoodieConfig({}), LocalExecutor()),
    "clean": lambda b: run_clean(HoodieTable.load(str(b)), HoodieConfig({}), LocalExecutor()),
    "rollback": lambda b: rollback_latest_or(HoodieTable.load(str(b)), None),
    "savepoint": lambda b: create_savepoint(HoodieTable.load(str(b)), _last_commit(b)),
    "restore": lambda b: restore_to(HoodieTable.load(str(b)), _last_commit(b)),
    "archive": lambda b: run_archive(HoodieTable.load(str(b)), HoodieConfig({})),
}


def _set_version(base: Path, version: int) -> None:
    """Rewrite a copy's hoodie.properties to another table version, checksum included."""
    path = base / ".hoodie" / "hoodie.properties"
    props = dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#"))
    props["hoodie.table.version"] = str(version)
    props["hoodie.table.checksum"] = str(compute_checksum(props))
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("version", [5, 7, 10])
def test_writes_and_services_refuse_other_table_versions_untouched(conformance_next, tmp_path, version, entry):
    base = copy_conformance_table(conformance_next, "cow/v9_txns_nonpart_nometa", tmp_path)
    _set_version(base, version)
    before = _snapshot(base)
    with pytest.raises(HoodieNotSupportedError, match=f"table version {version}.*nothing was"):
        ENTRY_POINTS[entry](base)
    assert _snapshot(base) == before


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_writes_and_services_refuse_a_secondary_index_they_cannot_keep_untouched(conformance_next, tmp_path, entry):
    """Secondary indexes of versions V1 and V2 are kept true (tests/actions/test_secondary_index_kept.py);
    one of another version is refused, by its name and version, before anything changes."""
    base = copy_conformance_table(conformance_next, "mor/v9_txns_simple_meta", tmp_path)
    defs = base / ".hoodie" / ".index_defs" / "index.json"
    defs.write_text(defs.read_text().replace('"sourceFields" : [ "merchant_name" ],\n      "indexOptions" : { },\n'
                                             '      "version" : "V2"', '"sourceFields" : [ "merchant_name" ],\n'
                                             '      "indexOptions" : { },\n      "version" : "V3"'))
    assert '"V3"' in defs.read_text()
    row = read_table(str(base)).slice(0, 1)
    row = row.drop_columns([c for c in row.column_names if c.startswith("_hoodie_")])
    before = _snapshot(base)
    with pytest.raises(HoodieNotSupportedError, match="secondary_index_merchant_idx.*V3"):
        if entry == "upsert":  # a whole row, so the write gets as far as the metadata table
            write_arrow(str(base), row, "upsert", {"hoodie.datasource.write.recordkey.field": "txn_id"})
        else:
            ENTRY_POINTS[entry](base)
    assert _snapshot(base) == before


def test_hudi_1x_timeline_reads_completion_times_and_clustering(conformance_next):
    table = HoodieTable.load(str(conformance_next / "tables" / "mor" / "v9_txns_simple_meta"))
    tl = table.timeline
    assert tl.tracks_completion_time
    first = tl.completed_commits().first()
    assert first.timestamp == "20260307162557587" and first.completion_time == "20260307162601961"
    # the Avro commit metadata of Hudi 1.x reads like Hudi 0.x's JSON
    assert b"partitionToWriteStats" in tl.read_details(first)
    replace = tl.filter(actions=Action.REPLACE_COMMIT).completed().instants
    assert replace and all(i.completion_time for i in replace)
