"""Cluster deploy mode as YARN / Kubernetes / standalone-cluster submission behaves.

Spark 4.2's standalone master refuses cluster mode for Python applications and there is no
YARN or Kubernetes here, so the Spark connection points at a standalone master in cluster
mode and ``spark-submit`` on PATH is a stand-in for that master: it launches the real job
(the real ``spark-submit`` on local Spark) detached, answers "Driver successfully submitted
as driver-..." and returns at once; the master's REST status endpoint, which the provider's
driver tracking polls, is served on 127.0.0.1 from the detached driver's exit code. The job's stdout never reaches the hook. The operator must
still report the real instant and figures, found on the timeline by its write identity,
emit the table's Asset event, and a DAG scheduled on that Asset must be queued.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import stat
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.dag_processing.bundles.manager import DagBundlesManager
from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
from airflow.models.asset import AssetDagRunQueue, AssetEvent, AssetModel
from airflow.models.dag import DagModel
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session

from airflow_hoodie.assets import table_asset_uri
from airflow_hoodie.errors import HoodieJobError
from airflow_hoodie.hooks.spark_submit import spark_submit_path_dirs
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.airflow.conftest import load_dag_file
from tests.airflow.deferral import deferred_upsert
from tests.airflow.detached_submit import detached_submit_script

pytestmark = pytest.mark.timeout(600)

FAKE_MASTER = detached_submit_script(
    "FAKE_MASTER_STATE", "Driver successfully submitted as driver-20261124000000-0001",
    "a standalone master in cluster mode, for one test: the driver is launched detached", 'state="$FAKE_MASTER_STATE"')


@pytest.fixture
def master_rest(tmp_path):
    """The standalone master's REST status API for the detached driver, on a free port."""
    state = tmp_path / "master"
    state.mkdir()

    class Status(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            exit_file = state / "exit"
            if not exit_file.exists():
                driver_state = "RUNNING"
            else:
                driver_state = "FINISHED" if exit_file.read_text().strip() == "0" else "FAILED"
            body = json.dumps({"action": "SubmissionStatusResponse", "driverState": driver_state,
                               "submissionId": self.path.rsplit("/", 1)[-1], "success": True},
                              indent=2, separators=(",", " : "))  # as Spark's Jackson prints it
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def standalone_cluster(tmp_path, monkeypatch, master_rest):
    """Connection ``spark_standalone``: cluster deploy mode, detached driver, REST status."""
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    real = shutil.which("spark-submit", path=os.pathsep.join(spark_submit_path_dirs()))
    assert real, "pyspark's spark-submit"
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake = fake_bin / "spark-submit"
    fake.write_text(FAKE_MASTER)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    state, rest_port = master_rest
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("REAL_SPARK_SUBMIT", real)
    monkeypatch.setenv("FAKE_MASTER_STATE", str(state))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_STANDALONE", json.dumps(
        {"conn_type": "spark", "host": "spark://127.0.0.1", "port": 7077, "extra": {"deploy-mode": "cluster", "rest-port": rest_port}}))
    return state


def test_cluster_mode_reports_the_instant_from_the_timeline(airflow_db, tmp_path, standalone_cluster):
    state = standalone_cluster
    source = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1], "v": [1, 2, 3]}), source)
    base = str(tmp_path / "t")

    downstream = load_dag_file("cluster_downstream", f"""
        import pendulum
        from airflow.sdk import DAG, task
        from airflow_hoodie.assets import hoodie_table_asset
        with DAG("cluster_downstream", schedule=[hoodie_table_asset("{base}")],
                 start_date=pendulum.datetime(2024, 1, 1)) as dag:
            @task
            def read():
                return "ran"
            read()
    """)
    dag = load_dag_file("cluster_upsert", f"""
        import pendulum
        from airflow.sdk import DAG
        from airflow_hoodie.operators.hoodie import HoodieUpsertOperator
        with DAG("cluster_upsert", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
            HoodieUpsertOperator(task_id="upsert", base_path="{base}", table_name="t", source="{source}",
                                 operation="insert", spark_conn_id="spark_standalone",
                                 spark_submit_kwargs={{"status_poll_interval": 1}},
                                 hoodie_conf={{"hoodie.datasource.write.recordkey.field": "id",
                                              "hoodie.datasource.write.partitionpath.field": ""}})
    """)
    _register_unpaused(downstream)  # a DAG the scheduler knows, switched on: asset events queue it
    dr = dag.test()
    assert {ti.task_id: ti.state for ti in dr.get_task_instances()} == {"upsert": "success"}, \
        (state / "driver.log").read_text() if (state / "driver.log").exists() else "no driver log"
    # the task returns once the instant is on the timeline; the detached driver then shuts down
    deadline = time.monotonic() + 120
    while not (state / "exit").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert (state / "exit").read_text().strip() == "0"  # the detached driver really ran the job

    result = _xcom(dr, "upsert")
    (instant,) = [i.timestamp for i in HoodieTable.load(base).timeline.completed_commits()]
    assert result["instant"] == instant and result["found_on_timeline"] is True
    assert result["inserts"] == 3 and result["files_written"] >= 1
    assert read_table(base).num_rows == 3


    with create_session() as session:
        asset = session.query(AssetModel).filter_by(uri=table_asset_uri(base)).one()
        events = session.query(AssetEvent).filter_by(asset_id=asset.id).all()
        queued = session.query(AssetDagRunQueue).filter_by(asset_id=asset.id).all()
    assert [e.extra["instant"] for e in events] == [instant]
    assert [q.target_dag_id for q in queued] == ["cluster_downstream"]


def _register_unpaused(dag):

    DagBundlesManager().sync_bundles_to_db()
    bag = DagBag(os.path.dirname(dag.fileloc))
    sync_bag_to_db(bag, "dags-folder", None)
    with create_session() as session:
        session.query(DagModel).filter_by(dag_id=dag.dag_id).update({"is_paused": False})


def _xcom(dr, task_id):

    with create_session() as session:
        row = session.query(XComModel).filter_by(dag_id=dr.dag_id, run_id=dr.run_id, task_id=task_id,
                                                 key="return_value").one_or_none()
        return None if row is None else XComModel.deserialize_value(row)


def _deferred_upsert(tmp_path, source):
    op, context, event, path, method, kwargs = deferred_upsert(tmp_path, source, "spark_standalone")
    assert path == "airflow_hoodie.triggers.write.HoodieWriteTrigger" and method == "execute_complete"
    return op, context, event


def test_deferrable_operator_defers_and_the_trigger_completes_it(airflow_db, tmp_path, standalone_cluster):
    source = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "ts": [1, 1], "v": [1, 2]}), source)
    op, context, event = _deferred_upsert(tmp_path, source)
    assert event["status"] == "success", event
    result = op.execute_complete(context, event)
    (instant,) = [i.timestamp for i in HoodieTable.load(str(tmp_path / "t")).timeline.completed_commits()]
    assert result["instant"] == instant == context["ti"].pushed["instant"] and result["inserts"] == 2


def test_deferred_task_fails_with_the_failed_driver(airflow_db, tmp_path, standalone_cluster):
    op, context, event = _deferred_upsert(tmp_path, tmp_path / "no_such_batch.parquet")
    assert event["status"] == "error"
    with pytest.raises(HoodieJobError, match="driver driver-20261124000000-0001 ended FAILED"):
        op.execute_complete(context, event)
    assert (standalone_cluster / "exit").read_text().strip() != "0"
