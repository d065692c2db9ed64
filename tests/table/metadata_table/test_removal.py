"""A table with a metadata table, changed by us with ``hoodie.metadata.enable=false``: the
metadata table goes before the change, as a Hudi writer with it disabled drops it, so engines
that list through it never see a stale listing. (Enabled, the default, we keep it true:
tests/table/metadata_table/test_metadata_maintained.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.clean import run_clean
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.normalize import normalize_table

OFF = {"hoodie.metadata.enable": "false"}
CONF = {"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p", **OFF}


def _hudi_rs_with_metadata(base: str) -> list[dict]:
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(base).with_hudi_option("hoodie.metadata.enable", "true").build()
    batches = list(table.read(HudiReadOptions()))
    return normalize_table(pa.Table.from_batches(batches) if batches else None)


def _graft_metadata_table(conformance_next: Path, base: Path) -> None:
    """Give our table the metadata table of a real Hudi table: a listing that is wrong for it."""
    donor = conformance_next / "tables" / "cow" / "v6_autokeys_mdt" / ".hoodie" / "metadata"
    shutil.copytree(donor, base / ".hoodie" / "metadata")
    table = HoodieTable.load(str(base))
    table.update_config({"hoodie.table.metadata.partitions": "files"})


def test_an_upsert_removes_the_metadata_table_before_changing_anything(conformance_next, tmp_path):
    base = tmp_path / "t"
    write_arrow(str(base), pa.table({"id": [1, 2], "ts": [1, 1], "p": ["a", "b"], "v": ["x", "y"]}), "upsert", CONF,
                table_name="t")
    _graft_metadata_table(conformance_next, base)
    assert HoodieTable.load(str(base)).config.get("hoodie.table.metadata.partitions") == "files"
    write_arrow(str(base), pa.table({"id": [2, 3], "ts": [2, 2], "p": ["b", "c"], "v": ["y2", "z"]}), "upsert", CONF)
    table = HoodieTable.load(str(base))
    assert "hoodie.table.metadata.partitions" not in dict(table.config.items())
    assert not (base / ".hoodie" / "metadata").exists()
    ours = normalize_table(read_table(str(base)))
    assert sorted((r["id"], r["v"]) for r in ours) == [(1, "x"), (2, "y2"), (3, "z")]
    assert _hudi_rs_with_metadata(str(base)) == ours


@pytest.mark.parametrize("service", ["clean", "savepoint"])
def test_table_services_remove_a_real_hudi_metadata_table(conformance_next, tmp_path, service):
    base = tmp_path / "t"
    shutil.copytree(conformance_next / "tables" / "cow" / "v6_autokeys_mdt", base)
    for p in base.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    before = normalize_table(read_table(str(base)))
    table = HoodieTable.load(str(base))
    if service == "clean":
        run_clean(table, HoodieConfig(OFF), LocalExecutor())
    else:
        create_savepoint(table, table.timeline.completed_commits().last().timestamp, config=HoodieConfig(OFF))
    table = HoodieTable.load(str(base))
    assert not (table.config.get("hoodie.table.metadata.partitions") or "").strip()
    assert not (base / ".hoodie" / "metadata").exists()
    assert normalize_table(read_table(str(base))) == before
    assert _hudi_rs_with_metadata(str(base)) == before


MOR = {**CONF, "hoodie.table.type": "MERGE_ON_READ"}


def _mor_table_with_metadata_table(conformance_next: Path, base: Path) -> list[dict]:
    """A MOR table with base and log files, given a metadata table; rows expected after a rollback
    of its last write."""
    write_arrow(str(base), pa.table({"id": [1, 2, 3], "ts": [1, 1, 1], "p": ["a", "a", "b"], "v": ["x", "y", "z"]}),
                "upsert", MOR, table_name="t")
    write_arrow(str(base), pa.table({"id": [2, 3], "ts": [2, 2], "p": ["a", "b"], "v": ["y2", "z2"]}), "upsert", MOR)
    after_first_two = normalize_table(read_table(str(base)))
    write_arrow(str(base), pa.table({"id": [1, 4], "ts": [3, 3], "p": ["a", "b"], "v": ["x3", "w"]}), "upsert", MOR)
    _graft_metadata_table(conformance_next, base)
    return after_first_two


@pytest.mark.parametrize("service", ["compaction", "clustering", "rollback", "archive"])
def test_mor_services_leave_no_stale_metadata_listing(conformance_next, tmp_path, service):
    """After each service, our reader and hudi-rs listing through the metadata table (enabled) read
    exactly the rows of a plain listing."""
    from airflow_hoodie.actions import archive as ar
    from airflow_hoodie.actions.clustering import run_clustering
    from airflow_hoodie.actions.compaction import execute_pending_compactions, schedule_compaction
    from airflow_hoodie.actions.rollback import rollback_latest_or

    base = tmp_path / "t"
    after_rollback = _mor_table_with_metadata_table(conformance_next, base)
    # the grafted metadata table lists another table's files: read by listing storage
    before = normalize_table(read_table(str(base), metadata_enable=False))
    table = HoodieTable.load(str(base))
    if service == "compaction":
        schedule_compaction(table, HoodieConfig(OFF), force=True)
        execute_pending_compactions(HoodieTable.load(str(base)), LocalExecutor(), HoodieConfig(OFF))
    elif service == "clustering":
        run_clustering(table, HoodieConfig({"hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30), **OFF}),
                       LocalExecutor())
    elif service == "rollback":
        rollback_latest_or(table, None, HoodieConfig(OFF))
    else:
        ar.run_archive(table, HoodieConfig({ar.MIN_COMMITS: "2", ar.MAX_COMMITS: "3",
                                            "hoodie.cleaner.commits.retained": "1", **OFF}))
    expected = after_rollback if service == "rollback" else before
    table = HoodieTable.load(str(base))
    listed = (table.config.get("hoodie.table.metadata.partitions") or "").strip()
    assert not listed or (base / ".hoodie" / "metadata").exists()
    assert normalize_table(read_table(str(base))) == expected
    assert _hudi_rs_with_metadata(str(base)) == expected
    if service in ("compaction", "clustering"):
        assert len(table.timeline.completed_commits()) == 4  # the service did run
