"""Savepoint then restore: the table reads exactly as it did at the savepoint."""

import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions import restore as rs
from airflow_hoodie.actions import savepoint as sp
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.storage.storage import Storage

from tests.actions.services_fixtures import (Model, batch, clustering_action, load, snapshot, table_config, timeline_files,
                                             write)
from tests.actions.table_versions import table_version  # noqa: F401  (the fixture the module runs under)

pytestmark = pytest.mark.usefixtures("table_version")


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_restore_to_savepoint(tmp_path, table_type):
    base = str(tmp_path / "t")
    cfg = table_config(table_type)
    model = Model()
    commits = []
    for t in range(1, 4):
        b = batch(range(t, t + 5), t)
        commits.append(write(base, b, cfg))
        model.upsert(b)
    at = model.table()
    sp.create_savepoint(load(base), commits[-1])
    for t in range(10, 14):
        write(base, batch(range(t - 8, t - 2), t), cfg)
    if table_type == "MERGE_ON_READ":
        c.schedule_compaction(load(base), HoodieConfig({}), force=True)
        c.execute_pending_compactions(load(base), LocalExecutor())
    # a clustering planned after the savepoint is undone too (on v9 a clustering.requested),
    # or its plan would name files the restore removes
    clustering = cu.run_clustering(load(base), HoodieConfig({}), LocalExecutor(), "schedule")["instant"]
    assert f"{clustering}.{clustering_action()}.requested" in timeline_files(base)
    res = rs.restore_to(load(base), commits[-1])
    assert res["state"] == "completed" and len(res["rolled_back"]) >= 5 and res["rolled_back"][0] == clustering
    assert f"{res['instant']}.restore" in timeline_files(base)
    assert not load(base).timeline.pending().instants and not [f for f in timeline_files(base) if clustering in f]
    # the savepoint shares its instant time with the commit; reads see both
    assert snapshot(base) == at
    sp.delete_savepoint(load(base), commits[-1])
    assert snapshot(base) == at
    with pytest.raises(HoodieConfigError):
        rs.restore_to(load(base), "20200101000000000")


@pytest.mark.parametrize("undo", ["restore", "rollback"])
def test_undoing_a_completed_clustering_removes_its_plan_too(tmp_path, undo):
    """On v8/v9 a clustering is pending as ``.clustering.*`` and completes as a replacecommit:
    undoing it must take every one of its files, or its plan reads as pending again and the
    next upsert of its file groups is refused as a conflict."""
    from airflow_hoodie.actions.rollback import rollback_latest_or  # noqa: PLC0415

    base = str(tmp_path / "t")
    cfg = table_config("COPY_ON_WRITE")
    write(base, batch(range(0, 4), 1), cfg)
    kept = write(base, batch(range(4, 8), 2), cfg)
    sp.create_savepoint(load(base), kept)
    done = cu.run_clustering(load(base), HoodieConfig({"hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)}),
                             LocalExecutor())
    assert done["state"] == "completed"
    if undo == "restore":
        rs.restore_to(load(base), kept)
    else:
        rollback_latest_or(load(base), done["instant"])
    assert not [f for f in timeline_files(base) if done["instant"] in f]
    assert not cu.pending_clustering_instants(load(base))
    model = Model()
    for b in (batch(range(0, 4), 1), batch(range(4, 8), 2), batch(range(0, 2), 3)):
        model.upsert(b)
    write(base, batch(range(0, 2), 3), cfg)  # into the file groups the clustering had replaced
    assert snapshot(base) == model.table()


def test_restore_refuses_cleaned_commit(tmp_path):
    base = str(tmp_path / "t")
    cfg = table_config("COPY_ON_WRITE")
    commits = [write(base, batch(range(0, 4), t), cfg) for t in range(1, 7)]
    cl.run_clean(load(base), HoodieConfig({cl.COMMITS_RETAINED: "2"}), LocalExecutor())
    with pytest.raises(HoodieConfigError, match="no savepoint"):
        rs.restore_to(load(base), commits[0])


@pytest.fixture(params=["listed", "reversed"])
def listing_order(request, monkeypatch):
    """Run with storage listings as returned, and reversed: the timeline must not depend
    on the order ``T.deltacommit`` and ``T.savepoint`` are listed in."""
    if request.param == "reversed":
        orig = Storage.list_dir
        monkeypatch.setattr(Storage, "list_dir", lambda self, *a, **k: list(reversed(orig(self, *a, **k))))
    return request.param


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_savepoint_does_not_change_reads(tmp_path, table_type, listing_order):
    base = str(tmp_path / "t")
    cfg = table_config(table_type)
    model = Model()
    commits = []
    for t in range(1, 4):
        b = batch(range(1, 6), t)
        commits.append(write(base, b, cfg))
        model.upsert(b)
    sp.create_savepoint(load(base), commits[-1])
    tl = load(base).timeline
    assert tl.get(commits[-1]).action != "savepoint"
    assert tl.get(commits[-1], "savepoint").is_completed
    assert tl.completed_commits().timestamps == commits
    assert snapshot(base) == model.table()
    # more writes and a compaction on top of the savepointed commit
    b = batch(range(3, 8), 4)
    write(base, b, cfg)
    model.upsert(b)
    if table_type == "MERGE_ON_READ":
        c.schedule_compaction(load(base), HoodieConfig({}), force=True)
        c.execute_pending_compactions(load(base), LocalExecutor())
    assert snapshot(base) == model.table()


def test_restore_and_savepoint_metadata_match_hudi_014(tmp_path):
    """Field by field against Hudi 0.14's schemas: the restore plan is version 2 and names the
    savepoint; the rollbacks a restore runs live only inside its metadata; savepointedAt is
    in milliseconds."""
    import time

    from airflow_hoodie.table.metadata import avro_codec

    base = str(tmp_path / "t")
    cfg = table_config("COPY_ON_WRITE")
    commits = [write(base, batch(range(t, t + 3), t), cfg) for t in range(1, 3)]
    before = time.time()
    sp.create_savepoint(load(base), commits[0])
    tl = load(base).timeline
    meta = avro_codec.deserialize(tl.read_details(tl.savepoints().completed().instants[0]), "HoodieSavepointMetadata")
    assert before * 1000 - 5000 <= meta["savepointedAt"] <= time.time() * 1000 + 5000
    write(base, batch(range(10, 12), 10), cfg)
    res = rs.restore_to(load(base), commits[0])
    tl = load(base).timeline
    plan = avro_codec.deserialize(tl.read_plan(tl.get(res["instant"], "restore")), "HoodieRestorePlan")
    assert plan["version"] == 2 and plan["savepointToRestoreTimestamp"] == commits[0]
    assert [i["commitTime"] for i in plan["instantsToRollback"]] == sorted(res["rolled_back"], reverse=True)
    assert not [f for f in timeline_files(base) if ".rollback" in f]
    restore_meta = avro_codec.deserialize(tl.read_details(tl.get(res["instant"], "restore")), "HoodieRestoreMetadata")
    assert sorted(restore_meta["hoodieRestoreMetadata"]) == sorted(res["rolled_back"])
