"""Inputs that used to lose, shift or duplicate rows without an error (found by attack).

Each test fails on the code before the fix; the Spark paths of items 1, 3, 4 and 5 are in
tests/spark/test_data_safety_spark.py."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.transaction.local_process import this_process
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_client import WriteClient
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieError,
    HoodieKeyError,
    HoodieNotSupportedError,
    HoodieSchemaError,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table, table_schema
from tests.actions.test_write import conf
from tests.table.normalize import hudi_rs_rows, normalize_table

TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]


def rows(ids, p="a", ts=1, v="x"):
    return pa.table({"id": list(ids), "ts": [ts] * len(ids), "p": [p] * len(ids), "v": [v] * len(ids)})


def files_under(base: Path) -> list[str]:
    return sorted(str(f.relative_to(base)) for f in base.rglob("*") if f.is_file()) if base.exists() else []


# 1 and 7 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["x/", "x//y", "/x", "x\ny", "x\ty", "a\x7f"])
def test_a_partition_path_with_an_empty_segment_or_control_character_is_refused(tmp_path, bad):
    """``x/`` wrote its file as ``x//<file>`` while the markers said ``x/<file>``, so the
    commit deleted the new file as an orphan; ``\\n`` made the table unreadable to hudi-rs."""
    base = tmp_path / "t"
    write_arrow(str(base), rows([1, 2]), "upsert", conf(), table_name="t")
    before = files_under(base)
    with pytest.raises(HoodieKeyError, match="nothing was written"):
        write_arrow(str(base), rows([3], p=bad), "upsert", conf())
    assert files_under(base) == before
    assert sorted(read_table(str(base)).column("id").to_pylist()) == [1, 2]


# 2 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("table_type", TYPES)
def test_a_lost_partition_marker_hides_no_rows_and_duplicates_no_key(tmp_path, table_type):
    """Hudi's index lists the batch's partitions directly (HoodieIndexUtils /
    BaseFileUtils), and every write handle re-creates a missing marker
    (HoodiePartitionMetadata.trySave): a directory of data files is a partition whether or
    not its ``.hoodie_partition_metadata`` survived."""
    base = tmp_path / "t"
    write_arrow(str(base), pa.concat_tables([rows([1, 2, 3], "x"), rows([4, 5, 6], "y")]), "upsert",
                conf(table_type), table_name="t")
    (base / "x" / ".hoodie_partition_metadata").unlink()
    assert sorted(read_table(str(base)).column("id").to_pylist()) == [1, 2, 3, 4, 5, 6]
    write_arrow(str(base), rows([2], "x", ts=2, v="new"), "upsert", conf(table_type))
    got = read_table(str(base), columns=["id", "v"]).to_pylist()
    assert sorted(r["id"] for r in got) == [1, 2, 3, 4, 5, 6]  # key 2 once, not twice
    assert {r["id"]: r["v"] for r in got}[2] == "new"
    assert (base / "x" / ".hoodie_partition_metadata").exists()  # the commit wrote it again
    assert normalize_table(read_table(str(base))) == hudi_rs_rows(str(base))


# 3 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("table_type", TYPES)
def test_a_null_ordering_value_is_refused_on_both_table_types(tmp_path, table_type):
    """Hudi 0.14 reads the ordering value of every record it combines
    (HoodieCreateRecordUtils: upserts always, inserts with hoodie.combine.before.insert) and
    refuses a null one in BaseAvroPayload's constructor ("Ordering value is null for
    record"). Accepted, COW kept the null row (file_group_write) and MOR the ts=5 row
    (record_merger treats null as oldest)."""
    base = tmp_path / "t"
    write_arrow(str(base), rows([1], ts=5, v="five"), "upsert", conf(table_type), table_name="t")
    bad = pa.table({"id": [1], "ts": pa.array([None], pa.int64()), "p": ["a"], "v": ["null"]})
    with pytest.raises(HoodieKeyError, match="'ts'.*is null in 1 of 1 records"):
        write_arrow(str(base), bad, "upsert", conf(table_type))
    assert read_table(str(base), columns=["id", "ts", "v"]).to_pylist() == [{"id": 1, "ts": 5, "v": "five"}]
    # a delete carries no ordering value in Hudi either
    write_arrow(str(base), bad, "delete", conf(table_type))
    assert read_table(str(base)).num_rows == 0


# 4 ------------------------------------------------------------------------------------------
def test_naive_timestamps_are_refused_by_a_table_of_utc_instants(tmp_path):
    """09:00 local went in as 09:00 UTC: every timestamp type passed as compatible."""
    base = tmp_path / "t"
    at = dt.datetime(2024, 1, 2, 9, 0)
    zoned = rows([1]).append_column("at", pa.array([at.replace(tzinfo=dt.timezone.utc)], pa.timestamp("us", tz="UTC")))
    write_arrow(str(base), zoned, "upsert", conf(), table_name="t")
    naive = rows([1], ts=2).append_column("at", pa.array([at], pa.timestamp("us")))
    with pytest.raises(HoodieSchemaError, match="without time zone.*UTC instants"):
        write_arrow(str(base), naive, "upsert", conf())
    # a zoned batch in another zone is the same instants: accepted
    ny = rows([1], ts=3).append_column(
        "at", pa.array([at.replace(tzinfo=dt.timezone.utc)], pa.timestamp("us", tz="UTC")).cast(
            pa.timestamp("us", tz="America/New_York")))
    write_arrow(str(base), ny, "upsert", conf())
    assert read_table(str(base), columns=["at"]).column("at").to_pylist()[0].replace(tzinfo=None) == at


# 5 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("table_type", TYPES)
def test_a_batch_without_a_stored_column_is_refused_unless_nulls_are_asked_for(tmp_path, table_type):
    """Hudi 0.14 HoodieSparkSqlWriter.deduceWriterSchema: by default the writer schema is the
    batch's, and checkValidEvolution refuses one that lacks a table column; with
    hoodie.write.set.null.for.missing.columns=true the missing columns are reconciled as
    nulls (AvroSchemaEvolutionUtils.reconcileSchema);
    hoodie.datasource.write.schema.allow.auto.evolution.column.drop drops them from the
    schema, which we do not support."""
    base = tmp_path / "t"
    write_arrow(str(base), rows([1, 2], v="kept"), "upsert", conf(table_type), table_name="t")
    no_v = rows([1], ts=2).drop_columns(["v"])
    with pytest.raises(HoodieSchemaError, match="lacks the table's column.*v.*set.null.for.missing.columns"):
        write_arrow(str(base), no_v, "upsert", conf(table_type))
    with pytest.raises(HoodieNotSupportedError, match="allow.auto.evolution.column.drop"):
        write_arrow(str(base), no_v, "upsert", conf(
            table_type, **{"hoodie.datasource.write.schema.allow.auto.evolution.column.drop": "true"}))
    assert {r["id"]: r["v"] for r in read_table(str(base), columns=["id", "v"]).to_pylist()} == {1: "kept", 2: "kept"}
    write_arrow(str(base), no_v, "upsert", conf(table_type, **{"hoodie.write.set.null.for.missing.columns": "true"}))
    assert {r["id"]: r["v"] for r in read_table(str(base), columns=["id", "v"]).to_pylist()} == {1: None, 2: "kept"}


# 6 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("table_type", TYPES)
def test_an_int_column_widens_to_long_as_avro_promotes(tmp_path, table_type):
    """The message said int -> long is allowed, and the batch was refused."""
    base = tmp_path / "t"
    first = rows([1, 2]).append_column("n", pa.array([1, 2], pa.int32()))
    write_arrow(str(base), first, "upsert", conf(table_type), table_name="t")
    wide = rows([2, 3], ts=2).append_column("n", pa.array([2**40, 3], pa.int64()))
    write_arrow(str(base), wide, "upsert", conf(table_type))
    table = HoodieTable.load(str(base))
    assert table_schema(table, table.timeline).field("n").type == pa.int64()
    got = {r["id"]: r["n"] for r in read_table(str(base), columns=["id", "n"]).to_pylist()}
    assert got == {1: 1, 2: 2**40, 3: 3}
    assert normalize_table(read_table(str(base))) == hudi_rs_rows(str(base))
    # narrowing stays refused, with a message that names the allowed promotions
    with pytest.raises(HoodieSchemaError, match="only widen as Avro promotes"):
        write_arrow(str(base), rows([4], ts=3).append_column("n", pa.array(["x"], pa.string())), "upsert",
                    conf(table_type))


# 8 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["../x", "x/"])
def test_a_refused_first_write_leaves_no_table_behind(tmp_path, bad):
    base = tmp_path / "t"
    with pytest.raises(HoodieKeyError, match="nothing was written"):
        write_arrow(str(base), rows([1], p=bad), "upsert", conf(), table_name="t")
    assert files_under(base) == []
    write_arrow(str(base), rows([1]), "upsert", conf(), table_name="t")  # and the good write creates it
    assert read_table(str(base)).num_rows == 1


# 9 ------------------------------------------------------------------------------------------
OCC = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
       "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
       "hoodie.write.lock.wait_time_ms": "200", "hoodie.write.lock.num_retries": "2",
       "hoodie.write.lock.client.num_retries": "0"}


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_killed_holders_file_lock_is_broken_at_once(tmp_path):
    """expire=0 (the default) never released it: every later writer failed after minutes."""
    base = tmp_path / "t"
    write_arrow(str(base), rows([1]), "upsert", conf(**OCC), table_name="t")
    lock = base / ".hoodie" / "lock"
    lock.write_text(json.dumps({**this_process(), "pid": _dead_pid(), "token": "killed"}))
    started = time.monotonic()
    write_arrow(str(base), rows([2]), "upsert", conf(**OCC))
    assert time.monotonic() - started < 30
    assert not lock.exists()
    assert sorted(read_table(str(base)).column("id").to_pylist()) == [1, 2]


def test_a_live_holders_file_lock_is_named_with_the_file_to_delete(tmp_path):
    base = tmp_path / "t"
    write_arrow(str(base), rows([1]), "upsert", conf(**OCC), table_name="t")
    lock = base / ".hoodie" / "lock"
    lock.write_text(json.dumps({**this_process(), "lockCreateTime": "now", "token": "live"}))
    with pytest.raises(HoodieError, match=f"pid {os.getpid()}.*if that task is dead.*delete .*{lock}"):
        write_arrow(str(base), rows([2]), "upsert", conf(**OCC))


def test_a_pending_write_whose_heartbeat_is_gone_is_rolled_back_at_once(tmp_path):
    """Hudi judges a missing heartbeat expired (HoodieHeartbeatUtils: last beat 0). We
    counted it live for the whole expiry window, so after a fault whose rollback failed too
    the next write was refused for about 120 s."""
    base = tmp_path / "t"
    write_arrow(str(base), rows([1]), "upsert", conf(), table_name="t")
    client = WriteClient(str(base), HoodieConfig(conf()))
    client.load_table()
    orphan = client.start(client.new_instant_time(), "commit", "upsert")
    client.txn.heartbeats.stop(orphan)  # what the failed cleanup left: no heartbeat, instant pending
    started = time.monotonic()
    result = write_arrow(str(base), rows([2]), "upsert", conf())
    assert time.monotonic() - started < 30
    assert result.rolled_back == [orphan]
    assert HoodieTable.load(str(base)).timeline.get(orphan) is None
    assert sorted(read_table(str(base)).column("id").to_pylist()) == [1, 2]


def test_the_writes_own_cause_comes_first_when_its_cleanup_fails_too(tmp_path, monkeypatch):
    """The user saw "Cannot delete .heartbeat/...: Permission denied" instead of "No space
    left on device"."""
    import airflow_hoodie.actions.write as write_module
    from airflow_hoodie.actions import write_client

    base = tmp_path / "t"
    write_arrow(str(base), rows([1]), "upsert", conf(), table_name="t")

    def full_disk(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    def cleanup_fails(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied: cannot delete the heartbeat")

    monkeypatch.setattr(write_module.ArrowWriteEngine, "write", full_disk)
    monkeypatch.setattr(write_client, "rollback_instant", cleanup_fails)
    with pytest.raises(OSError, match="No space left on device") as caught:
        write_arrow(str(base), rows([2]), "upsert", conf())
    assert any("Permission denied" in n and "failed too" in n for n in caught.value.__notes__)


def test_a_broken_hoodie_properties_names_no_backup_that_does_not_exist(tmp_path):
    base = tmp_path / "t"
    write_arrow(str(base), rows([1]), "upsert", conf(), table_name="t")
    props = base / ".hoodie" / "hoodie.properties"
    props.write_text("hoodie.table.type=COPY_ON_WRITE\n")
    assert not (base / ".hoodie" / "hoodie.properties.backup").exists()
    with pytest.raises(HoodieConfigError) as caught:
        HoodieTable.load(str(base))
    assert "hoodie.properties.backup" not in str(caught.value)
    assert "copy kept outside the table" in str(caught.value)


def test_a_file_lock_broken_after_its_expiry_stops_its_holder_before_completing(tmp_path):
    """With hoodie.write.lock.filesystem.expire set, another task breaks a lock held past it;
    the old holder must notice before it completes, never after."""
    from airflow_hoodie.actions.transaction import lock_provider as lp
    from airflow_hoodie.errors import HoodieLockError

    base = tmp_path / "t"
    write_arrow(str(base), rows([1]), "upsert", conf(**OCC), table_name="t")
    holder = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(conf(**OCC))), str(base))
    assert holder.try_lock(1)
    holder.ensure_held()
    (base / ".hoodie" / "lock").write_text(json.dumps({**this_process(), "token": "the-breaker"}))
    with pytest.raises(HoodieLockError, match="taken over"):
        holder.ensure_held()
