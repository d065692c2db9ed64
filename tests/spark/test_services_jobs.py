"""The service job scripts as processes: JSON result line, exit codes, SIGKILL at every
timeline transition and mid-write, then rerun (nothing lost, nothing partial visible)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.actions.services_fixtures import Model, batch, data_files, load, snapshot, table_config, timeline_files, write
from tests.actions.test_archive_table import NO_METADATA_TABLE

REPO = Path(__file__).resolve().parents[2]


def run(script, *args, crash=None):
    env = {k: v for k, v in os.environ.items() if k != "AIRFLOW_HOODIE_CRASH_AT"}
    if crash:
        env["AIRFLOW_HOODIE_CRASH_AT"] = crash
    proc = subprocess.run([sys.executable, str(REPO / "spark_jobs" / f"{script}.py"), *args],
                          capture_output=True, text=True, env=env, cwd=str(REPO), timeout=120)
    result = None
    if proc.returncode == 0:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    return proc, result


def _job_main(script):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"job_{script}", REPO / "spark_jobs" / f"{script}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main


def fast(script, *args, crash=None, tmp=None):
    """Run a job in-process (or in a forked child when it is to be killed): no interpreter start-up."""
    import multiprocessing

    main = _job_main(script)
    result_file = os.path.join(tmp or "/tmp", f"res-{os.getpid()}-{script}.json")
    argv = [*args, "--result-file", result_file]
    if crash:
        def child():
            os.environ["AIRFLOW_HOODIE_CRASH_AT"] = crash
            os._exit(main(argv))

        proc = multiprocessing.get_context("fork").Process(target=child)
        proc.start()
        proc.join(120)
        return proc.exitcode, None
    rc = main(argv)
    return rc, (json.loads(open(result_file).read()) if rc == 0 else None)


def mor_table(tmp_path, name="t", n=6):
    base = str(tmp_path / name)
    cfg = table_config()
    model = Model()
    for t in range(1, n + 1):
        b = batch(range(t * 2, t * 2 + 8), t)
        write(base, b, cfg)
        model.upsert(b)
    return base, cfg, model


def test_job_results_and_errors(tmp_path):
    base, cfg, model = mor_table(tmp_path)
    proc, res = run("compaction_plan", "--base-path", base, "--hoodie-conf", "hoodie.compact.inline.max.delta.commits=50")
    assert res["instant"] is None and "not met" in res["reason"]
    out = tmp_path / "r.json"
    proc, res = run("compaction_plan", "--base-path", base, "--result-file", str(out))
    assert res["state"] == "REQUESTED" and json.loads(out.read_text()) == res  # Hudi's spelling, every job
    proc, res2 = run("compaction_execute", "--base-path", base, "--local")
    assert res2["instant"] == res["instant"] and res2["state"] == "COMPLETED"
    proc, res3 = run("compaction_execute", "--base-path", base, "--local")
    assert res3["instant"] is None
    proc, res = run("clustering", "--base-path", base, "--mode", "scheduleAndExecute", "--local",
                    "--hoodie-conf", "hoodie.clustering.plan.strategy.sort.columns=id")
    assert res["state"] == "COMPLETED"
    proc, res = run("clean", "--base-path", base, "--local", "--hoodie-conf", "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
                    "--hoodie-conf", "hoodie.cleaner.fileversions.retained=1")
    assert res["state"] == "COMPLETED" and res["files_deleted"] > 0
    # the latest write: the clean just removed the files the clustering replaced, so a
    # savepoint of an earlier delta commit is refused (a restore to it would lose rows)
    first = sorted(f.split(".")[0] for f in timeline_files(base)
                   if f.endswith((".deltacommit", ".commit", ".replacecommit")))[-1]
    proc, res = run("savepoint", "--base-path", base, "--instant-time", first)
    assert res["state"] == "COMPLETED"
    proc, res = run("savepoint", "--base-path", base, "--instant-time", first, "--delete")
    assert res["state"] == "deleted"
    proc, res = run("archive", "--base-path", base)
    assert res["instant"] is None
    assert snapshot(base) == model.table()
    # failures: non-zero exit, one clear ERROR line
    proc, _ = run("archive", "--base-path", base, "--hoodie-conf", "hoodie.keep.min.commits=5")
    assert proc.returncode != 0 and "ERROR: HoodieConfigError: Increase hoodie.keep.min.commits=5" in proc.stderr
    proc, _ = run("clean", "--base-path", str(tmp_path / "missing"), "--local")
    assert proc.returncode != 0 and "ERROR:" in proc.stderr
    proc, _ = run("compaction_execute", "--base-path", base, "--instant-time", "20200101000000000", "--local")
    assert proc.returncode != 0 and "compaction_plan.py" in proc.stderr


COMPACTION_POINTS = ["compaction.before_inflight", "compaction.after_inflight", "compaction.task:2",
                     "compaction.before_commit"]
CLUSTERING_POINTS = ["clustering.before_inflight", "clustering.after_inflight", "clustering.task:2",
                     "clustering.before_commit"]
CLEAN_POINTS = ["clean.before_inflight", "clean.task:3", "clean.before_commit"]
ARCHIVE_POINTS = ["archive.before_write", "archive.after_write", "archive.delete:3", "archive.delete:9"]


@pytest.mark.parametrize("point", COMPACTION_POINTS + CLUSTERING_POINTS)
def test_sigkill_compaction_and_clustering_then_rerun(tmp_path, point):
    base, cfg, model = mor_table(tmp_path)
    if point.startswith("compaction"):
        _, sched = fast("compaction_plan", "--base-path", base, tmp=str(tmp_path))
        args = ("compaction_execute", "--base-path", base, "--local")
    else:
        _, sched = fast("clustering", "--base-path", base, "--mode", "schedule", tmp=str(tmp_path))
        args = ("clustering", "--base-path", base, "--mode", "execute", "--local")
    ts = sched["instant"]
    rc, _ = fast(*args, crash=point, tmp=str(tmp_path))
    assert rc == -9
    assert snapshot(base) == model.table()  # partial output invisible
    rc, res = fast(*args, tmp=str(tmp_path))
    assert rc == 0 and res["state"] == "COMPLETED"
    assert snapshot(base) == model.table()
    assert snapshot(base, query_type="read_optimized") == model.table() or point.startswith("clustering")
    written = [f for f in data_files(base) if f.endswith(f"_{ts}.parquet")]
    assert len(written) == res.get("operations", res.get("files_written"))
    assert not os.path.exists(os.path.join(base, ".hoodie", ".temp", ts))


@pytest.mark.parametrize("point", CLEAN_POINTS)
def test_sigkill_clean_then_rerun(tmp_path, point):
    base = str(tmp_path / "cow")
    cfg = table_config("COPY_ON_WRITE")
    model = Model()
    for t in range(1, 7):
        b = batch(range(0, 6), t)
        write(base, b, cfg)
        model.upsert(b)
    conf = ("--hoodie-conf", "hoodie.cleaner.commits.retained=2")
    rc, _ = fast("clean", "--base-path", base, "--local", *conf, crash=point, tmp=str(tmp_path))
    assert rc == -9
    assert snapshot(base) == model.table()
    rc, res = fast("clean", "--base-path", base, "--local", *conf, tmp=str(tmp_path))
    assert res["state"] == "COMPLETED" and res["resumed"]
    kept = {f.rsplit("_", 1)[-1].split(".")[0] for f in data_files(base)}
    assert len(kept) == 3
    assert snapshot(base) == model.table()


@pytest.mark.parametrize("point", ARCHIVE_POINTS)
def test_sigkill_archive_then_rerun(tmp_path, point):
    base = str(tmp_path / "cow")
    cfg = table_config("COPY_ON_WRITE", **NO_METADATA_TABLE)  # the archival rules alone
    commits = [write(base, batch(range(t, t + 2), t), cfg) for t in range(1, 9)]
    conf = ("--hoodie-conf", "hoodie.keep.min.commits=4", "--hoodie-conf", "hoodie.keep.max.commits=6",
            "--hoodie-conf", "hoodie.cleaner.commits.retained=3", "--hoodie-conf", "hoodie.commits.archival.batch=1")
    rc, _ = fast("archive", "--base-path", base, *conf, crash=point, tmp=str(tmp_path))
    assert rc == -9
    # whatever is still active must not look pending
    for f in timeline_files(base):
        ts = f.split(".")[0]
        if not f.endswith(".commit"):
            assert f"{ts}.commit" in timeline_files(base) or ts not in commits
    rc, res = fast("archive", "--base-path", base, *conf, tmp=str(tmp_path))
    assert rc == 0
    assert [f for f in timeline_files(base) if f.endswith(".commit")] == [f"{t}.commit" for t in commits[4:]]
    assert sorted(load(base).archived_timeline().timestamps) == commits[:4]


def test_savepoint_job_restore(tmp_path):
    base = str(tmp_path / "cow")
    cfg = table_config("COPY_ON_WRITE")
    model = Model()
    commits = []
    for t in range(1, 4):
        b = batch(range(t, t + 3), t)
        commits.append(write(base, b, cfg))
        model.upsert(b)
    at = model.table()
    rc, res = fast("savepoint", "--base-path", base, "--instant-time", commits[-1], tmp=str(tmp_path))
    assert rc == 0 and res["state"] == "COMPLETED"
    for t in range(5, 8):
        write(base, batch(range(t, t + 3), t), cfg)
    rc, res = fast("savepoint", "--base-path", base, "--instant-time", commits[-1], "--restore", tmp=str(tmp_path))
    assert rc == 0 and res["action"] == "restore" and len(res["rolled_back"]) == 3
    assert snapshot(base) == at
