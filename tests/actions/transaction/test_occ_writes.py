"""Writers and services that overlap: every interleaving the issue reproduced, made
deterministic by running the other task while the first one is between its start and
its commit (inside its executor)."""

from __future__ import annotations

import pytest

from airflow_hoodie.actions.clustering import run_clustering
from airflow_hoodie.actions.compaction import execute_pending_compactions, schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_client import WriteClient
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConcurrentWriterError, HoodieError, HoodieKeyError, HoodieWriteConflictError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_write import conf
from tests.actions.write_model import to_arrow
from tests.table.normalize import hudi_rs_rows, normalize_table
from tests.actions.services_fixtures import meta_files
from tests.actions.table_versions import table_version  # noqa: F401  (the fixture the module runs under)

pytestmark = pytest.mark.usefixtures("table_version")

OCC = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
       "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"}


def rows(ids, ts, tag, p="a"):
    return [{"id": i, "ts": ts, "p": p, "v": f"{tag}{i}"} for i in ids]


class RunsMeanwhile(LocalExecutor):
    """Runs ``other`` once, after our first task wrote its files and before our commit."""

    def __init__(self, other):
        self.other = other
        self.raised: BaseException | None = None

    def map(self, fn, items):
        out = super().map(fn, items)
        if self.other is not None:
            other, self.other = self.other, None
            try:
                other()
            except BaseException as exc:  # noqa: BLE001 - recorded for the test to assert on
                self.raised = exc
        return out


def _values(base):
    return {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}


def _no_leftover(base, instant):
    files = [p for p in __import__("pathlib").Path(base).rglob("*") if instant in p.name and ".hoodie" not in str(p)]
    return files == []


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_second_commit_into_the_same_file_group_aborts_and_the_first_survives(tmp_path, table_type):
    base = str(tmp_path / "t")
    c = conf(table_type, **OCC)
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    other = lambda: write_arrow(base, to_arrow(rows(range(0, 5), 2, "other")), "upsert", c)  # noqa: E731
    with pytest.raises(HoodieWriteConflictError, match="retry of this task redoes it"):
        write_arrow(base, to_arrow(rows(range(3, 8), 3, "mine")), "upsert", c, executor=RunsMeanwhile(other))
    table = HoodieTable.load(base)
    assert table.timeline.pending().filter(actions=["commit", "deltacommit"]).instants == []
    values = _values(base)
    assert all(values[i] == f"other{i}" for i in range(5)) and values[5] == "a5"
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_writers_on_different_file_groups_both_commit(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE", **OCC)
    write_arrow(base, to_arrow(rows(range(5), 1, "a", "a") + rows(range(5, 10), 1, "b", "b")), "upsert", c,
                table_name="t")
    other = lambda: write_arrow(base, to_arrow(rows(range(5), 2, "x", "a")), "upsert", c)  # noqa: E731
    write_arrow(base, to_arrow(rows(range(5, 10), 2, "y", "b")), "upsert", c, executor=RunsMeanwhile(other))
    values = _values(base)
    assert [values[i] for i in range(10)] == [f"x{i}" for i in range(5)] + [f"y{i}" for i in range(5, 10)]


def test_clustering_run_beside_an_upsert_never_hides_its_commit(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE", **OCC)
    for k in range(3):  # several small files to cluster
        write_arrow(base, to_arrow(rows(range(k * 10, k * 10 + 10), 1, "a")), "insert", c, table_name="t")
    cluster = lambda: run_clustering(HoodieTable.load(base), HoodieConfig(dict(c)), LocalExecutor())  # noqa: E731
    executor = RunsMeanwhile(cluster)
    # the plan leaves the file groups the live writer declared to it (issue 20), so it commits
    write_arrow(base, to_arrow(rows(range(0, 30, 3), 2, "up")), "upsert", c, executor=executor)
    assert executor.raised is None
    assert HoodieTable.load(base).timeline.filter(actions=["replacecommit"]).instants == []
    values = _values(base)
    assert all(values[i] == f"up{i}" for i in range(0, 30, 3)) and len(values) == 30
    # with the writer done, clustering takes those groups
    cluster()
    assert HoodieTable.load(base).timeline.filter(actions=["replacecommit"]).instants != []
    assert _values(base) == values
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_a_compaction_planned_while_a_mor_writer_runs_never_loses_its_updates(tmp_path):
    base = str(tmp_path / "t")
    c = conf("MERGE_ON_READ", **OCC)
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    write_arrow(base, to_arrow(rows(range(5), 2, "b")), "upsert", c)
    plan = lambda: schedule_compaction(HoodieTable.load(base), HoodieConfig(dict(c)), force=True)  # noqa: E731
    executor = RunsMeanwhile(plan)
    # the plan leaves the writer's file group out (issue 20): the write commits
    write_arrow(base, to_arrow(rows(range(3, 8), 3, "c")), "upsert", c, executor=executor)
    assert executor.raised is None
    assert HoodieTable.load(base).timeline.filter(actions=["compaction"]).instants == []
    assert plan().instant is not None  # with the writer done, the next plan takes the group
    execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(dict(c)))
    values = _values(base)
    assert [values[i] for i in range(10)] == ["b0", "b1", "b2", "c3", "c4", "c5", "c6", "c7", "a8", "a9"]
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_a_writer_started_after_a_compaction_plan_writes_into_the_new_slice(tmp_path):
    base = str(tmp_path / "t")
    c = conf("MERGE_ON_READ", **OCC)
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    write_arrow(base, to_arrow(rows(range(5), 2, "b")), "upsert", c)
    schedule_compaction(HoodieTable.load(base), HoodieConfig(dict(c)), force=True)
    write_arrow(base, to_arrow(rows(range(3, 8), 3, "c")), "upsert", c)  # no conflict: it saw the plan
    execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(dict(c)))
    values = _values(base)
    assert [values[i] for i in range(10)] == ["b0", "b1", "b2", "c3", "c4", "c5", "c6", "c7", "a8", "a9"]


def test_two_executions_of_one_clustering_plan_never_both_commit(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE", **OCC)
    for k in range(3):
        write_arrow(base, to_arrow(rows(range(k * 10, k * 10 + 10), 1, "a")), "insert", c, table_name="t")
    scheduled = run_clustering(HoodieTable.load(base), HoodieConfig(dict(c)), LocalExecutor(), mode="schedule")
    ts = scheduled["instant"]
    second = lambda: run_clustering(HoodieTable.load(base), HoodieConfig(dict(c)), LocalExecutor(),  # noqa: E731
                                    mode="execute", instant_time=ts)
    executor = RunsMeanwhile(second)
    result = run_clustering(HoodieTable.load(base), HoodieConfig(dict(c)), executor, mode="execute",
                            instant_time=ts)
    assert result["state"] == "completed"
    assert isinstance(executor.raised, HoodieConcurrentWriterError)
    ids = read_table(base, columns=["id"]).column("id").to_pylist()
    assert sorted(ids) == list(range(30))  # nothing duplicated
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def test_single_writer_mode_stops_a_second_writer_before_it_touches_anything(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE")
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    before = meta_files(tmp_path / "t")
    caught = {}

    def second():
        with pytest.raises(HoodieConcurrentWriterError) as info:
            write_arrow(base, to_arrow(rows(range(20, 25), 2, "x")), "upsert", c)
        caught["message"] = str(info.value)
        caught["files"] = meta_files(tmp_path / "t")

    result = write_arrow(base, to_arrow(rows(range(5), 2, "b")), "upsert", c, executor=RunsMeanwhile(second))
    assert result.instant in caught["message"]
    assert "OPTIMISTIC_CONCURRENCY_CONTROL" in caught["message"] and "pool" in caught["message"]
    # the refused writer created no instant of its own
    assert [f for f in caught["files"] if f not in before and result.instant not in f] == []
    assert _values(base)[0] == "b0" and 20 not in _values(base)


def test_a_rollback_job_never_rolls_back_a_live_writer(tmp_path):
    base = str(tmp_path / "t")
    c = conf("COPY_ON_WRITE")
    write_arrow(base, to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")

    def rollback_meanwhile():
        table = HoodieTable.load(base)
        pending = table.timeline.pending().instants[0].timestamp
        with pytest.raises(HoodieError, match="writer is alive"):
            rollback_latest_or(table, pending)

    executor = RunsMeanwhile(rollback_meanwhile)
    write_arrow(base, to_arrow(rows(range(5), 2, "b")), "upsert", c, executor=executor)
    assert executor.raised is None
    assert _values(base)[0] == "b0"


@pytest.mark.parametrize("bad", [".", "..", "../outside", "a/../../x", "/etc"])
def test_partition_values_that_leave_the_table_are_refused_before_writing(tmp_path, bad):
    base = tmp_path / "t"
    with pytest.raises(HoodieKeyError, match="stays inside the table|leaves the partition|absolute"):
        write_arrow(str(base), to_arrow(rows(range(3), 1, "a", p=bad)), "upsert", conf("COPY_ON_WRITE"),
                    table_name="t")
    assert not (tmp_path / "outside").exists() and not (tmp_path / "x").exists()
    assert not base.exists() or not list(base.rglob("*.parquet"))


def test_a_lost_hoodie_properties_is_an_error_not_a_new_table(tmp_path):
    base = tmp_path / "t"
    c = conf("MERGE_ON_READ")
    write_arrow(str(base), to_arrow(rows(range(5), 1, "a")), "upsert", c, table_name="t")
    props = base / ".hoodie" / "hoodie.properties"
    saved = props.read_bytes()
    props.unlink()
    with pytest.raises(HoodieError, match="lost its configuration"):
        write_arrow(str(base), to_arrow(rows(range(5), 2, "b")), "upsert", conf("COPY_ON_WRITE"), table_name="t")
    assert not props.exists()
    # Hudi's backup file is used to recover
    (base / ".hoodie" / "hoodie.properties.backup").write_bytes(saved)
    write_arrow(str(base), to_arrow(rows(range(5), 2, "b")), "upsert", c, table_name="t")
    assert props.exists() and HoodieTable.load(str(base)).table_type == "MERGE_ON_READ"
    assert _values(str(base))[0] == "b0"


def test_client_reads_the_view_after_its_instant_exists(tmp_path):
    base = str(tmp_path / "t")
    c = conf("MERGE_ON_READ", **OCC)
    write_arrow(base, to_arrow(rows(range(4), 1, "a")), "upsert", c, table_name="t")
    write_arrow(base, to_arrow(rows(range(2), 2, "b")), "upsert", c)
    client = WriteClient(base, HoodieConfig(dict(c)))
    client.load_table()
    planned = schedule_compaction(HoodieTable.load(base), HoodieConfig(dict(c)), force=True)  # after our load
    assert planned.instant is not None
    ts = client.new_instant_time()
    ts = client.start(ts, "deltacommit", "upsert")
    try:
        # the plan is part of what this writer started from, so it is no conflict at commit
        assert (planned.instant.timestamp, "compaction") in client._started.pending
    finally:
        client.abort(ts)
