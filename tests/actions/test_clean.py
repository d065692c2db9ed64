import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.settings.clean import CleanSettings
from airflow_hoodie.table.timeline.instant import Action, State

from tests.actions.services_fixtures import G, inst, slice_, ts


def commits(*ns, action=Action.COMMIT):
    return [inst(n, action) for n in ns]


def test_earliest_commit_to_retain_keep_latest_commits():
    tl = commits(*range(1, 13))
    e = cl.earliest_commit_to_retain(tl, cl.KEEP_LATEST_COMMITS, 10, 24, ts(12))
    assert e.timestamp == ts(3)
    assert cl.earliest_commit_to_retain(commits(*range(1, 11)), cl.KEEP_LATEST_COMMITS, 10, 24, None) is None


def test_earliest_commit_to_retain_stops_at_oldest_pending_write():
    tl = commits(*range(1, 13)) + [inst(2, Action.DELTA_COMMIT, State.INFLIGHT)]
    tl = [i for i in tl if i.timestamp != ts(2) or i.state != State.COMPLETED]
    e = cl.earliest_commit_to_retain(tl, cl.KEEP_LATEST_COMMITS, 5, 24, None)
    assert e.timestamp == ts(1)


def test_earliest_by_hours():
    tl = commits(0, 30, 90, 150, 200)
    e = cl.earliest_commit_to_retain(tl, cl.KEEP_LATEST_BY_HOURS, 0, 2, ts(200))
    assert e.timestamp == ts(90)


def _group(fid, *ns, part="p"):
    return G(part, fid, [slice_(part, fid, n, 100, (10,)) for n in ns])


def _names(files):
    return sorted(f.file_name for f in files)


def test_keep_latest_commits_keeps_latest_and_the_slice_serving_the_retain_point():
    g = _group("a", 1, 3, 5, 7)
    inputs = cl.CleanInputs(cl.KEEP_LATEST_COMMITS, inst(6), 3)
    out = cl.files_to_clean([g], inputs)
    # slice 7 is latest, slice 5 serves reads as of commit 6; 1 and 3 go (base + log)
    assert {f.file_name.split("_")[-1] for f in out if f.file_name.endswith(".parquet")} == {
        ts(1) + ".parquet", ts(3) + ".parquet"}
    assert len(out) == 4


def test_savepoint_and_pending_compaction_protect_slices():
    g = _group("a", 1, 3, 5, 7)
    sp = g.slices[0].base_file.file_name
    inputs = cl.CleanInputs(cl.KEEP_LATEST_COMMITS, inst(6), 3, savepointed_files={sp},
                            pending_compaction_base={("p", "a"): ts(3)})
    assert cl.files_to_clean([g], inputs) == []


def test_nothing_to_clean_without_a_retain_point():
    assert cl.files_to_clean([_group("a", 1, 2, 3)], cl.CleanInputs(cl.KEEP_LATEST_COMMITS, None, 3)) == []


def test_keep_latest_file_versions():
    g = _group("a", 1, 2, 3, 4, 5)
    out = cl.files_to_clean([g], cl.CleanInputs(cl.KEEP_LATEST_FILE_VERSIONS, None, 3))
    assert {f.file_name for f in out if f.file_name.endswith("parquet")} == {
        g.slices[0].base_file.file_name, g.slices[1].base_file.file_name}
    # a savepointed slice is neither counted nor deleted
    sp = {g.slices[3].base_file.file_name}
    out = cl.files_to_clean([g], cl.CleanInputs(cl.KEEP_LATEST_FILE_VERSIONS, None, 3, savepointed_files=sp))
    assert {f.file_name for f in out if f.file_name.endswith("parquet")} == {g.slices[0].base_file.file_name}
    # pending compaction: its input slice is kept and uses one version
    pc = {("p", "a"): ts(5)}
    out = cl.files_to_clean([g], cl.CleanInputs(cl.KEEP_LATEST_FILE_VERSIONS, None, 3, pending_compaction_base=pc))
    assert {f.file_name for f in out if f.file_name.endswith("parquet")} == {
        g.slices[0].base_file.file_name, g.slices[1].base_file.file_name}


def test_replaced_groups_leave_after_retention():
    g = _group("old", 1, 2)
    inputs = cl.CleanInputs(cl.KEEP_LATEST_COMMITS, inst(5), 3, replaced={("p", "old"): ts(4)})
    assert len(cl.files_to_clean([g], inputs)) == 4
    inputs = cl.CleanInputs(cl.KEEP_LATEST_COMMITS, inst(5), 3, replaced={("p", "old"): ts(6)})
    assert cl.files_to_clean([g], inputs) == []


def test_plan_and_metadata_records():
    g = _group("a", 1, 3, 5)
    files = cl.files_to_clean([g], cl.CleanInputs(cl.KEEP_LATEST_COMMITS, inst(4), 3))
    plan = cl.build_cleaner_plan(files, inst(4), ts(5), cl.KEEP_LATEST_COMMITS, uri_of=lambda p: "file:" + p)
    assert plan["earliestInstantToRetain"] == {"timestamp": ts(4), "action": "commit", "state": "COMPLETED"}
    assert [f["filePath"] for f in plan["filePathsToBeDeletedPerPartition"]["p"]] == ["file:" + f.path for f in files]
    meta = cl.build_clean_metadata(plan, ts(6), [("p", f.path, True) for f in files], 12)
    assert meta["totalFilesDeleted"] == 2 and meta["earliestCommitToRetain"] == ts(4)
    assert meta["partitionMetadata"]["p"]["successDeleteFiles"] == [f.file_name for f in files]


def test_policy_validation():
    with pytest.raises(HoodieConfigError):
        CleanSettings.from_config(HoodieConfig({cl.POLICY: "KEEP_NOTHING"}))
