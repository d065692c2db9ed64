"""A version 6 table records its merge semantics only as a payload class, which its readers
and compaction follow: a table first written under EVENT_TIME_ORDERING must record the payload
that merges by event time, or its MERGE_ON_READ reads let an older update in a log file win
over the newer record in the base file."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table

CONF = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id", "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.time.generator.max_expected_clock_skew_ms": "0"}


def _rows(base: str) -> list[tuple[str, int, str]]:
    t = read_table(base)
    return sorted(zip(t.column("id").to_pylist(), t.column("ts").to_pylist(), t.column("v").to_pylist()))


def test_an_older_log_update_loses_on_read_and_in_compaction(tmp_path) -> None:
    base = str(tmp_path / "t")
    write_arrow(base, pa.table({"id": ["a", "b"], "ts": [5, 5], "v": ["new", "new"]}), "insert", CONF)
    assert HoodieTable.load(base).config.get("hoodie.compaction.payload.class") == \
        "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
    write_arrow(base, pa.table({"id": ["a", "b"], "ts": [3, 7], "v": ["late", "newer"]}), "upsert", CONF)
    assert _rows(base) == [("a", 5, "new"), ("b", 7, "newer")]
    assert c.schedule_compaction(HoodieTable.load(base), HoodieConfig({}), force=True).instant is not None
    c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor())
    assert _rows(base) == [("a", 5, "new"), ("b", 7, "newer")]


def test_a_payload_class_that_contradicts_the_merge_mode_is_refused(tmp_path) -> None:
    conf = {**CONF, "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"}
    with pytest.raises(HoodieConfigError, match="contradicts"):
        write_arrow(str(tmp_path / "t"), pa.table({"id": ["a"], "ts": [5], "v": ["x"]}), "insert", conf)
