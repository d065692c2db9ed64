"""The operators against a real Spark standalone cluster on 127.0.0.1.

Starts a master and a worker from the installed pyspark (``bin/spark-class``), points a
Spark connection at the master, runs upsert -> upsert -> compaction plan -> compaction
execute through the operators (our package travels to the executors as ``--py-files``),
checks the table, and stops exactly the processes it started, by pid.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pendulum
import pytest

from tests.airflow.conftest import load_dag_file

pytestmark = pytest.mark.timeout(900)

SPARK_HOME = pathlib.Path(__import__("pyspark").__file__).parent
JOBS = ("upsert", "compaction_plan", "compaction_execute")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path: pathlib.Path, text: str, timeout: float, proc: subprocess.Popen) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{path.name} exited early:\n{path.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)
    raise TimeoutError(f"{text!r} not in {path} after {timeout}s:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.fixture
def spark_cluster(tmp_path, monkeypatch):
    spark_class = SPARK_HOME / "bin" / "spark-class"
    if not spark_class.exists():
        pytest.skip("pyspark has no bin/spark-class")
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, SPARK_NO_DAEMONIZE="1")
    port, ui_port, worker_ui = _free_port(), _free_port(), _free_port()
    work_dir = tmp_path / "worker"
    work_dir.mkdir()
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    procs: list[subprocess.Popen] = []
    try:
        with open(master_log, "w") as out:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(ui_port)],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(master_log, "I have been elected leader", 90, procs[0])
        master = f"spark://127.0.0.1:{port}"
        with open(worker_log, "w") as out:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1",
                 "--webui-port", str(worker_ui), "--cores", "2", "--memory", "3g", "--work-dir", str(work_dir)],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(worker_log, "Successfully registered with master", 90, procs[1])
        monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_STANDALONE", json.dumps(
            {"conn_type": "spark", "host": "spark://127.0.0.1", "port": port}))
        yield {"master": master, "work_dir": work_dir, "pids": [p.pid for p in procs]}
    finally:
        for proc in reversed(procs):  # only what we started, by pid
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def _batch(path: pathlib.Path, keys: range, fare: float) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({
        "uuid": [f"k{k:04d}" for k in keys],
        "fare": [fare] * len(keys),
        "ts": [int(fare * 1000) + k for k in keys],
        "city": ["sf" if k % 2 else "nyc" for k in keys],
    }), path)
    return str(path)


def test_upsert_and_compaction_on_a_standalone_cluster(airflow_db, spark_cluster, tmp_path, monkeypatch):
    from airflow_hoodie.hooks.hoodie import find_jobs_dir

    missing = [j for j in JOBS if not (find_jobs_dir() / f"{j}.py").exists()]
    if missing:
        pytest.skip(f"job scripts not written yet: {missing}")
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    base = tmp_path / "table"
    first = _batch(tmp_path / "b1.parquet", range(0, 100), 1.0)
    second = _batch(tmp_path / "b2.parquet", range(50, 150), 2.0)
    conf = {
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "city",
        # no MOR small-file merge: the second upsert leaves log files for the compaction
        "hoodie.parquet.small.file.limit": "0",
    }
    dag = load_dag_file("standalone_cluster", f"""
        import pendulum
        from airflow.sdk import DAG
        from airflow_hoodie.operators.hoodie import (HoodieCompactionExecuteOperator,
            HoodieCompactionPlanOperator, HoodieUpsertOperator)
        common = dict(base_path={str(base)!r}, spark_conn_id="spark_standalone",
                      spark_submit_kwargs={{"executor_memory": "1g", "total_executor_cores": 2}})
        with DAG("standalone_cluster", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
            u1 = HoodieUpsertOperator(task_id="upsert_1", table_name="cluster_t", source={first!r},
                                      hoodie_conf={conf!r}, **common)
            u2 = HoodieUpsertOperator(task_id="upsert_2", table_name="cluster_t", source={second!r},
                                      hoodie_conf={conf!r}, **common)
            plan = HoodieCompactionPlanOperator(task_id="plan",
                hoodie_conf={{"hoodie.compact.inline.max.delta.commits": "1"}}, **common)
            run = HoodieCompactionExecuteOperator(task_id="execute", **common)
            u1 >> u2 >> plan >> run
    """)
    dr = dag.test(logical_date=pendulum.now("UTC"))
    states = {ti.task_id: ti.state for ti in dr.get_task_instances()}
    assert states == {"upsert_1": "success", "upsert_2": "success", "plan": "success", "execute": "success"}

    # the jobs ran on the cluster, with our package shipped to it
    apps = list(spark_cluster["work_dir"].glob("app-*"))
    assert len(apps) >= 3, apps  # both upserts and the compaction ran executors there
    shipped = list(spark_cluster["work_dir"].rglob("airflow_hoodie-*.zip"))
    assert shipped, "the package zip never reached the worker"

    from airflow_hoodie.table.read import read_table

    snapshot = read_table(str(base))
    rows = dict(zip(snapshot.column("uuid").to_pylist(), snapshot.column("fare").to_pylist()))
    assert len(rows) == 150
    assert all(rows[f"k{k:04d}"] == (2.0 if k >= 50 else 1.0) for k in range(150))
    compacted = read_table(str(base), query_type="read_optimized")
    assert dict(zip(compacted.column("uuid").to_pylist(), compacted.column("fare").to_pylist())) == rows
