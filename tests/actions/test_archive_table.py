"""Archival of real tables: which instants move, archive file layout, read-back, merging, recovery."""

import os

import pytest

from airflow_hoodie.actions import archive as ar
from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions import savepoint as sp
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError

from tests.actions.services_fixtures import (HUDI_RS_V6_PENDING_COMPACTION_GAP, Model, batch, completion_times,
                                             history_files, history_rows, load, snapshot, table_config,
                                             timeline_files, write)
from tests.actions.table_versions import current_version, table_version  # noqa: F401  (the fixture the module runs under)

pytestmark = pytest.mark.usefixtures("table_version")

# the archival rules alone: with a metadata table, nothing past its latest compaction is
# archived (tests/table/metadata_table/test_metadata_compaction.py)
NO_METADATA_TABLE = {"hoodie.metadata.enable": "false"}
CONF = {ar.MIN_COMMITS: "4", ar.MAX_COMMITS: "6", ar.BATCH: "2", cl.COMMITS_RETAINED: "3",
        "hoodie.metadata.enable": "false"}


def _commits(tmp_path, n, table_type="COPY_ON_WRITE"):
    base = str(tmp_path / table_type)
    cfg = table_config(table_type, **NO_METADATA_TABLE)
    model = Model()
    out = []
    for t in range(1, n + 1):
        b = batch(range(t, t + 3), t)
        out.append(write(base, b, cfg))
        model.upsert(b)
    return base, cfg, model, out


def test_refuses_min_commits_not_above_cleaner_retained(tmp_path):
    base, *_ = _commits(tmp_path, 2)
    with pytest.raises(HoodieConfigError, match="Increase hoodie.keep.min.commits=3"):
        ar.run_archive(load(base), HoodieConfig({ar.MIN_COMMITS: "3", ar.MAX_COMMITS: "5", cl.COMMITS_RETAINED: "3"}))


def test_archive_commits_and_read_back(tmp_path):
    base, cfg, model, commits = _commits(tmp_path, 9)
    assert ar.run_archive(load(base), HoodieConfig({**CONF, ar.MAX_COMMITS: "9", ar.MIN_COMMITS: "5"}))["instant"] is None
    completed_at = completion_times(base) if current_version() >= 8 else {}
    res = ar.run_archive(load(base), HoodieConfig(CONF))
    assert res["archived_instants"] == commits[:5]
    active = timeline_files(base)
    assert all(not f.startswith(tuple(commits[:5])) for f in active)
    assert [f for f in active if f.endswith(".commit")] == [f"{t}.commit" for t in commits[5:]]
    arch = load(base).archived_timeline()
    assert arch.timestamps == commits[:5] if isinstance(arch.timestamps, list) else list(arch.timestamps) == commits[:5]
    if current_version() < 8:
        assert os.listdir(os.path.join(base, ".hoodie", "archived")) == [".commits_.archive.1_1-0-1"]
        states = sorted((e["commitTime"], e["actionState"]) for e in arch.entries)
        assert states == sorted((t, s) for t in commits[:5] for s in ("REQUESTED", "INFLIGHT", "COMPLETED"))
        done = [e for e in arch.entries if e["actionState"] == "COMPLETED"]
        assert all(e["hoodieCommitMetadata"]["partitionToWriteStats"] for e in done)
    else:
        # Hudi 1.x LSM history: one L0 parquet file <min>_<max>_0.parquet, listed by manifest_1,
        # one row per completed instant with its completion time and completed-file bytes
        first = f"{commits[0]}_{commits[4]}_0.parquet"
        assert history_files(base) == {"listed": [first], "all": [first, "_version_", "manifest_1"], "version": ["1"]}
        rows = history_rows(base)
        assert [(r["instantTime"], r["completionTime"], r["action"]) for r in rows] == [
            (t, completed_at[t], "commit") for t in commits[:5]]
        assert [i.completion_time for i in arch.instants] == [completed_at[t] for t in commits[:5]]
        assert all(arch.metadata(t)["partitionToWriteStats"] for t in commits[:5])
    assert snapshot(base) == model.table()
    # second run: version 6 appends to the same archive file (local storage can append);
    # Hudi 1.x writes a second L0 file and a new manifest listing both
    for t in range(20, 24):
        commits.append(write(base, batch(range(t, t + 2), t), cfg))
    res = ar.run_archive(load(base), HoodieConfig(CONF))
    if current_version() < 8:
        assert os.listdir(os.path.join(base, ".hoodie", "archived")) == [".commits_.archive.1_1-0-1"]
    else:
        second = f"{res['archived_instants'][0]}_{res['archived_instants'][-1]}_0.parquet"
        assert history_files(base)["listed"] == [first, second] and history_files(base)["version"] == ["2"]
        assert [r["instantTime"] for r in history_rows(base)] == commits[:9]
    assert len(load(base).archived_timeline().instants) == 9


def test_pending_compaction_blocks_archival(tmp_path):
    base, cfg, model, commits = _commits(tmp_path, 3, "MERGE_ON_READ")
    for t in range(10, 13):
        commits.append(write(base, batch(range(1, 4), t), cfg))
    pending = c.schedule_compaction(load(base), HoodieConfig({}), force=True).instant.timestamp
    for t in range(20, 24):
        commits.append(write(base, batch(range(1, 3), t), cfg))
    before = snapshot(base, hudi_rs_gap=HUDI_RS_V6_PENDING_COMPACTION_GAP)
    res = ar.run_archive(load(base), HoodieConfig({**CONF, ar.BATCH: "1"}))
    # Hudi keeps the greatest completed delta commit before the pending compaction (and on
    # MOR the last hoodie.compact.inline.max.delta.commits=5 delta commits); older ones go,
    # while the pending plan still reads their log files
    assert res["archived_instants"] == commits[:5] and all(t < pending for t in res["archived_instants"])
    assert snapshot(base, hudi_rs_gap=HUDI_RS_V6_PENDING_COMPACTION_GAP) == before
    c.execute_pending_compactions(load(base), LocalExecutor())
    assert snapshot(base) == before
    for t in range(30, 33):
        write(base, batch(range(1, 3), t), cfg)
    before = snapshot(base)
    res = ar.run_archive(load(base), HoodieConfig({**CONF, ar.BATCH: "1"}))
    # the compaction completed: the 5 newest of the 7 delta commits after it stay for the trigger
    assert res["archived_instants"] == [commits[5], pending, commits[6], commits[7]]
    assert snapshot(base) == before


def test_savepoint_blocks_archival_unless_beyond(tmp_path):
    base, cfg, model, commits = _commits(tmp_path, 10)
    sp.create_savepoint(load(base), commits[2])
    res = ar.run_archive(load(base), HoodieConfig({**CONF, ar.BATCH: "1"}))
    assert res["archived_instants"] == commits[:2]
    res = ar.run_archive(load(base), HoodieConfig({**CONF, ar.BATCH: "1", ar.BEYOND_SAVEPOINT: "true"}))
    assert commits[2] not in res["archived_instants"] and res["archived_instants"][0] == commits[3]
    assert f"{commits[2]}.commit" in timeline_files(base) and f"{commits[2]}.savepoint" in timeline_files(base)


def test_clean_and_rollback_archived_beyond_max(tmp_path):
    base, cfg, model, commits = _commits(tmp_path, 6)
    for k in range(8):
        write(base, batch(range(0, 3), 100 + k), cfg)
        cl.run_clean(load(base), HoodieConfig({cl.COMMITS_RETAINED: "1"}), LocalExecutor())
    cleans = [f for f in timeline_files(base) if f.endswith(".clean")]
    res = ar.run_archive(load(base), HoodieConfig({**CONF, ar.BATCH: "1"}))
    archived_cleans = [t for t in res["archived_instants"] if f"{t}.clean" in cleans]
    if current_version() < 8:
        # Hudi 0.14: completed cleans beyond keep.max.commits go, down to keep.min.commits
        assert len(archived_cleans) == len(cleans) - 4
    else:
        # Hudi 1.x (TimelineArchiverV2): a clean goes with the commits, when requested before
        # the newest commit archived
        clean_times = sorted(f.split(".")[0] for f in cleans)
        commits_gone = [t for t in res["archived_instants"] if t not in clean_times]
        assert commits_gone and archived_cleans == [t for t in clean_times if t < max(commits_gone)]
        assert 0 < len(archived_cleans) < len(cleans)
    assert not [f for f in timeline_files(base) if f.split(".")[0] in archived_cleans]


# version 6 only: Hudi 1.x has no archive log files to merge; its LSM history compacts L0 files
# into L1 instead (tests/actions/test_archive_v9.py::
# test_a_second_archival_adds_a_level0_file_and_the_layer_compacts, and the crash recovery in
# test_an_archival_killed_midway_is_finished_by_the_retry)
@pytest.mark.parametrize("table_version", [6], indirect=True, ids=["v6"])
def test_merge_small_archive_files_and_recovery(tmp_path, table_version):
    base, cfg, model, commits = _commits(tmp_path, 8)
    t = load(base)
    folder = t.archive_path
    conf = HoodieConfig({**CONF, ar.BATCH: "1"})
    ar.run_archive(t, conf)
    # simulate object-store style: several small files
    src = os.path.join(folder, ".commits_.archive.1_1-0-1")
    data = open(src, "rb").read()
    for v in (2, 3):
        open(os.path.join(folder, f".commits_.archive.{v}_1-0-1"), "wb").write(data)
    n_before = len(load(base).archived_timeline().entries)
    merged = ar.merge_archive_files_if_needed(load(base), ar.ArchiveSettings.from_config(
        HoodieConfig({ar.MERGE_ENABLE: "true", ar.MERGE_FILES_BATCH: "3"})))
    assert merged == 3
    assert os.listdir(folder) == [".commits_.archive.4_1-0-1"]
    assert len(load(base).archived_timeline().entries) == n_before
    # recovery: a plan left behind with all candidates present -> the partial merged file goes
    from airflow_hoodie.actions.service_common import serialize_plan

    open(os.path.join(folder, ".commits_.archive.5_1-0-1"), "wb").write(b"#HUDI#partial")
    open(os.path.join(folder, ar.MERGE_PLAN_FILE), "wb").write(serialize_plan(
        "HoodieMergeArchiveFilePlan", {"version": 1, "candidate": [".commits_.archive.4_1-0-1"],
                                       "mergedArchiveFileName": ".commits_.archive.5_1-0-1"}))
    assert ar.recover_merge(load(base)) == 1
    assert sorted(os.listdir(folder)) == [".commits_.archive.4_1-0-1"]


def test_a_few_qualifying_instants_are_archived_whatever_the_batch_size(tmp_path):
    """hoodie.commits.archival.batch sizes archive blocks in Hudi; it is not a minimum count."""
    base = str(tmp_path / "t")
    cfg = table_config("COPY_ON_WRITE", **NO_METADATA_TABLE)
    for t in range(1, 9):
        write(base, batch(range(t, t + 2), t), cfg)
    res = ar.run_archive(load(base), HoodieConfig({ar.MIN_COMMITS: "6", ar.MAX_COMMITS: "7", ar.BATCH: "10",
                                                      cl.COMMITS_RETAINED: "3", "hoodie.metadata.enable": "false"}))
    # 8 commits, max 7, min 6: the 2 oldest go, though the batch size is 10
    assert res["archived"] == 2 and len(res["archived_instants"]) == 2
    assert not [f for f in timeline_files(base) if f.split(".")[0] in res["archived_instants"]]
