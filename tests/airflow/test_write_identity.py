"""Exactly-once retries and results found on the timeline, with the real job scripts.

A try that committed and died before reporting is simulated by discarding the first
execute's result: the retry (same task instance identity) must report the same instant
and write nothing. The timeline lookup the hook uses in cluster deploy mode must give the
same figures as the job's own result. A compaction plan left behind by an earlier run is
executed by the execute operator even when this run's plan task planned nothing.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk import DAG

from airflow_hoodie.actions.clustering import run_clustering
from airflow_hoodie.actions.compaction import schedule_compaction
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_identity import format_write_id
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.hooks.hoodie import HoodieHook
from airflow_hoodie.operators.hoodie import (
    HoodieClusteringOperator,
    HoodieCompactionExecuteOperator,
    HoodieUpsertOperator,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata.commit_metadata import parse_commit_metadata
from airflow_hoodie.table.read import read_table
from tests.airflow.conftest import load_dag_file
from tests.airflow.deferral import FakeTaskInstance

pytestmark = pytest.mark.timeout(600)

CONF = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": ""}




def _context():
    ti = FakeTaskInstance(dag_id="ingest", run_id="manual__1", task_id="upsert", map_index=-1, pushed={})
    return {"ti": ti}


def test_retry_after_commit_reports_the_same_instant_and_writes_nothing(airflow_db, tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    source = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1], "v": [1, 2, 3]}), source)
    base = str(tmp_path / "t")
    op = HoodieUpsertOperator(task_id="upsert", base_path=base, table_name="t", source=str(source),
                              operation="insert", hoodie_conf=CONF)
    first = op.execute(_context())  # committed; imagine the worker died before this returned
    assert first["inserts"] == 3

    retry = op.execute(_context())
    assert retry["instant"] == first["instant"]
    assert retry["retry_of_completed_write"] is True
    assert read_table(base).num_rows == 3  # insert re-applied would have made 6
    assert [i.timestamp for i in HoodieTable.load(base).timeline.completed_commits()] == [first["instant"]]

    # cluster deploy mode: the driver's output never reaches the hook; the timeline answers
    write_id = format_write_id("ingest", "manual__1", "upsert", -1)
    found = HoodieHook(base_path=base).result_from_timeline(write_id, timeout=0)
    for key in ("instant", "action", "inserts", "updates", "files_written", "bytes_written"):
        assert found[key] == first[key], key


def test_execute_operator_runs_a_plan_left_by_an_earlier_run(airflow_db, tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    base = str(tmp_path / "mor")
    conf = {**CONF, "hoodie.table.name": "mor", "hoodie.table.type": "MERGE_ON_READ"}
    write_arrow(base, pa.table({"id": ["a", "b"], "ts": [1, 1], "v": [1, 2]}), "insert", conf)
    write_arrow(base, pa.table({"id": ["b"], "ts": [2], "v": [20]}), "upsert", conf)
    orphan = schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True).as_result()["instant"]
    assert orphan  # a plan whose execute task failed in an earlier run

    dag = load_dag_file("identity_orphan_plan", f"""
        import pendulum
        from airflow.sdk import DAG
        from airflow_hoodie.operators.hoodie import HoodieCompactionExecuteOperator, HoodieCompactionPlanOperator
        with DAG("identity_orphan_plan", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
            plan = HoodieCompactionPlanOperator(task_id="plan", base_path="{base}",
                                                hoodie_conf={{"hoodie.compact.inline.max.delta.commits": "50"}})
            run = HoodieCompactionExecuteOperator(task_id="execute", base_path="{base}")
            plan >> run
    """)
    dr = dag.test()
    states = {ti.task_id: ti.state for ti in dr.get_task_instances()}
    assert states == {"plan": "success", "execute": "success"}
    timeline = HoodieTable.load(base).timeline
    assert not timeline.pending_compactions().instants
    assert timeline.get(orphan).is_completed
    ro = read_table(base, query_type="read_optimized")
    assert sorted(zip(ro.column("id").to_pylist(), ro.column("v").to_pylist())) == [("a", 1), ("b", 20)]


def test_retry_after_a_committed_compaction_returns_that_instant(airflow_db, tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    base = str(tmp_path / "mor")
    conf = {**CONF, "hoodie.table.name": "mor", "hoodie.table.type": "MERGE_ON_READ"}
    write_arrow(base, pa.table({"id": ["a", "b"], "ts": [1, 1], "v": [1, 2]}), "insert", conf)
    write_arrow(base, pa.table({"id": ["b"], "ts": [2], "v": [20]}), "upsert", conf)
    planned = schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True).as_result()["instant"]
    with DAG("ingest", schedule=None):
        op = HoodieCompactionExecuteOperator(task_id="execute", base_path=base)
    context = _context()
    context["ti"].task_id = "execute"
    first = op.execute(context)  # no plan handed over: the pending one runs; then the worker "dies"
    assert first["instant"] == planned and first["operations"] >= 1
    table = HoodieTable.load(base)
    completed = table.timeline.get(planned)
    assert completed.is_completed
    extra = parse_commit_metadata(table.timeline.read_details(completed), completed.action).extra_metadata
    write_id = format_write_id("ingest", "manual__1", "execute", -1)
    assert extra["_airflow.write.id"] == write_id

    # a newer plan is pending when the retry runs: the retry must not execute it
    write_arrow(base, pa.table({"id": ["a"], "ts": [3], "v": [10]}), "upsert", conf)
    newer = schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True).as_result()["instant"]
    retry = op.execute(context)
    assert retry["instant"] == planned and retry["retry_of_completed_write"] is True
    timeline = HoodieTable.load(base).timeline
    assert [i.timestamp for i in timeline.pending_compactions().instants] == [newer]
    found = HoodieHook(base_path=base).result_from_timeline(write_id, timeout=0)
    assert found["instant"] == planned


def test_retry_after_a_committed_clustering_returns_that_instant(airflow_db, tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    base = str(tmp_path / "cow")
    conf = {**CONF, "hoodie.table.name": "cow", "hoodie.parquet.small.file.limit": "0"}
    for n in range(3):  # three small file groups
        write_arrow(base, pa.table({"id": [f"k{n}"], "ts": [1], "v": [n]}), "insert", conf)
    planned = run_clustering(HoodieTable.load(base), HoodieConfig({}), None, "schedule")["instant"]
    assert planned
    with DAG("ingest", schedule=None):
        op = HoodieClusteringOperator(task_id="cluster", base_path=base, mode="execute")
    context = _context()
    context["ti"].task_id = "cluster"
    first = op.execute(context)  # the pending plan runs; then the worker "dies" before reporting
    assert first["instant"] == planned and first["replaced_file_groups"] == 3
    table = HoodieTable.load(base)
    completed = table.timeline.get(planned)
    extra = parse_commit_metadata(table.timeline.read_details(completed), completed.action).extra_metadata
    write_id = format_write_id("ingest", "manual__1", "cluster", -1)
    assert completed.is_completed and extra["_airflow.write.id"] == write_id

    write_arrow(base, pa.table({"id": ["k9"], "ts": [1], "v": [9]}), "insert", conf)
    newer = run_clustering(HoodieTable.load(base), HoodieConfig({}), None, "schedule")["instant"]
    assert newer
    retry = op.execute(context)
    assert retry["instant"] == planned and retry["retry_of_completed_write"] is True
    assert HoodieTable.load(base).timeline.get(newer).is_pending  # not executed by the retry
    assert sorted(read_table(base).column("id").to_pylist()) == ["k0", "k1", "k2", "k9"]
    assert HoodieHook(base_path=base).result_from_timeline(write_id, timeout=0)["instant"] == planned
    # a schedule-only task records no identity: it plans and returns
    with DAG("plan_only", schedule=None):
        plan = HoodieClusteringOperator(task_id="plan", base_path=base, mode="schedule")
    assert plan.write_id(context) is None


def test_execute_operators_run_the_earliest_pending_plan(airflow_db, tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    base = str(tmp_path / "mor")
    conf = {**CONF, "hoodie.datasource.write.partitionpath.field": "p", "hoodie.table.name": "mor",
            "hoodie.table.type": "MERGE_ON_READ", "hoodie.parquet.small.file.limit": "0"}
    write_arrow(base, pa.table({"id": ["a", "b"], "ts": [1, 1], "v": [1, 2], "p": ["x", "y"]}), "insert", conf)
    plans = []
    for key, part in (("a", "x"), ("b", "y")):  # two plans, one per partition's log file
        write_arrow(base, pa.table({"id": [key], "ts": [2], "v": [20], "p": [part]}), "upsert", conf)
        plans.append(schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True).as_result()["instant"])
    with DAG("maintain", schedule=None):
        compact = HoodieCompactionExecuteOperator(task_id="compact", base_path=base)
    context = _context()
    assert compact.execute(context)["instant"] == plans[0]
    assert [i.timestamp for i in HoodieTable.load(base).timeline.pending_compactions().instants] == [plans[1]]

    # clustering: two plans over disjoint partitions' small files; execute runs the earliest only
    cow = str(tmp_path / "cow")
    cow_conf = {**conf, "hoodie.table.name": "cow", "hoodie.table.type": "COPY_ON_WRITE"}
    write_arrow(cow, pa.table({"id": ["a", "b"], "ts": [1, 1], "v": [1, 2], "p": ["x", "y"]}), "insert", cow_conf)
    write_arrow(cow, pa.table({"id": ["c", "d"], "ts": [1, 1], "v": [3, 4], "p": ["x", "y"]}), "insert", cow_conf)
    skip_newest = HoodieConfig({"hoodie.clustering.plan.strategy.skip.partitions.from.latest": "1"})
    clusterings = [run_clustering(HoodieTable.load(cow), config, None, "schedule")["instant"]
                   for config in (skip_newest, HoodieConfig({}))]
    assert all(clusterings)
    with DAG("maintain_cow", schedule=None):
        cluster = HoodieClusteringOperator(task_id="cluster", base_path=cow, mode="execute")
    assert cluster.execute(_context())["instant"] == clusterings[0]
    timeline = HoodieTable.load(cow).timeline
    assert timeline.get(clusterings[0]).is_completed and timeline.get(clusterings[1]).is_pending
    assert sorted(read_table(cow).column("id").to_pylist()) == ["a", "b", "c", "d"]


def test_cluster_mode_execute_with_nothing_to_run_waits_for_no_instant(airflow_db, tmp_path, monkeypatch):
    """In cluster deploy mode the result comes only from an instant with the task's identity:
    with no plan pending (and none committed by this task) there is none to wait for."""
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    base = str(tmp_path / "mor")
    conf = {**CONF, "hoodie.table.name": "mor", "hoodie.table.type": "MERGE_ON_READ"}
    write_arrow(base, pa.table({"id": ["a", "b"], "ts": [1, 1], "v": [1, 2]}), "insert", conf)
    write_arrow(base, pa.table({"id": ["b"], "ts": [2], "v": [20]}), "upsert", conf)
    schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True)
    with DAG("ingest", schedule=None):
        compact = HoodieCompactionExecuteOperator(task_id="upsert", base_path=base)
        cluster = HoodieClusteringOperator(task_id="cluster", base_path=base, mode="execute")
    context = _context()
    own_id = format_write_id("ingest", "manual__1", "upsert", -1)

    def in_cluster_mode(op):
        op._hook = op.get_hook()
        monkeypatch.setattr(op._hook, "submits_in_cluster_mode", lambda: True)
        return op

    assert in_cluster_mode(compact).write_id(context) == own_id  # a plan is pending
    compact.execute(context)  # client mode here: runs it
    assert in_cluster_mode(compact).write_id(context) == own_id  # committed by this task: a retry finds it
    other = _context()
    other["ti"].task_id = "other"
    assert in_cluster_mode(compact).write_id(other) is None  # nothing pending, nothing of its own
    assert in_cluster_mode(cluster).write_id(other) is None  # no clustering plan either
    compact._hook = compact.get_hook()  # client mode: the job's own result says "nothing pending"
    assert compact.write_id(other) == format_write_id("ingest", "manual__1", "other", -1)
