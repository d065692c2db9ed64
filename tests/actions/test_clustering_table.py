"""Clustering real tables: sorted rewrite, replaced groups hidden, write guard, crash + rerun."""

import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieWriteConflictError

from tests.actions.services_fixtures import (Model, batch, clustering_action, data_files, load, snapshot, table_config,
                                             timeline_files, write)
from tests.actions.table_versions import table_version  # noqa: F401  (the fixture the module runs under)

pytestmark = pytest.mark.usefixtures("table_version")


@pytest.fixture(params=["COPY_ON_WRITE", "MERGE_ON_READ"])
def small_files(tmp_path, request):
    base = str(tmp_path / "t")
    cfg = table_config(request.param, **{"hoodie.parquet.small.file.limit": "0"})
    model = Model()
    for t in range(1, 6):
        b = batch(range(t * 20, t * 20 - 10, -1), t)  # keys descending within a batch
        write(base, b, cfg)
        model.upsert(b)
    b = batch(range(15, 25), 9)
    write(base, b, cfg)
    model.upsert(b)
    return base, cfg, model


def test_schedule_execute_sorted(small_files):
    base, cfg, model = small_files
    before_groups = {f.split("/")[1].split("_")[0].lstrip(".") for f in data_files(base)}
    res = cu.run_clustering(load(base), HoodieConfig({cu.SORT_COLUMNS: "id"}), LocalExecutor())
    ts = res["instant"]
    assert res["state"] == "completed" and res["replaced_file_groups"] == len(before_groups)
    assert f"{ts}.{clustering_action()}.requested" in timeline_files(base) and f"{ts}.replacecommit" in timeline_files(base)
    assert snapshot(base) == model.table()
    new = [f for f in data_files(base) if f.endswith(f"_{ts}.parquet")]
    assert len(new) == 2  # one output file group per partition
    for f in new:
        ids = pq.read_table(f"{base}/{f}", columns=["id"]).column("id").to_pylist()
        assert ids == sorted(ids)
    replaced = load(base).file_system_view().replace_instants_by_group()
    assert {fid for (_p, fid) in replaced} == before_groups
    # cleaning by file versions removes the replaced groups entirely
    cl.run_clean(load(base), HoodieConfig({cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS}), LocalExecutor())
    assert sorted(data_files(base)) == sorted(new)
    assert snapshot(base) == model.table()


def test_nothing_to_cluster_and_max_groups(small_files):
    base, cfg, model = small_files
    res = cu.run_clustering(load(base), HoodieConfig({cu.SMALL_FILE_LIMIT: "10"}), LocalExecutor())
    assert res["instant"] is None
    res = cu.run_clustering(load(base), HoodieConfig({cu.MAX_NUM_GROUPS: "1"}), LocalExecutor(), "schedule")
    assert res["groups"] == 1


def test_pending_clustering_refuses_writes_and_blocks_replanning(small_files):
    base, cfg, model = small_files
    ts = cu.run_clustering(load(base), HoodieConfig({}), LocalExecutor(), "schedule")["instant"]
    pending = load(base).file_system_view().pending_clustering_file_groups()
    with pytest.raises(HoodieWriteConflictError, match="pending clustering"):
        cu.check_no_pending_clustering(load(base), list(pending)[:2])
    cu.check_no_pending_clustering(load(base), [("p0", "not-a-group")])
    # a write updating those groups is refused and leaves no commit (else the clustering would
    # replace its update); on v9 the plan is a clustering.requested, which this guard missed
    commits_before = load(base).timeline.completed_commits().timestamps
    with pytest.raises(HoodieWriteConflictError, match="pending clustering"):
        write(base, batch(range(15, 25), 99), cfg)
    assert load(base).timeline.completed_commits().timestamps == commits_before
    assert [i.timestamp for i in load(base).timeline.pending()] == [ts]
    assert snapshot(base) == model.table()
    assert cu.run_clustering(load(base), HoodieConfig({}), LocalExecutor(), "schedule")["instant"] is None
    res = cu.run_clustering(load(base), HoodieConfig({}), LocalExecutor(), "execute")
    assert res["instant"] == ts and snapshot(base) == model.table()
    cu.check_no_pending_clustering(load(base), list(pending))


class Boom(Exception):
    pass


def test_crash_mid_clustering_then_rerun(small_files):
    base, cfg, model = small_files
    ts = cu.run_clustering(load(base), HoodieConfig({}), LocalExecutor(), "schedule")["instant"]

    class Crash:
        def map(self, fn, items):
            fn(items[0])
            raise Boom()

    with pytest.raises(Boom):
        cu.execute_clustering(load(base), ts, Crash())
    assert f"{ts}.{clustering_action()}.inflight" in timeline_files(base)
    assert snapshot(base) == model.table()
    res = cu.run_clustering(load(base), HoodieConfig({}), LocalExecutor(), "execute", ts)
    assert res["rolled_back_files"] >= 1 and res["state"] == "completed"
    assert len([f for f in data_files(base) if f.endswith(f"_{ts}.parquet")]) == res["files_written"]
    assert snapshot(base) == model.table()
