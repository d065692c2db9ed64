"""Cleaning real COW/MOR tables: file layout per policy, time travel to retained commits."""

import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import savepoint as sp
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.service_common import deserialize_plan
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.settings.clean import CleanSettings
from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.table.timeline.instant import Action, Instant, State

from tests.actions.services_fixtures import Model, batch, data_files, load, snapshot, table_config, timeline_files, write
from tests.actions.table_versions import table_version  # noqa: F401  (the fixture the module runs under)

pytestmark = pytest.mark.usefixtures("table_version")


def _cow(tmp_path, n=8):
    base = str(tmp_path / "cow")
    cfg = table_config("COPY_ON_WRITE")
    model, snaps = Model(), {}
    for t in range(1, n + 1):
        b = batch(range(0, 6), t)  # every commit rewrites both file groups
        inst = write(base, b, cfg)
        model.upsert(b)
        snaps[inst] = model.table()
    return base, model, snaps


def test_keep_latest_commits_layout_and_time_travel(tmp_path):
    base, model, snaps = _cow(tmp_path)
    commits = sorted(snaps)
    res = cl.run_clean(load(base), HoodieConfig({cl.COMMITS_RETAINED: "3"}), LocalExecutor())
    assert res["earliest_commit_to_retain"] == commits[-3]
    # per file group: slices of the 3 retained commits + the one serving the retain point
    kept = {f.rsplit("_", 1)[-1].split(".")[0] for f in data_files(base) if f.endswith(".parquet")}
    assert kept == set(commits[-4:])
    for ts in commits[-3:]:
        assert snapshot(base, as_of=ts) == snaps[ts]
    # before the retain point the read is refused, as Hudi's readers refuse it: which slices
    # a clean removed there depends on each file group's history, so rows could be missing
    with pytest.raises(HoodieTimelineError, match="retain more commits"):
        snapshot(base, as_of=commits[-4])
    assert snapshot(base) == model.table()
    tl = load(base).timeline
    clean_inst = [i for i in tl.instants if i.action == Action.CLEAN][0]
    assert clean_inst.state == State.COMPLETED
    assert f"{clean_inst.timestamp}.clean.requested" in timeline_files(base)
    meta = deserialize_plan("HoodieCleanMetadata", tl.read_details(clean_inst))
    assert meta["earliestCommitToRetain"] == commits[-3] and meta["totalFilesDeleted"] == res["files_deleted"]
    # nothing more to clean
    again = cl.run_clean(load(base), HoodieConfig({cl.COMMITS_RETAINED: "3"}), LocalExecutor())
    assert again["instant"] is None and "no file slice" in again["reason"]


def test_not_enough_commits(tmp_path):
    base, _, _ = _cow(tmp_path, n=3)
    res = cl.run_clean(load(base), HoodieConfig({}), LocalExecutor())
    assert res["instant"] is None and "not enough commits" in res["reason"]


def test_keep_latest_file_versions(tmp_path):
    base, model, snaps = _cow(tmp_path, n=6)
    cl.run_clean(load(base), HoodieConfig({cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS, cl.FILE_VERSIONS_RETAINED: "2"}),
                 LocalExecutor())
    kept = sorted({f.rsplit("_", 1)[-1].split(".")[0] for f in data_files(base) if f.endswith(".parquet")})
    assert kept == sorted(snaps)[-2:]
    assert snapshot(base) == model.table()


def test_savepoint_blocks_cleaning(tmp_path):
    base, model, snaps = _cow(tmp_path)
    commits = sorted(snaps)
    res = sp.create_savepoint(load(base), commits[1], user="me", comments="keep")
    assert res["files"] == 2 and f"{commits[1]}.savepoint" in timeline_files(base)
    assert sp.create_savepoint(load(base), commits[1])["reason"] == "savepoint already exists"
    cl.run_clean(load(base), HoodieConfig({cl.COMMITS_RETAINED: "2"}), LocalExecutor())
    kept = {f.rsplit("_", 1)[-1].split(".")[0] for f in data_files(base) if f.endswith(".parquet")}
    assert commits[1] in kept and commits[0] not in kept
    sp.delete_savepoint(load(base), commits[1])
    assert f"{commits[1]}.savepoint" not in timeline_files(base)
    cl.run_clean(load(base), HoodieConfig({cl.COMMITS_RETAINED: "2"}), LocalExecutor())
    kept = {f.rsplit("_", 1)[-1].split(".")[0] for f in data_files(base) if f.endswith(".parquet")}
    assert commits[1] not in kept
    assert snapshot(base) == model.table()


def test_savepoint_refuses_cleaned_commit(tmp_path):
    base, _, snaps = _cow(tmp_path)
    cl.run_clean(load(base), HoodieConfig({cl.COMMITS_RETAINED: "2"}), LocalExecutor())
    from airflow_hoodie.errors import HoodieConfigError

    with pytest.raises(HoodieConfigError, match="earliestCommitToRetain"):
        sp.create_savepoint(load(base), sorted(snaps)[0])


def test_crash_after_requested_and_after_inflight(tmp_path):
    base, model, snaps = _cow(tmp_path)
    conf = HoodieConfig({cl.COMMITS_RETAINED: "3"})
    inst, plan, _ = cl.plan_clean(load(base), CleanSettings.from_config(conf))
    assert f"{inst.timestamp}.clean.requested" in timeline_files(base)
    # crash before inflight: rerun finishes the pending clean
    res = cl.run_clean(load(base), conf, LocalExecutor())
    assert res["instant"] == inst.timestamp and res["resumed"] == [inst.timestamp]
    # crash after some deletes (inflight): rerun completes with missing files counted as deleted
    base2, model2, snaps2 = _cow(tmp_path / "b")
    inst2, plan2, _ = cl.plan_clean(load(base2), CleanSettings.from_config(conf))
    t = load(base2)
    t.format.timeline_writer(t.storage, t.base_path).transition_to_inflight(
        Instant(inst2.timestamp, Action.CLEAN, State.REQUESTED), t.timeline.read_plan(inst2))
    first = next(iter(plan2["filePathsToBeDeletedPerPartition"].values()))[0]["filePath"]
    t.storage.delete(first.replace("file://", ""))
    res2 = cl.run_clean(load(base2), conf, LocalExecutor())
    assert res2["failed"] == 0 and f"{inst2.timestamp}.clean" in timeline_files(base2)
    assert snapshot(base2) == model2.table()
