"""The provider as pip installs it: the built wheel alone runs the jobs.

The wheel is built from this checkout and installed (``--no-deps``) into a fresh virtual
env; that env sees the project's dependencies through a plain path entry to the test
interpreter's site-packages (no ``.pth`` processing there, so the checkout's editable
install of ``airflow_hoodie`` is not importable). A DAG run from a directory outside the
checkout, with a PATH that holds no ``spark-submit``, then upserts twice into a
MERGE_ON_READ table (the second with spark-submit ``--conf spark.sql.shuffle.partitions=7``,
which must be what the job's session used) and plans and executes a compaction through ``dag.test()``, and the
table is read back. Everything it needs (job scripts, Avro schemas, the ``--py-files``
zip) must come from the wheel.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import sysconfig
import textwrap

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(900)

DAG_FILE = '''
import os
import pendulum
from airflow.sdk import DAG
from airflow_hoodie.operators.hoodie import (
    HoodieCompactionExecuteOperator, HoodieCompactionPlanOperator, HoodieUpsertOperator)

TABLE = os.environ["PKG_TABLE"]
CONF = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.compact.inline.max.delta.commits": "1",
        # no MOR small-file merge: the upsert leaves a log file for the compaction to merge
        "hoodie.parquet.small.file.limit": "0"}

with DAG(dag_id="pkg_check", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")) as dag:
    first = HoodieUpsertOperator(task_id="insert", base_path=TABLE, table_name="pkg", hoodie_conf=CONF,
                                 source=os.environ["PKG_BATCH1"], operation="insert")
    second = HoodieUpsertOperator(task_id="upsert", base_path=TABLE, table_name="pkg", hoodie_conf=CONF,
                                  source=os.environ["PKG_BATCH2"], operation="upsert",
                                  spark_conf={"spark.sql.shuffle.partitions": "7"})
    plan = HoodieCompactionPlanOperator(task_id="plan", base_path=TABLE, hoodie_conf=CONF)
    run = HoodieCompactionExecuteOperator(task_id="execute", base_path=TABLE, hoodie_conf=CONF)
    first >> second >> plan >> run
'''

RUNNER = '''
import json, os, sys
import pyarrow as pa, pyarrow.parquet as pq

import airflow_hoodie
from airflow_hoodie.hooks.spark_submit import find_jobs_dir
report = {"package": airflow_hoodie.__file__, "jobs_dir": str(find_jobs_dir())}

pq.write_table(pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1], "v": [1, 2, 3]}), os.environ["PKG_BATCH1"])
pq.write_table(pa.table({"id": ["b", "d"], "ts": [2, 2], "v": [20, 40]}), os.environ["PKG_BATCH2"])

from airflow.utils import db
db.resetdb(skip_init=False)
import importlib.util
spec = importlib.util.spec_from_file_location("pkg_dag", os.path.join(os.environ["AIRFLOW__CORE__DAGS_FOLDER"], "pkg_dag.py"))
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
dr = module.dag.test()
report["states"] = {ti.task_id: ti.state for ti in dr.get_task_instances()}
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
with create_session() as session:
    rows = session.query(XComModel).filter_by(dag_id=dr.dag_id, run_id=dr.run_id, key="return_value").all()
    report["results"] = {row.task_id: XComModel.deserialize_value(row) for row in rows}
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.hoodie_table import HoodieTable
table = read_table(os.environ["PKG_TABLE"])
report["rows"] = sorted(zip(table.column("id").to_pylist(), table.column("v").to_pylist()))
ro = read_table(os.environ["PKG_TABLE"], query_type="read_optimized")
report["ro_rows"] = sorted(zip(ro.column("id").to_pylist(), ro.column("v").to_pylist()))
timeline = HoodieTable.load(os.environ["PKG_TABLE"]).timeline
report["completed"] = [str(i.action) for i in timeline.instants if i.is_completed]
print("REPORT " + json.dumps(report))
'''


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done


def test_wheel_installed_in_a_fresh_env_runs_upsert_and_compaction(tmp_path):
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO_ROOT)])
    wheel = next(wheels.glob("airflow_hoodie-*.whl"))

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "PYTHON", "PYSPARK", "HOODIE", "VIRTUAL_ENV", "SPARK"))}
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], env=env)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)], env=env)
    site = pathlib.Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             env=env).stdout.strip())
    assert (site / "airflow_hoodie" / "spark_jobs" / "upsert.py").is_file()
    (site / "zz_project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    outside = tmp_path / "elsewhere"
    dags = outside / "dags"
    dags.mkdir(parents=True)
    (dags / "pkg_dag.py").write_text(DAG_FILE)
    (outside / "runner.py").write_text(textwrap.dedent(RUNNER))
    env.update({
        "PATH": "/usr/bin:/bin",  # no spark-submit: the hook must find the installed one
        "AIRFLOW_HOME": str(outside / "home"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{outside / 'airflow.db'}",
        "PKG_TABLE": str(outside / "table"),
        "PKG_BATCH1": str(outside / "b1.parquet"),
        "PKG_BATCH2": str(outside / "b2.parquet"),
    })
    done = _run([str(python), "runner.py"], cwd=outside, env=env, timeout=800)
    report = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("REPORT "))[7:])

    assert report["package"].startswith(str(venv)), report["package"]
    assert report["jobs_dir"] == str(pathlib.Path(report["package"]).parent / "spark_jobs")
    assert report["states"] == {"insert": "success", "upsert": "success", "plan": "success", "execute": "success"}
    # the user's Spark settings win; nothing forces partitions or turns the UI off
    assert report["results"]["upsert"]["spark"]["shuffle_partitions"] == "7"
    assert report["results"]["insert"]["spark"]["shuffle_partitions"] == "200"  # Spark's own default
    assert report["results"]["insert"]["spark"]["adaptive"] == "true"
    assert report["results"]["insert"]["spark"]["ui_url"].startswith("http")
    expected = [["a", 1], ["b", 20], ["c", 3], ["d", 40]]
    assert report["rows"] == expected
    assert report["ro_rows"] == expected  # compacted: the base files hold the update
    assert report["completed"].count("deltacommit") == 2 and "commit" in report["completed"]
