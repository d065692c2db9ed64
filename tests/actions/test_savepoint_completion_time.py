"""A savepoint on timeline layout 2 shares the requested time of the delta commit it keeps
and completes later. Taken for that delta commit's completion time, it put the commit's log
after a compaction planned in between: every snapshot read until the compaction ran dropped
the update (a1 read where a2 was written; hudi-rs read a2)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.actions import compaction
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows


@pytest.mark.parametrize("version", ["8", "9"])
def test_a_savepoint_does_not_move_its_delta_commit_past_a_pending_compaction(tmp_path, version: str) -> None:
    conf = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.parquet.small.file.limit": "0", "hoodie.time.generator.max_expected_clock_skew_ms": "0",
            "hoodie.write.table.version": version}
    base = str(tmp_path / "t")
    write_arrow(base, pa.table({"id": ["a", "b"], "p": ["p0", "p0"], "ts": [1, 1], "v": ["a1", "b1"]}), "upsert", conf)
    t2 = write_arrow(base, pa.table({"id": ["a"], "p": ["p0"], "ts": [2], "v": ["a2"]}), "upsert", conf).instant
    assert compaction.schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True).instant
    create_savepoint(HoodieTable.load(base), t2, config=HoodieConfig(conf))
    ours = sorted(tuple(r.values()) for r in read_table(base, columns=["id", "v"]).to_pylist())
    assert ours == [("a", "a2"), ("b", "b1")]
    assert sorted((r["id"], r["v"]) for r in hudi_rs_rows(base)) == ours
