"""Attack: the retry of a "roll back the latest write" task (spark_jobs/rollback.py without
--instant-time, rollback_latest_or(table, None)) whose first try was killed after the target's
instant files were gone but before the rollback instant completed. The retry must finish that
pending rollback, not take the write before it for "the latest write" and roll it back too:
that write's rows would be lost without anybody having asked for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_identity import format_write_id, with_write_id
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_crash_steps import expire_heartbeats, run_killed
from tests.actions.test_attack_lake_sequences import _one, _simple_config, assert_metadata_describes_storage, lake_rows
from tests.table.normalize import hudi_rs_rows


def _completing_the_data_rollback(name: str, path: str) -> bool:
    """The creation of the data timeline's completed ``.rollback`` file (the metadata table's
    own rollback completes earlier)."""
    return name == "create_if_absent" and "/.hoodie/metadata/" not in path and path.endswith(".rollback")


def _values(base: str) -> dict[str, str]:
    return {r["id"]: r["v"] for r in read_table(base).to_pylist()}


@pytest.mark.parametrize("version,table_type", [(6, "COPY_ON_WRITE"), (9, "MERGE_ON_READ")])
def test_the_retry_of_a_killed_rollback_of_the_latest_write_rolls_back_nothing_more(
        tmp_path: Path, version: int, table_type: str) -> None:
    base = str(tmp_path / "t")
    cfg = _simple_config(version, table_type)
    write_arrow(base, lake_rows([{"id": "a", "p": "p0", "ts": 1, "v": "a1", "d": None},
                                 {"id": "b", "p": "p0", "ts": 1, "v": "b1", "d": None}]), "upsert", cfg)
    write_arrow(base, _one("a", 2, "a2"), "upsert", cfg)
    write_arrow(base, _one("b", 3, "b3"), "upsert", cfg)
    assert run_killed(lambda: rollback_latest_or(HoodieTable.load(base), None, HoodieConfig(cfg)),
                      _completing_the_data_rollback)
    expire_heartbeats(base)
    assert _values(base) == {"a": "a2", "b": "b1"}  # b3's write is undone, its rollback pending
    rollback_latest_or(HoodieTable.load(base), None, HoodieConfig(cfg))  # the Airflow retry
    assert _values(base) == {"a": "a2", "b": "b1"}  # read a1, b1: the write of a2 rolled back too
    assert {r["v"] for r in hudi_rs_rows(base)} == {"a2", "b1"}
    assert not [i for i in HoodieTable.load(base).reload_timeline().instants if not i.is_completed]
    assert_metadata_describes_storage(base, "the retry of a killed rollback")


@pytest.mark.parametrize("version,table_type", [(6, "COPY_ON_WRITE"), (9, "MERGE_ON_READ")])
def test_the_retry_of_a_rollback_killed_after_it_completed_rolls_back_nothing_more(
        tmp_path: Path, version: int, table_type: str) -> None:
    """C11b: the job tags its rollback with the caller's write identity (--write-id, as the
    operators pass it); the retry finds its own completed rollback and reports it."""
    base = str(tmp_path / "t")
    cfg = _simple_config(version, table_type)
    write_arrow(base, lake_rows([{"id": "a", "p": "p0", "ts": 1, "v": "a1", "d": None},
                                 {"id": "b", "p": "p0", "ts": 1, "v": "b1", "d": None}]), "upsert", cfg)
    write_arrow(base, _one("a", 2, "a2"), "upsert", cfg)
    b3 = write_arrow(base, _one("b", 3, "b3"), "upsert", cfg).instant
    task = with_write_id(HoodieConfig(cfg), format_write_id("dag", "run-1", "roll_back_latest"))
    assert run_killed(lambda: rollback_latest_or(HoodieTable.load(base), None, task),
                      lambda name, path: name == "delete" and "/.heartbeat/" in path)  # after the .rollback completed
    assert _values(base) == {"a": "a2", "b": "b1"}
    retry = rollback_latest_or(HoodieTable.load(base), None, task)  # the Airflow retry (the task never reported)
    assert _values(base) == {"a": "a2", "b": "b1"}  # read a1, b1
    assert retry["already_rolled_back"] and retry["rolled_back"] == b3
    assert HoodieTable.load(base).timeline.get(retry["instant"]).is_completed


def test_another_task_rolling_back_the_latest_write_is_a_new_request(tmp_path: Path) -> None:
    """The record is the task's own: another task (another identity) rolls back the write before."""
    base = str(tmp_path / "t")
    cfg = _simple_config(6)
    write_arrow(base, _one("a", 1, "a1"), "upsert", cfg)
    write_arrow(base, _one("a", 2, "a2"), "upsert", cfg)
    write_arrow(base, _one("a", 3, "a3"), "upsert", cfg)
    first = with_write_id(HoodieConfig(cfg), format_write_id("dag", "run-1", "roll_back_latest"))
    second = with_write_id(HoodieConfig(cfg), format_write_id("dag", "run-2", "roll_back_latest"))
    rollback_latest_or(HoodieTable.load(base), None, first)
    assert _values(base) == {"a": "a2"}
    assert rollback_latest_or(HoodieTable.load(base), None, first).get("already_rolled_back")  # its retry
    assert _values(base) == {"a": "a2"}
    rollback_latest_or(HoodieTable.load(base), None, second)
    assert _values(base) == {"a": "a1"}


def test_a_resumed_version_6_rollback_leaves_no_unlisted_log_file(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _simple_config(6, "MERGE_ON_READ")
    write_arrow(base, lake_rows([{"id": "a", "p": "p0", "ts": 1, "v": "a1", "d": None},
                                 {"id": "b", "p": "p1", "ts": 1, "v": "b1", "d": None}]), "upsert", cfg)
    two_logs = lake_rows([{"id": "a", "p": "p0", "ts": 2, "v": "a2", "d": None},
                          {"id": "b", "p": "p1", "ts": 2, "v": "b2", "d": None}])
    write_arrow(base, two_logs, "upsert", cfg)
    # killed once the metadata table mirrored the rollback, while the data timeline still lists the target
    assert run_killed(lambda: rollback_latest_or(HoodieTable.load(base), None, HoodieConfig(cfg)),
                      lambda name, path: name == "delete" and "/.hoodie/metadata/" not in path
                      and path.endswith(".deltacommit.inflight"))
    expire_heartbeats(base)
    rollback_latest_or(HoodieTable.load(base), None, HoodieConfig(cfg))  # the retry resumes the plan
    assert _values(base) == {"a": "a1", "b": "b1"}
    assert_metadata_describes_storage(base, "a resumed rollback")  # storage: .log.3 files the MDT never listed


def test_a_rollback_whose_delete_fails_does_not_complete_leaving_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_hoodie.errors import HoodieIOError
    from airflow_hoodie.table.storage.storage import Storage

    base = str(tmp_path / "t")
    cfg = _simple_config(6)
    write_arrow(base, _one("a", 1, "a1"), "upsert", cfg)
    target = write_arrow(base, _one("z", 1, "z1", p="p1"), "upsert", cfg).instant  # a new file group in p1
    real_delete = Storage.delete
    failed: list[str] = []

    def throttled_once(self: Storage, path: str, *args: object, **kwargs: object) -> bool:
        if "/p1/" in path and path.endswith(".parquet") and not failed:
            failed.append(path)
            raise HoodieIOError(f"Cannot delete {path!r}: 503 Slow Down")  # what Storage.delete raises on S3
        return real_delete(self, path, *args, **kwargs)

    monkeypatch.setattr(Storage, "delete", throttled_once)
    try:
        rollback_latest_or(HoodieTable.load(base), None, HoodieConfig(cfg))
    except HoodieIOError:
        monkeypatch.setattr(Storage, "delete", real_delete)
        rollback_latest_or(HoodieTable.load(base), target, HoodieConfig(cfg))  # the retry finishes the plan
    monkeypatch.setattr(Storage, "delete", real_delete)
    assert failed
    assert not Path(failed[0]).exists()  # the rollback completed with the target's base file still there
    assert _values(base) == {"a": "a1"}
