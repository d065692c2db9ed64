"""Attack: a task killed at each storage step of an action, then the retry Airflow runs (or the
next task). The process dies at the n-th storage mutation (write, create, open for writing,
append, delete): that call and every later one fail, as after a SIGKILL nothing more reaches
storage; its heartbeats then expire. After the crash a reader must see the table as it was
before the action or as it is after it, never a mix; after the retry our read (through the
metadata table and through a storage listing), hudi-rs and a dict model agree, and the metadata
table describes storage.

The sweep here samples the steps (the CI budget); HOODIE_ATTACK_CRASH_ALL=1 kills at every step.
Out-of-tree runs of every step of upsert, delete, insert_overwrite, compaction, clustering, clean,
archival, savepoint, rollback, restore and the metadata table's bootstrap on v6/v8/v9 COW/MOR, and
of the lake sequences with each action killed at a random step and retried, found the tests at
the bottom of this file and those in the other test_attack_crash_*.py files."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa
import pytest

from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.storage.storage import Storage
from tests.actions.test_attack_lake_sequences import (
    Row,
    assert_metadata_describes_storage,
    lake_config,
    lake_rows,
    rows_of,
)
from tests.table.normalize import hudi_rs_rows, normalize_table

#: every Storage method that changes storage (the others only read)
MUTATIONS = ("write_bytes", "create_if_absent", "open_output", "open_append", "delete", "delete_dir",
             "replace_if_version")
ALL_STEPS = os.environ.get("HOODIE_ATTACK_CRASH_ALL") == "1"


class Killed(BaseException):
    """The task's process died at this storage call (a BaseException: no ``except Exception``
    cleanup of the dying task may run, as none runs after a SIGKILL)."""


Step = Callable[[str, str], bool]  # (mutation, path) -> kill here?


@contextlib.contextmanager
def killed_at(when: int | Step | None) -> Iterator[list[tuple[str, str]]]:
    """Storage mutations are counted (and listed in the yielded list); at the ``when``-th one
    (or the first one ``when`` picks) the process dies: that call and all later ones raise
    :class:`Killed` without touching storage. ``None`` only counts."""
    calls: list[tuple[str, str]] = []
    dead = False
    originals = {name: getattr(Storage, name) for name in MUTATIONS}

    def wrap(name: str, fn: Callable) -> Callable:
        def mutation(self: Storage, path: str, *args: object, **kwargs: object) -> object:
            nonlocal dead
            if dead:
                raise Killed(f"{name} {path} after the kill")
            calls.append((name, path))
            if (when == len(calls) - 1) if isinstance(when, int) else (when is not None and when(name, path)):
                dead = True
                raise Killed(f"killed at {name} {path}")
            return fn(self, path, *args, **kwargs)
        return mutation

    for name, fn in originals.items():
        setattr(Storage, name, wrap(name, fn))
    try:
        yield calls
    finally:
        for name, fn in originals.items():
            setattr(Storage, name, fn)


def run_killed(action: Callable[[], object], when: int | Step) -> bool:
    """Run ``action`` until the kill; whether it died (False: it finished first)."""
    with killed_at(when):
        try:
            action()
        except Killed:
            return True
    return False


def expire_heartbeats(base: str) -> None:
    """What time does to a dead task's heartbeats (its pid here is ours, alive: the age decides)."""
    folder = os.path.join(base, ".hoodie", ".heartbeat")
    for name in os.listdir(folder) if os.path.isdir(folder) else []:
        os.utime(os.path.join(folder, name), (0, 0))


def count_steps(template: str, work: str, action: Callable[[str], object]) -> list[tuple[str, str]]:
    shutil.copytree(template, work)
    with killed_at(None) as calls:
        action(work)
    shutil.rmtree(work)
    return calls


def sampled(n: int, stride: int) -> list[int]:
    """Every step under HOODIE_ATTACK_CRASH_ALL=1, else every ``stride``-th and the last."""
    return list(range(n)) if ALL_STEPS else sorted(set(range(0, n, stride)) | {n - 1})


def _rows(*rows: tuple[str, str, int, str, float | None]) -> pa.Table:
    return lake_rows([{"id": k, "p": p, "ts": ts, "v": v, "d": d} for k, p, ts, v, d in rows])


def assert_readers_agree(base: str, model: dict[str, Row], step: str, hudi_rs: bool = True) -> None:
    ours = read_table(base)
    assert rows_of(ours) == model, f"our read after {step}"
    assert rows_of(read_table(base, metadata_enable=False)) == model, f"storage-listed read after {step}"
    if hudi_rs:
        assert normalize_table(ours) == hudi_rs_rows(base), f"hudi-rs after {step}"
    assert_metadata_describes_storage(base, step)


# ---------------------------------------------------------------------- upserts: every step
@pytest.mark.parametrize("version,table_type,index",
                         [(9, "MERGE_ON_READ", "RECORD_INDEX"), (6, "COPY_ON_WRITE", "BLOOM")])
def test_an_upsert_killed_at_any_storage_step_is_invisible_and_its_retry_lands_once(
        tmp_path: Path, version: int, table_type: str, index: str) -> None:
    cfg = lake_config(version, table_type, "EVENT_TIME_ORDERING", index)
    template = str(tmp_path / "template")
    write_arrow(template, _rows(("a", "p0", 1, "a1", 1.0), ("b", "p0", 1, "b1", 2.0), ("c", "p1", 1, "c1", 3.0)),
                "upsert", cfg)
    write_arrow(template, _rows(("a", "p0", 2, "a2", 1.5)), "upsert", cfg)
    before = rows_of(read_table(template))
    batch = _rows(("a", "p0", 3, "a3", 1.7), ("c", "p1", 3, "c3", None), ("d", "p1", 1, "d1", 4.0))
    after = {**before, "a": ("p0", 3, "a3", 1.7), "c": ("p1", 3, "c3", None), "d": ("p1", 1, "d1", 4.0)}
    steps = count_steps(template, str(tmp_path / "count"), lambda w: write_arrow(w, batch, "upsert", cfg))
    assert len(steps) >= 15  # data files, markers, metadata-table logs, instants, heartbeat
    chosen = sampled(len(steps), 6)
    for n in chosen:
        work = str(tmp_path / f"k{n}")
        shutil.copytree(template, work)
        assert run_killed(lambda: write_arrow(work, batch, "upsert", cfg), n)
        expire_heartbeats(work)
        seen = rows_of(read_table(work))
        assert seen in (before, after), f"a reader after the kill at {steps[n]}"
        write_arrow(work, batch, "upsert", cfg)  # the Airflow retry
        assert_readers_agree(work, after, f"the retry of an upsert killed at {steps[n]}", hudi_rs=n == chosen[-1])
        shutil.rmtree(work)


# ---------------------------------------------------- table services: sampled steps, then the retry
@pytest.mark.parametrize("service,version,table_type", [("compaction", 9, "MERGE_ON_READ"),
                                                        ("clustering", 6, "MERGE_ON_READ")])
def test_a_service_killed_at_any_storage_step_is_finished_by_its_retry(
        tmp_path: Path, service: str, version: int, table_type: str) -> None:
    """The plan's instant is reused by the retry: whatever the killed try wrote (data files,
    metadata-table blocks of that instant) must be gone or taken over, never listed twice."""
    cfg = _cluster_config(version, table_type)
    template = str(tmp_path / "template")
    model = _three_writes(template, cfg)
    conf = HoodieConfig({**cfg, "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)})
    if service == "compaction":
        assert c.schedule_compaction(HoodieTable.load(template), conf, force=True).instant is not None

    def run(base: str, retry: bool = False) -> object:
        if service == "compaction":
            return c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), conf)
        pending = cu.pending_clustering_instants(HoodieTable.load(base))
        return cu.run_clustering(HoodieTable.load(base), conf, LocalExecutor(),
                                 mode="execute" if retry and pending else "scheduleAndExecute")

    steps = count_steps(template, str(tmp_path / "count"), run)
    chosen = sampled(len(steps), 5)
    for n in chosen:
        work = str(tmp_path / f"k{n}")
        shutil.copytree(template, work)
        assert run_killed(lambda: run(work), n)
        expire_heartbeats(work)
        assert rows_of(read_table(work)) == model, f"a reader after the kill at {steps[n]}"
        run(work, retry=True)
        assert not [i for i in HoodieTable.load(work).reload_timeline().instants if not i.is_completed]
        assert_readers_agree(work, model, f"the retry of a {service} killed at {steps[n]}", hudi_rs=n == chosen[-1])
        shutil.rmtree(work)


# ------------------------------------------------------------------ found by the sweep
def _cluster_config(version: int, table_type: str) -> dict[str, str]:
    cfg = lake_config(version, table_type, "EVENT_TIME_ORDERING", "RECORD_INDEX" if version >= 8 else "BLOOM")
    cfg["hoodie.parquet.small.file.limit"] = "0"  # every write a new file group: clustering has work
    return cfg


def _three_writes(base: str, cfg: dict[str, str]) -> dict[str, Row]:
    write_arrow(base, _rows(("a", "p0", 1, "a1", 1.0), ("b", "p0", 1, "b1", 2.0), ("c", "p1", 1, "c1", 3.0)),
                "upsert", cfg)
    write_arrow(base, _rows(("a", "p0", 2, "a2", 1.5), ("c", "p1", 2, "c2", None), ("f", "p0", 1, "f1", 9.0)),
                "upsert", cfg)
    write_arrow(base, _rows(("g", "p0", 1, "g1", 1.0), ("c", "p1", 3, "c3", 0.0)), "upsert", cfg)
    return rows_of(read_table(base))


def _in_metadata_table_update(name: str, path: str) -> bool:
    """The first metadata-table log block after the ``files`` partition's (record_index or
    column_stats): the action dies half way through its metadata-table delta commit."""
    return name == "open_output" and "/.hoodie/metadata/" in path and "/files/" not in path


def test_a_clustering_killed_in_its_metadata_update_then_retried_lists_only_live_files(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _cluster_config(9, "COPY_ON_WRITE")
    model = _three_writes(base, cfg)
    conf = HoodieConfig({**cfg, "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)})
    assert run_killed(lambda: cu.run_clustering(HoodieTable.load(base), conf, LocalExecutor()),
                      _in_metadata_table_update)
    expire_heartbeats(base)
    assert rows_of(read_table(base)) == model  # the pending replacecommit is invisible
    assert cu.run_clustering(HoodieTable.load(base), conf, LocalExecutor(), mode="execute")["state"] == "completed"
    assert_readers_agree(base, model, "a clustering killed in its metadata-table update, then retried")


@pytest.mark.parametrize("version", [6, 9])
def test_a_compaction_killed_in_its_metadata_update_then_retried_lists_only_live_files(
        tmp_path: Path, version: int) -> None:
    base = str(tmp_path / "t")
    cfg = _cluster_config(version, "MERGE_ON_READ")
    model = _three_writes(base, cfg)
    assert c.schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True).instant is not None
    assert run_killed(lambda: c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(cfg)),
                      _in_metadata_table_update)
    expire_heartbeats(base)
    c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(cfg))
    assert not c.pending_compaction_instants(HoodieTable.load(base))
    assert_readers_agree(base, model, "a compaction killed in its metadata-table update, then retried")


def _after_the_first_data_file_delete() -> Step:
    """Dies at the storage call after the first data file the action deleted."""
    deleted: list[str] = []

    def step(name: str, path: str) -> bool:
        if deleted:
            return True
        if name == "delete" and "/.hoodie/" not in path:
            deleted.append(path)
        return False
    return step


@pytest.mark.parametrize("version,table_type", [(6, "COPY_ON_WRITE"), (9, "MERGE_ON_READ")])
def test_a_rollback_killed_after_its_first_delete_leaves_a_readable_table_the_next_write_repairs(
        tmp_path: Path, version: int, table_type: str) -> None:
    base = str(tmp_path / "t")
    cfg = lake_config(version, table_type, "EVENT_TIME_ORDERING", "SIMPLE")
    write_arrow(base, _rows(("a", "p0", 1, "a1", None), ("b", "p0", 1, "b1", None)), "upsert", cfg)
    first = rows_of(read_table(base))
    write_arrow(base, _rows(("a", "p0", 2, "a2", None)), "upsert", cfg)
    second = rows_of(read_table(base))
    assert run_killed(lambda: rollback_latest_or(HoodieTable.load(base), None, HoodieConfig(cfg)),
                      _after_the_first_data_file_delete())
    expire_heartbeats(base)
    assert rows_of(read_table(base)) in (first, second)  # raised HoodieCorruptedDataError (a file is missing)
    write_arrow(base, _rows(("b", "p0", 3, "b3", None)), "upsert", cfg)
    assert rows_of(read_table(base)) in ({**first, "b": ("p0", 3, "b3", None)}, {**second, "b": ("p0", 3, "b3", None)})
    assert_metadata_describes_storage(base, "the write after a killed rollback")
