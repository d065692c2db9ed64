"""Hudi 1.x tables (versions 8, 9): read like version 6; every write and service refuses
them before touching anything."""

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


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("name", ["mor/v9_txns_simple_meta", "cow/v8_simplekeygen_hivestyle_no_metafields"])
def test_writes_and_services_refuse_hudi_1x_tables_untouched(conformance_next, tmp_path, name, entry):
    base = copy_conformance_table(conformance_next, name, tmp_path)
    before = _snapshot(base)
    version = HoodieTable.load(str(base)).config.table_version
    with pytest.raises(HoodieNotSupportedError, match=f"table version {version}.*writes and runs table services only"):
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
