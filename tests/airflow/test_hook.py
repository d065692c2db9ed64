"""HoodieHook: connection resolution, the spark-submit command, results and failures."""

from __future__ import annotations

import json
import sys
import zipfile

import pytest

from airflow_hoodie.errors import HoodieConfigError, HoodieJobError
from airflow_hoodie.hooks.hoodie import HoodieHook, build_package_zip, find_jobs_dir


def _command(hook: HoodieHook, job: str = "upsert", job_args=("--operation", "upsert")):
    args = hook.job_arguments(list(job_args), result_file="/tmp/r.json")
    submit = hook.build_submit_hook(job, args)
    return submit, submit._build_spark_submit_command(f"/jobs/{job}.py")


def test_fresh_install_runs_locally_without_connections(airflow_db):
    submit, cmd = _command(HoodieHook(base_path="/tmp/t", hoodie_conf={"hoodie.table.type": "MERGE_ON_READ"}))
    assert cmd[0] == "spark-submit"
    assert cmd[cmd.index("--master") + 1] == "local[*]"
    assert f"spark.pyspark.python={sys.executable}" in cmd
    assert "--py-files" not in cmd  # local master: the package is importable already
    app = cmd[cmd.index("/jobs/upsert.py") + 1:]
    assert app == ["--base-path", "/tmp/t", "--hoodie-conf", "hoodie.table.type=MERGE_ON_READ",
                   "--result-file", "/tmp/r.json", "--operation", "upsert"]
    assert submit._env["PYSPARK_PYTHON"] == sys.executable
    assert submit._env["PATH"].split(":")[0] == str(__import__("pathlib").Path(sys.executable).parent)


def test_connection_extras_are_defaults_the_task_overrides(airflow_db, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_HOODIE_TRIPS", json.dumps({
        "conn_type": "hoodie", "login": "AKIA", "password": "s3cr3t",
        "extra": {
            "base_path": "s3://bucket/trips",
            "spark_conn_id": "spark_cluster",
            "storage_options": {"region": "eu-west-1"},
            "hoodie_conf": "hoodie.table.type=MERGE_ON_READ\nhoodie.cleaner.commits.retained=5",
            "spark_conf": {"spark.executor.memory": "3g"},
        },
    }))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", json.dumps({"conn_type": "spark", "host": "spark://10.0.0.1", "port": 7077}))
    hook = HoodieHook("hoodie_trips", hoodie_conf={"hoodie.cleaner.commits.retained": 3})
    cfg = hook.get_conn()
    assert cfg.base_path == "s3://bucket/trips"
    assert cfg.storage_options == {"region": "eu-west-1", "access_key": "AKIA", "secret_key": "s3cr3t"}
    assert cfg.hoodie_conf == {"hoodie.table.type": "MERGE_ON_READ", "hoodie.cleaner.commits.retained": "3"}
    submit, cmd = _command(hook, "clean", ())
    assert cmd[cmd.index("--master") + 1] == "spark://10.0.0.1:7077"
    assert "spark.executor.memory=3g" in cmd
    # a cluster gets our package as --py-files
    zip_path = cmd[cmd.index("--py-files") + 1]
    assert zip_path.endswith(".zip")
    with zipfile.ZipFile(zip_path) as zf:
        names = zf.namelist()
    assert "airflow_hoodie/__init__.py" in names and "airflow_hoodie/spark/job.py" in names
    assert not any("__pycache__" in n for n in names)
    # credentials never show in the logged command
    assert "s3cr3t" not in submit._mask_cmd(cmd)


def test_package_zip_is_reused_until_sources_change():
    assert build_package_zip() == build_package_zip()


def test_missing_named_connection_is_an_error(airflow_db):
    from airflow.sdk.exceptions import AirflowNotFoundException

    with pytest.raises(AirflowNotFoundException):
        HoodieHook("no_such_conn").get_conn()


def test_no_base_path_says_what_to_do(airflow_db):
    with pytest.raises(HoodieConfigError, match="base_path"):
        HoodieHook().job_arguments([])


def test_jobs_dir_default_is_the_repo_scripts():
    assert find_jobs_dir().name == "spark_jobs"


def test_run_job_returns_the_json_result(airflow_db, fake_jobs_dir, tmp_path):
    run = HoodieHook(base_path=str(tmp_path / "t"), hoodie_conf={"hoodie.x": "1"}).run_job(
        "ok", ["--instant-time", "123"])
    assert run.result["instant"] == "20240101000000000"
    assert run.result["base_path"] == str(tmp_path / "t")
    assert run.result["conf"] == ["hoodie.x=1"]
    assert run.result["instant_arg"] == "123"
    assert run.master == "local[*]"


def test_failed_job_raises_with_the_jobs_own_error(airflow_db, fake_jobs_dir, tmp_path):
    with pytest.raises(HoodieJobError) as info:
        HoodieHook(base_path=str(tmp_path / "t")).run_job("fail")
    message = str(info.value)
    assert "ERROR: HoodieError: record key field 'uuid' is missing" in message
    assert "hoodie.datasource.write.recordkey.field" in message


def test_the_hook_refuses_a_typo_before_spark_submit(airflow_db):
    hook = HoodieHook(base_path="/tmp/t", hoodie_conf={"hoodie.tabel.type": "MERGE_ON_READ"})
    with pytest.raises(HoodieConfigError, match="did you mean hoodie.table.type"):
        hook.run_job("upsert", ["--operation", "upsert"])
    assert getattr(hook, "_submit_hook", None) is None  # nothing was submitted
