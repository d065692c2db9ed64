"""A float column widened to double (Hudi's schema evolution allows it) keeps an update's
double value on MERGE_ON_READ. The log's doubles were cast to the older base file's floats
during the slice merge: 0.1 read as 0.10000000149, 1e300 as inf, and a compaction then wrote
the rounded value into the new base file for every reader."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.actions import compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows


@pytest.mark.parametrize("version", ["6", "9"])
def test_a_widened_update_keeps_its_double_before_and_after_compaction(tmp_path, version: str) -> None:
    conf = {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.parquet.small.file.limit": "0", "hoodie.time.generator.max_expected_clock_skew_ms": "0",
            "hoodie.write.table.version": version}
    base = str(tmp_path / "t")
    write_arrow(base, pa.table({"id": ["a", "b"], "p": ["p0", "p0"], "ts": [1, 1],
                                "f": pa.array([0.5, 1.5], pa.float32())}), "upsert", conf)
    write_arrow(base, pa.table({"id": ["a", "c"], "p": ["p0", "p0"], "ts": [2, 2],
                                "f": pa.array([0.1, 1e300], pa.float64())}), "upsert", conf)  # a: a log update
    want = {"a": 0.1, "b": 1.5, "c": 1e300}
    assert {r["id"]: r["f"] for r in read_table(base, columns=["id", "f"]).to_pylist()} == want
    compaction.schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True)
    compaction.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(conf))
    assert {r["id"]: r["f"] for r in read_table(base, columns=["id", "f"]).to_pylist()} == want
    assert {r["id"]: r["f"] for r in hudi_rs_rows(base)} == want  # what the compaction wrote
