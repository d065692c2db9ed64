"""C22: a downstream consumer that checkpoints what it was handed reads every commit once.

On Hudi 1.x (versions 8, 9) incremental windows are completion-time ranges, and two writers'
commits can complete in the other order than they started. Everything we hand downstream as
"the instant" (``WriteResult``, the sensor's XCom, the Asset event) carries its ``checkpoint``:
the completion time on 1.x, the instant time on 6. Before, each carried only the requested
time: the consumer of the example DAG read the commit that completed late in no window at all
(its requested time lay before the checkpoint taken from the newer commit)."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import pyarrow as pa
import pytest

from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_client import WriteResult
from airflow_hoodie.operators.hoodie import ASSET_EXTRA_KEYS
from airflow_hoodie.sensors.hoodie import HoodieInstantSensor
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_crash_incremental import OCC
from tests.actions.test_attack_lake_sequences import _one, _simple_config
from tests.airflow.test_sensors import ctx

EXAMPLES = Path(__file__).resolve().parents[2] / "dags_examples"


class _HeldExecutor(LocalExecutor):
    """Holds the write's file-group work until released: the write started (its instant is
    requested and inflight) but completes only after another writer's commit."""

    def __init__(self) -> None:
        super().__init__(threads=1)
        self.started = threading.Event()
        self.release = threading.Event()

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        self.started.set()
        assert self.release.wait(60), "the held write was never released"
        return super().map(fn, items)


def _out_of_order_commits(base: str, version: int, after_each: Callable[[str], None] = lambda key: None
                          ) -> tuple[list[WriteResult], list[str]]:
    """Writes A (started first), B (completes first) and C, calling ``after_each`` with the key
    of each as it completes; returns them in completion order with their keys."""
    cfg = {**_simple_config(version), **OCC}
    write_arrow(base, _one("seed", 1, "s", p="p0"), "upsert", cfg)
    held = _HeldExecutor()
    out: dict[str, WriteResult] = {}
    slow = threading.Thread(target=lambda: out.setdefault(
        "a", write_arrow(base, _one("a", 1, "a1", p="pa"), "upsert", cfg, executor=held)))
    slow.start()
    try:
        assert held.started.wait(60)
        b = write_arrow(base, _one("b", 1, "b1", p="pb"), "upsert", cfg)
        after_each("b")
    finally:
        held.release.set()
        slow.join(60)
    a = out["a"]
    after_each("a")
    c = write_arrow(base, _one("c", 1, "c1", p="pc"), "upsert", cfg)
    after_each("c")
    assert a.instant < b.instant, "A started first"
    return [b, a, c], ["b", "a", "c"]


def _window(base: str, start: str | None, end: str) -> list[str]:
    rows = read_table(base, query_type="incremental", start=start, end=end).to_pylist()
    return sorted(r["id"] for r in rows)


@pytest.mark.parametrize("version", [6, 9])
def test_write_results_carry_the_checkpoint_of_their_version(tmp_path: Path, version: int) -> None:
    base = str(tmp_path / "t")
    result = write_arrow(base, _one("a", 1, "a1"), "upsert", _simple_config(version))
    done = HoodieTable.load(base).timeline.completed_commits().last()
    assert result.completion_time == done.completion_time
    assert result.as_dict()["checkpoint"] == (done.completion_time if version >= 8 else result.instant)
    assert (result.completion_time is None) == (version == 6)


def test_sensor_consumer_reads_out_of_order_commits_once_each(tmp_path: Path) -> None:
    """A DAG of a last_seen commit sensor and an incremental read from the previous run's
    checkpoint to the sensor's, run after each commit completes: each run reads exactly it."""
    base = str(tmp_path / "t")
    sensor = HoodieInstantSensor(task_id="s", base_path=base, actions=["commit"], after="last_seen")
    state: dict[str, Any] = {"previous": None, "read": [], "runs": []}

    def downstream_run(key: str) -> None:
        if state["previous"] is None:  # the consumer's first run read the seed commit
            seed = HoodieTable.load(base).timeline.completed_commits().first()
            state["previous"] = {"instant": seed.timestamp, "checkpoint": seed.checkpoint}
        poke = sensor.poke(ctx(state["previous"]))
        assert poke, f"the sensor missed the commit of {key}"
        xcom = poke.xcom_value
        got = _window(base, state["previous"]["checkpoint"], xcom["checkpoint"])
        state["read"] += got
        state["runs"].append(xcom)
        state["previous"] = xcom

    results, keys = _out_of_order_commits(base, 9, downstream_run)
    assert results[0].checkpoint < results[1].checkpoint < results[2].checkpoint
    assert [r["instant"] for r in state["runs"]] == [r.instant for r in results]
    assert [r["checkpoint"] for r in state["runs"]] == [r.checkpoint for r in results]
    assert state["read"] == keys  # each once, in completion order
    assert sensor.poke(ctx(state["previous"])) is False


def test_example_downstream_dag_consumes_asset_events_once_each(tmp_path: Path, monkeypatch) -> None:
    """The example downstream DAG's task, fed the Asset events our operator emits, one run
    per event in completion order (a commit that completes late comes after the newer one)."""
    base = str(tmp_path / "t")
    results, keys = _out_of_order_commits(base, 9)
    monkeypatch.setenv("HOODIE_EXAMPLE_BASE_PATH", base)
    monkeypatch.syspath_prepend(str(EXAMPLES))
    spec = importlib.util.spec_from_file_location("downstream_under_test", EXAMPLES / "hoodie_example_downstream.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    task = module.dag.get_task("read_new_commits")

    class _TI:
        previous: dict[str, Any] | None = None

        def xcom_pull(self, **_: Any) -> dict[str, Any] | None:
            return self.previous

    ti = _TI()
    seed = HoodieTable.load(base).timeline.completed_commits().first()
    ti.previous = {"end": seed.checkpoint}
    read: list[str] = []
    for result in results:
        extra = {k: v for k, v in result.as_dict().items() if k in ASSET_EXTRA_KEYS}
        events = {"trips": [SimpleNamespace(extra=extra)]}
        out = task.python_callable(triggering_asset_events=events, ti=ti)
        got = _window(base, out["start"], out["end"]) if out["end"] else []
        assert out["rows"] == len(got)
        read += got
        ti.previous = out
    assert read == keys


def test_incremental_read_warns_of_a_requested_time_on_hudi_1x(tmp_path: Path, caplog) -> None:
    """A requested time as the start is a completion time, as Hudi and hudi-rs take it (the
    commit is then inside the window); the warning names the checkpoint to use instead."""
    base = str(tmp_path / "t")
    results, _ = _out_of_order_commits(base, 9)
    late = results[1]  # A: requested first, completed after B
    with caplog.at_level("WARNING", logger="airflow_hoodie.table.read"):
        assert _window(base, late.instant, results[2].checkpoint) == ["a", "b", "c"]
    assert late.completion_time in caplog.text and "checkpoint" in caplog.text
    assert _window(base, late.checkpoint, results[2].checkpoint) == ["c"]


def test_version_6_checkpoints_are_instant_times(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _simple_config(6)
    first = write_arrow(base, _one("a", 1, "a1"), "upsert", cfg)
    second = write_arrow(base, _one("b", 1, "b1"), "upsert", cfg)
    assert (first.checkpoint, second.checkpoint) == (first.instant, second.instant)
    assert _window(base, first.checkpoint, second.checkpoint) == ["b"]


@pytest.mark.parametrize("version", [6, 9])
def test_example_downstream_dag_applies_the_cdc_stream_to_its_copy(tmp_path: Path, monkeypatch, version: int) -> None:
    """The example downstream DAG's ``apply_changes``, run after ``read_new_commits`` once per
    Asset event of a small MERGE_ON_READ CDC table (inserts, an update with an insert, a
    delete), keeps a copy equal to the table, deletes included; counts each change once; a
    retried run applies nothing twice."""
    import json

    from airflow_hoodie.table.schema.meta_fields import META_COLUMNS

    base, mirror = str(tmp_path / "t"), str(tmp_path / "mirror.json")
    monkeypatch.setenv("HOODIE_EXAMPLE_BASE_PATH", base)
    monkeypatch.setenv("HOODIE_EXAMPLE_MIRROR_PATH", mirror)
    monkeypatch.syspath_prepend(str(EXAMPLES))
    spec = importlib.util.spec_from_file_location("downstream_cdc_under_test", EXAMPLES / "hoodie_example_downstream.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    read_task, apply_task = module.dag.get_task("read_new_commits"), module.dag.get_task("apply_changes")
    assert "apply_changes" in read_task.downstream_task_ids
    cfg = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "uuid",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "city",
           "hoodie.table.cdc.enabled": "true", "hoodie.write.table.version": str(version),
           "hoodie.time.generator.max_expected_clock_skew_ms": "0"}

    def rows(*r: tuple[str, int, str, float]) -> pa.Table:
        return pa.table({"uuid": [x[0] for x in r], "ts": pa.array([x[1] for x in r], pa.int64()),
                         "city": [x[2] for x in r], "fare": [x[3] for x in r]})

    class _TI:
        previous: dict[str, Any] | None = None

        def xcom_pull(self, **_: Any) -> dict[str, Any] | None:
            return self.previous

    ti = _TI()
    writes = [(rows(("t1", 1, "sf", 1.0), ("t2", 1, "sf", 2.0), ("t3", 1, "nyc", 3.0)), "upsert", (3, 0, 0)),
              (rows(("t1", 2, "sf", 1.5), ("t4", 2, "nyc", 4.0)), "upsert", (1, 1, 0)),
              (rows(("t2", 3, "sf", 2.0)), "delete", (0, 0, 1))]
    out: dict[str, Any] = {}
    for batch, operation, (inserts, updates, deletes) in writes:
        result = write_arrow(base, batch, operation, cfg, table_name="trips")
        extra = {k: v for k, v in result.as_dict().items() if k in ASSET_EXTRA_KEYS}
        window = read_task.python_callable(triggering_asset_events={"trips": [SimpleNamespace(extra=extra)]}, ti=ti)
        out = apply_task.python_callable(window=window)
        assert (out["inserts"], out["updates"], out["deletes"]) == (inserts, updates, deletes), out
        table = read_table(base)
        snapshot = {r["uuid"]: r for r in table.drop_columns([c for c in META_COLUMNS if c in table.column_names])
                    .to_pylist()}
        with open(mirror, encoding="utf-8") as f:
            assert json.load(f)["rows"] == snapshot
        ti.previous = window
    # a retry of the last run: the copy already holds its window
    again = apply_task.python_callable(window=ti.previous)
    assert again.get("skipped") and (again["inserts"], again["updates"], again["deletes"]) == (0, 0, 0)
    with open(mirror, encoding="utf-8") as f:
        assert sorted(json.load(f)["rows"]) == ["t1", "t3", "t4"]
