"""column_stats, partition_stats (v9) and bloom_filters on tables we write, v6 and v9 alike:
built when their ``hoodie.metadata.index.*.enable`` key is true, kept true through upserts,
compaction, clustering, clean, rollback, savepoint and restore (after every step they describe
exactly the files on storage), and dropped when the key is false."""

from __future__ import annotations

import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions import restore as rs
from airflow_hoodie.actions import savepoint as sp
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.partitions import listed_partitions
from tests.actions.services_fixtures import Model, batch, load, snapshot, table_config, write
from tests.actions.table_versions import table_version  # noqa: F401 - the fixture
from airflow_hoodie.table.read import read_table
from tests.table.metadata_table.stats_check import assert_stats_describe_storage
from tests.table.normalize import hudi_rs_rows, normalize_table

pytestmark = pytest.mark.usefixtures("table_version")

STATS = {"hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.index.partition.stats.enable": "true",
         "hoodie.metadata.index.bloom.filter.enable": "true"}


def _expected_partitions(version: int) -> set[str]:
    return {"column_stats", "bloom_filters"} | ({"partition_stats"} if version >= 8 else set())


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_stats_stay_true_through_every_action(tmp_path, table_type, table_version):  # noqa: F811
    base = str(tmp_path / "t")
    cfg = table_config(table_type, **STATS)
    model = Model()
    for t in range(1, 4):
        b = batch(range(0, 8), t)
        write(base, b, cfg)
        model.upsert(b)
    assert _expected_partitions(table_version) <= set(listed_partitions(load(base)))
    counts = assert_stats_describe_storage(base)
    assert counts["column_stats"] > 0 and counts["bloom_filters"] > 0
    if table_type == "MERGE_ON_READ":
        c.schedule_compaction(load(base), HoodieConfig(cfg), force=True)
        c.execute_pending_compactions(load(base), LocalExecutor(), HoodieConfig(cfg))
        assert_stats_describe_storage(base)
    cu.run_clustering(load(base), HoodieConfig(cfg), LocalExecutor())
    assert_stats_describe_storage(base)
    cl.run_clean(load(base), HoodieConfig({**cfg, cl.POLICY: "KEEP_LATEST_FILE_VERSIONS",
                                           cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor())
    assert_stats_describe_storage(base)
    kept = write(base, batch(range(0, 4), 5), cfg)
    model.upsert(batch(range(0, 4), 5))
    sp.create_savepoint(load(base), kept)
    last = write(base, batch(range(0, 3), 9), cfg)
    rollback_latest_or(load(base), last, HoodieConfig(cfg))
    assert_stats_describe_storage(base)
    write(base, batch(range(0, 3), 10), cfg)
    rs.restore_to(load(base), kept, HoodieConfig(cfg))
    assert_stats_describe_storage(base)
    assert snapshot(base) == model.table()
    # hudi-rs (which lists a v9 table through its metadata table) reads the same rows
    assert hudi_rs_rows(base) == normalize_table(read_table(base))


def test_stats_partitions_are_dropped_when_disabled(tmp_path, table_version):  # noqa: F811
    base = str(tmp_path / "t")
    cfg = table_config("COPY_ON_WRITE", **STATS)
    write(base, batch(range(0, 4), 1), cfg)
    assert "column_stats" in listed_partitions(load(base))
    # a write that does not name the keys keeps them true
    write(base, batch(range(0, 4), 2), table_config("COPY_ON_WRITE"))
    assert _expected_partitions(table_version) <= set(listed_partitions(load(base)))
    assert_stats_describe_storage(base)
    write(base, batch(range(0, 4), 3), table_config("COPY_ON_WRITE", **{
        "hoodie.metadata.index.column.stats.enable": "false", "hoodie.metadata.index.bloom.filter.enable": "false"}))
    listed = set(listed_partitions(HoodieTable.load(base)))
    assert not listed & {"column_stats", "partition_stats", "bloom_filters"}
    assert not (tmp_path / "t" / ".hoodie" / "metadata" / "column_stats").exists()


def test_stats_survive_metadata_table_compaction(tmp_path, table_version):  # noqa: F811
    """The metadata table's compaction merges the statistics partitions into new base HFiles
    (tombstones dropped); they still describe the files on storage."""
    base = str(tmp_path / "t")
    cfg = table_config("MERGE_ON_READ", **STATS, **{"hoodie.metadata.compact.max.delta.commits": "2"})
    for t in range(1, 6):
        write(base, batch(range(0, 8), t), cfg)
    cl.run_clean(load(base), HoodieConfig({**cfg, cl.POLICY: "KEEP_LATEST_FILE_VERSIONS",
                                           cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor())
    write(base, batch(range(0, 8), 9), cfg)
    mdt = tmp_path / "t" / ".hoodie" / "metadata"
    compacted = [p.name for p in (mdt / "column_stats").iterdir() if p.name.endswith(".hfile")]
    assert len(compacted) > 2  # the build's base files and at least one compaction's
    assert_stats_describe_storage(base)
