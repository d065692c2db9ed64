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

from tests.actions.services_fixtures import Model, batch, load, snapshot, table_config, timeline_files, write

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
    res = ar.run_archive(load(base), HoodieConfig(CONF))
    assert res["archived_instants"] == commits[:5]
    active = timeline_files(base)
    assert all(not f.startswith(tuple(commits[:5])) for f in active)
    assert [f for f in active if f.endswith(".commit")] == [f"{t}.commit" for t in commits[5:]]
    assert os.listdir(os.path.join(base, ".hoodie", "archived")) == [".commits_.archive.1_1-0-1"]
    arch = load(base).archived_timeline()
    assert arch.timestamps == commits[:5] if isinstance(arch.timestamps, list) else list(arch.timestamps) == commits[:5]
    states = sorted((e["commitTime"], e["actionState"]) for e in arch.entries)
    assert states == sorted((t, s) for t in commits[:5] for s in ("REQUESTED", "INFLIGHT", "COMPLETED"))
    done = [e for e in arch.entries if e["actionState"] == "COMPLETED"]
    assert all(e["hoodieCommitMetadata"]["partitionToWriteStats"] for e in done)
    assert snapshot(base) == model.table()
    # second run appends to the same archive file (local storage can append)
    for t in range(20, 24):
        write(base, batch(range(t, t + 2), t), cfg)
    ar.run_archive(load(base), HoodieConfig(CONF))
    assert os.listdir(os.path.join(base, ".hoodie", "archived")) == [".commits_.archive.1_1-0-1"]
    assert len(load(base).archived_timeline().instants) == 9


def test_pending_compaction_blocks_archival(tmp_path):
    base, cfg, model, commits = _commits(tmp_path, 3, "MERGE_ON_READ")
    for t in range(10, 13):
        commits.append(write(base, batch(range(1, 4), t), cfg))
    pending = c.schedule_compaction(load(base), HoodieConfig({}), force=True).instant.timestamp
    for t in range(20, 24):
        commits.append(write(base, batch(range(1, 3), t), cfg))
    before = snapshot(base)
    res = ar.run_archive(load(base), HoodieConfig({**CONF, ar.BATCH: "1"}))
    # Hudi keeps the greatest completed delta commit before the pending compaction (and on
    # MOR the last hoodie.compact.inline.max.delta.commits=5 delta commits); older ones go,
    # while the pending plan still reads their log files
    assert res["archived_instants"] == commits[:5] and all(t < pending for t in res["archived_instants"])
    assert snapshot(base) == before
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
    assert len(archived_cleans) == len(cleans) - 4


def test_merge_small_archive_files_and_recovery(tmp_path):
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
    merged = ar.merge_archive_files_if_needed(load(base), HoodieConfig({ar.MERGE_ENABLE: "true", ar.MERGE_FILES_BATCH: "3"}))
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
