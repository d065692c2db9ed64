"""Attack: a restore killed half way. Between two of its rollbacks the table shows a state that
never existed (the newest writes undone, older ones not yet); until the restore is run again
nothing may write on top of it, or the write copies rows of writes the restore then undoes
(and the restore can no longer roll them back). Hudi refuses every new commit while a restore
is requested or inflight (BaseHoodieWriteClient.startCommit: "Found pending restore")."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions import restore as restore_module
from airflow_hoodie.actions.restore import restore_to
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_crash_steps import Killed
from tests.actions.test_attack_lake_sequences import _one, _simple_config, lake_rows
from tests.table.normalize import hudi_rs_rows


def _values(base: str) -> dict[str, str]:
    return {r["id"]: r["v"] for r in read_table(base).to_pylist()}


@pytest.mark.parametrize("version,table_type", [(6, "COPY_ON_WRITE"), (9, "MERGE_ON_READ")])
def test_a_restore_killed_between_two_rollbacks_holds_writes_back_until_it_is_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int, table_type: str) -> None:
    base = str(tmp_path / "t")
    cfg = _simple_config(version, table_type)
    write_arrow(base, lake_rows([{"id": "a", "p": "p0", "ts": 1, "v": "a1", "d": None},
                                 {"id": "b", "p": "p0", "ts": 1, "v": "b1", "d": None}]), "upsert", cfg)
    t2 = write_arrow(base, _one("a", 2, "a2"), "upsert", cfg).instant
    create_savepoint(HoodieTable.load(base), t2, config=HoodieConfig(cfg))
    write_arrow(base, _one("a", 3, "a3"), "upsert", cfg)
    write_arrow(base, _one("b", 4, "b4"), "upsert", cfg)
    rollbacks = []
    real = restore_module.rollback_instant

    def dies_at_the_second(*args: object, **kwargs: object) -> str:
        rollbacks.append(args[1])
        if len(rollbacks) == 2:
            raise Killed("the restore task died between two rollbacks")
        return real(*args, **kwargs)

    monkeypatch.setattr(restore_module, "rollback_instant", dies_at_the_second)
    with pytest.raises(Killed):
        restore_to(HoodieTable.load(base), t2, HoodieConfig(cfg))
    monkeypatch.setattr(restore_module, "rollback_instant", real)
    assert _values(base) == {"a": "a3", "b": "b1"}  # half restored: b4 undone, a3 not yet
    with pytest.raises(HoodieError, match="restore"):
        write_arrow(base, _one("c", 5, "c5"), "upsert", cfg)  # went through, on top of a3
    restore_to(HoodieTable.load(base), t2, HoodieConfig(cfg))  # the Airflow retry finishes the plan
    assert _values(base) == {"a": "a2", "b": "b1"}
    assert {r["v"] for r in hudi_rs_rows(base)} == {"a2", "b1"}
    write_arrow(base, _one("c", 5, "c5"), "upsert", cfg)
    assert _values(base) == {"a": "a2", "b": "b1", "c": "c5"}


@pytest.mark.parametrize("version", [6, 9])
def test_a_restore_killed_while_tidying_its_rollbacks_leaves_nothing_pending(tmp_path: Path, version: int) -> None:
    from tests.actions.test_attack_crash_steps import expire_heartbeats, run_killed

    base = str(tmp_path / "t")
    cfg = _simple_config(version)
    write_arrow(base, _one("a", 1, "a1"), "upsert", cfg)
    t2 = write_arrow(base, _one("a", 2, "a2"), "upsert", cfg).instant
    create_savepoint(HoodieTable.load(base), t2, config=HoodieConfig(cfg))
    write_arrow(base, _one("a", 3, "a3"), "upsert", cfg)
    assert run_killed(lambda: restore_to(HoodieTable.load(base), t2, HoodieConfig(cfg)),
                      lambda name, path: name == "delete" and "/.hoodie/metadata/" not in path
                      and path.endswith(".rollback.inflight"))  # the restore itself had completed
    expire_heartbeats(base)
    restore_to(HoodieTable.load(base), t2, HoodieConfig(cfg))  # the Airflow retry
    assert _values(base) == {"a": "a2"}
    assert [(i.action, i.timestamp) for i in HoodieTable.load(base).reload_timeline().instants
            if not i.is_completed] == []  # a .rollback.inflight/.requested stayed
