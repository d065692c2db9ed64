"""Attack: a savepoint task killed before its savepoint completed (or any reader while a savepoint
is being created). The pending ``T.savepoint.inflight`` shares its time with the delta commit T
it pins; readers must still take T as the completed write it is: Hudi's readers go by the
commits timeline, where a savepoint is no write at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_crash_steps import expire_heartbeats, run_killed
from tests.actions.test_attack_lake_sequences import _one, _simple_config, lake_rows
from tests.table.normalize import hudi_rs_rows


def _values(base: str, **query: str) -> dict[str, str]:
    return {r["id"]: r["v"] for r in read_table(base, **query).to_pylist()}


@pytest.mark.parametrize("version", [6, 9])
def test_a_pending_savepoint_hides_no_write_from_readers(tmp_path: Path, version: int) -> None:
    base = str(tmp_path / "t")
    cfg = _simple_config(version, "MERGE_ON_READ")
    write_arrow(base, lake_rows([{"id": "a", "p": "p0", "ts": 1, "v": "a1", "d": None},
                                 {"id": "b", "p": "p0", "ts": 1, "v": "b1", "d": None}]), "upsert", cfg)
    t2 = write_arrow(base, _one("a", 2, "a2"), "upsert", cfg).instant  # a log file (small.file.limit=0)
    assert run_killed(lambda: create_savepoint(HoodieTable.load(base), t2, config=HoodieConfig(cfg)),
                      lambda name, path: path.endswith(".savepoint"))
    expire_heartbeats(base)
    assert {r["v"] for r in hudi_rs_rows(base)} == {"a2", "b1"}
    assert _values(base) == {"a": "a2", "b": "b1"}  # read a1: the log of t2 was skipped
    assert _values(base, query_type="incremental", start="000") == {"a": "a2", "b": "b1"}
    create_savepoint(HoodieTable.load(base), t2, config=HoodieConfig(cfg))  # the retry
    assert _values(base) == {"a": "a2", "b": "b1"}
