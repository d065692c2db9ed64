"""Write identities in commit extraMetadata: found on the timeline, retries settle first."""

from __future__ import annotations

import json

import pyarrow as pa

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_client import WriteClient
from airflow_hoodie.actions.write_identity import (
    find_write, format_write_id, result_of, settle_previous_try, with_write_id, write_id_key)
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table

CONF = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": ""}
BATCH = pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1], "v": [1, 2, 3]})
TRY = format_write_id("ingest", "scheduled__2024-01-01", "upsert", None)


def _config(write_id: str | None = TRY) -> HoodieConfig:
    return with_write_id(HoodieConfig(CONF), write_id)


def test_identity_is_in_the_commit_and_a_retry_returns_it_without_writing(tmp_path):
    base = str(tmp_path / "t")
    first = write_arrow(base, BATCH, "insert", _config())
    table = HoodieTable.load(base)
    body = json.loads(table.timeline.read_details(first.instant))
    assert body["extraMetadata"]["_airflow.write.id"] == TRY
    assert json.loads(TRY) == {"dag_id": "ingest", "run_id": "scheduled__2024-01-01", "task_id": "upsert",
                               "map_index": -1}

    found = find_write(table.timeline, _config(), TRY)
    assert found.completed is not None and found.completed.timestamp == first.instant and not found.pending
    assert result_of(found, base)["inserts"] == 3

    again = settle_previous_try(base, None, _config(), TRY)
    assert again is not None and again["instant"] == first.instant and again["retry_of_completed_write"]
    assert read_table(base).num_rows == 3
    # another task's identity is not this one
    assert settle_previous_try(base, None, _config(), format_write_id("ingest", "r2", "upsert")) is None


def test_a_retry_rolls_back_its_own_pending_instant_first(tmp_path):
    base = str(tmp_path / "t")
    write_arrow(base, BATCH, "insert", _config(None))
    dead = WriteClient(base, _config(), None, "t")
    dead.load_table()
    instant = dead.start(dead.new_instant_time(), "commit", "insert")
    dead.inflight(instant, "commit", [], "insert")  # the try died here: inflight with its identity
    dead.txn.heartbeats.stop(instant)

    found = find_write(HoodieTable.load(base).timeline, _config(), TRY)
    assert found.completed is None and [i.timestamp for i in found.pending] == [instant]
    assert settle_previous_try(base, None, _config(), TRY) is None
    timeline = HoodieTable.load(base).timeline
    assert timeline.get(instant) is None
    assert [i.action for i in timeline.completed().instants] == ["commit", "rollback"]


def test_prefix_follows_hudis_commitmeta_setting():
    config = HoodieConfig({"hoodie.datasource.write.commitmeta.key.prefix": "x_"})
    assert write_id_key(config) == "x_airflow.write.id"
    assert write_id_key(HoodieConfig({})) == "_airflow.write.id"
