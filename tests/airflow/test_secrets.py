"""A storage secret from the connection never shows on a command line, in a log, or in a
trigger's serialized kwargs, yet the job and the triggerer get it."""

from __future__ import annotations

import json
import logging
import textwrap

import pytest

from airflow_hoodie.hooks.hoodie import HoodieHook
from airflow_hoodie.sensors.hoodie import HoodieInstantSensor
from tests.airflow.conftest import write_timeline

SECRET = "FAKE-SECRET-7f3a9c"
T1 = "20240101000000000"


@pytest.fixture
def secret_connection(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_HOODIE_SECRET", json.dumps({
        "conn_type": "hoodie", "login": "AKIAFAKE", "password": SECRET,
        "extra": {"storage_options": {"region": "eu-west-1"}}}))
    return "hoodie_secret"


def test_secret_reaches_the_job_but_no_command_line_or_log(airflow_db, fake_jobs_dir, secret_connection, tmp_path,
                                                           caplog, capsys):
    (fake_jobs_dir / "secretcheck.py").write_text(textwrap.dedent("""
        import sys
        from airflow_hoodie.spark.job import base_parser, run_job, storage_options
        args = base_parser("secret check").parse_args()
        options = storage_options(args)
        sys.exit(run_job(lambda: {"instant": "1", "argv": sys.argv, "region": options.get("region"),
                                  "saw_secret": options.get("secret_key") == %r}, args.result_file))
    """ % SECRET))
    caplog.set_level(logging.DEBUG)
    hook = HoodieHook(secret_connection, base_path=str(tmp_path / "t"))
    run = hook.run_job("secretcheck")
    assert run.result["saw_secret"] is True and run.result["region"] == "eu-west-1"
    submit = hook._submit_hook
    command = " ".join(submit._build_spark_submit_command("/jobs/secretcheck.py"))
    assert "--storage-option region=eu-west-1" in command
    for where, text in (("command line", command), ("job argv", json.dumps(run.result["argv"])),
                        ("spark-submit output", "\n".join(submit.output_tail)),
                        ("task log", caplog.text + capsys.readouterr().out)):
        assert SECRET not in where and SECRET not in text, where


def test_deferred_sensor_trigger_kwargs_hold_no_secret(airflow_db, secret_connection, tmp_path):
    from airflow.sdk.exceptions import TaskDeferred

    from airflow_hoodie.triggers.hoodie import HoodieTimelineTrigger

    base = write_timeline(tmp_path / "t", [f"{T1}.deltacommit.requested"])
    sensor = HoodieInstantSensor(task_id="s", base_path=str(base), hoodie_conn_id=secret_connection,
                                 deferrable=True, poke_interval=1, timeout=60)
    with pytest.raises(TaskDeferred) as info:
        sensor.execute({})
    _, kwargs = info.value.trigger.serialize()
    assert SECRET not in json.dumps(kwargs)
    assert kwargs["hoodie_conn_id"] == secret_connection
    # the triggerer resolves the credentials itself
    assert HoodieTimelineTrigger(**kwargs)._storage_options()["secret_key"] == SECRET
