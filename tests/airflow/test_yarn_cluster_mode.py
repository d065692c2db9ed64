"""Deferrable writes on YARN: the trigger tracks the application through the YARN
ResourceManager REST API (the apache-spark provider's own tracking) and the timeline.

There is no YARN here, so ``spark-submit`` on PATH stands in for a YARN cluster-mode
submission: it launches the real job (the real spark-submit on local Spark) detached,
prints the application id as YARN's client does, and returns at once; a ResourceManager
REST endpoint on 127.0.0.1 answers ``/ws/v1/cluster/apps/<id>`` from the detached
driver's exit code.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import stat
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.errors import HoodieJobError
from airflow_hoodie.hooks.spark_submit import spark_submit_path_dirs
from airflow_hoodie.operators.hoodie import HoodieUpsertOperator
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.airflow.deferral import FakeTaskInstance, deferred_upsert
from tests.airflow.detached_submit import detached_submit_script

pytestmark = pytest.mark.timeout(600)

APP_ID = "application_1732400000000_0001"
FAKE_YARN = detached_submit_script(
    "FAKE_YARN_STATE", f"INFO Client: Submitted application {APP_ID}",
    "YARN cluster mode for one test: the driver (the real job on local Spark) runs detached",
    'echo submitted >> "$FAKE_YARN_STATE/submits"')


@pytest.fixture
def yarn(tmp_path, monkeypatch):
    state = tmp_path / "yarn"
    state.mkdir()
    asked: list[str] = []

    class ResourceManager(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            asked.append(self.path)
            exit_file = state / "exit"
            if not exit_file.exists():
                app = {"state": "RUNNING", "finalStatus": "UNDEFINED", "diagnostics": ""}
            elif exit_file.read_text().strip() == "0":
                app = {"state": "FINISHED", "finalStatus": "SUCCEEDED", "diagnostics": ""}
            else:
                app = {"state": "FINISHED", "finalStatus": "FAILED", "diagnostics": "User application exited with 1"}
            body = json.dumps({"app": {"id": self.path.rsplit("/", 1)[-1], **app}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ResourceManager)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    real = shutil.which("spark-submit", path=os.pathsep.join(spark_submit_path_dirs()))
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake = fake_bin / "spark-submit"
    fake.write_text(FAKE_YARN)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("REAL_SPARK_SUBMIT", real)
    monkeypatch.setenv("FAKE_YARN_STATE", str(state))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN", json.dumps({
        "conn_type": "spark", "host": "yarn",
        "extra": {"deploy-mode": "cluster",
                  "yarn_resourcemanager_webapp_address": f"127.0.0.1:{server.server_address[1]}"}}))
    yield state, asked
    server.shutdown()
    server.server_close()


def _deferred_upsert(tmp_path, source):
    op, context, event, path, method, kwargs = deferred_upsert(tmp_path, source, "spark_yarn")
    assert kwargs["cluster_manager"] == "yarn" and kwargs["driver_id"] == APP_ID
    return op, context, event


def test_deferred_write_on_yarn_completes_from_the_resource_manager_and_timeline(airflow_db, tmp_path, yarn):
    state, asked = yarn
    source = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "ts": [1, 1], "v": [1, 2]}), source)
    op, context, event = _deferred_upsert(tmp_path, source)
    assert event["status"] == "success", (state / "driver.log").read_text() if (state / "driver.log").exists() else event
    result = op.execute_complete(context, event)
    (instant,) = [i.timestamp for i in HoodieTable.load(str(tmp_path / "t")).timeline.completed_commits()]
    assert result["instant"] == instant and result["inserts"] == 2
    assert f"/ws/v1/cluster/apps/{APP_ID}" in asked  # the ResourceManager was asked for the application


def test_deferred_write_on_yarn_fails_with_the_failed_application(airflow_db, tmp_path, yarn):
    state, _ = yarn
    op, context, event = _deferred_upsert(tmp_path, tmp_path / "no_such_batch.parquet")
    assert event["status"] == "error"
    with pytest.raises(HoodieJobError, match=f"driver {APP_ID} ended FAILED"):
        op.execute_complete(context, event)
    assert (state / "exit").read_text().strip() != "0"


class _StateStore(dict):
    """The task state store Airflow keeps across a task's tries."""

    def set(self, key, value):
        self[key] = value


def test_a_retry_reconnects_to_the_running_yarn_application_instead_of_submitting_again(airflow_db, tmp_path, yarn):
    """The apache-spark provider's durable mode: the first try submitted and its worker died;
    the retry finds the application in the task's state store, reconnects, and reports the
    instant; a later retry of the finished task submits nothing either."""
    from airflow_hoodie.actions.write_identity import format_write_id

    state, _ = yarn
    source = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1], "v": [1, 2, 3]}), source)
    op = HoodieUpsertOperator(task_id="upsert", base_path=str(tmp_path / "t"), table_name="t", source=str(source),
                              operation="insert", spark_conn_id="spark_yarn", poll_interval=1,
                              hoodie_conf={"hoodie.datasource.write.recordkey.field": "id",
                                           "hoodie.datasource.write.partitionpath.field": ""})
    assert op.durable is True
    ti = FakeTaskInstance(dag_id="d", run_id="r", task_id="upsert", map_index=-1, pushed={}, stats_tags={})
    store = _StateStore()
    # the first try: submitted, recorded its application, then its worker died
    first = op.get_hook().run_job("upsert", op.job_args({"ti": ti}), write_id=format_write_id("d", "r", "upsert", -1),
                                  wait=False)
    store.set(op.external_id_key, {"manager": first.result["cluster_manager"], "driver_id": first.result["driver_id"]})
    assert (state / "submits").read_text().count("submitted") == 1
    result = op.execute({"ti": ti, "task_state_store": store})
    (instant,) = [i.timestamp for i in HoodieTable.load(str(tmp_path / "t")).timeline.completed_commits()]
    assert result["instant"] == instant and result["inserts"] == 3
    assert (state / "submits").read_text().count("submitted") == 1  # reconnected, nothing submitted again
    again = op.execute({"ti": ti, "task_state_store": store})  # the application already succeeded
    assert again["instant"] == instant
    assert (state / "submits").read_text().count("submitted") == 1
    assert len(HoodieTable.load(str(tmp_path / "t")).timeline.completed_commits()) == 1
