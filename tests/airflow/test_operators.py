"""Operators end to end through dag.test(), with tiny stand-in job scripts.

The stand-ins use the real job harness (spark/job.py) and run through the real
spark-submit, so what is tested here is the operator/hook/Airflow wiring: XCom, Asset
events, nothing-to-do handling, and failures carrying the job's own error.
"""

from __future__ import annotations

import pytest

from airflow_hoodie.assets import table_asset_uri
from airflow_hoodie.operators.hoodie import (
    HoodieArchiveOperator, HoodieCleanOperator, HoodieClusteringOperator,
    HoodieCompactionExecuteOperator, HoodieCompactionPlanOperator, HoodieRollbackOperator,
    HoodieSavepointOperator, HoodieUpsertOperator,
)
from tests.airflow.conftest import load_dag_file, make_job


def _xcom(dr, task_id, key="return_value"):
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.query(XComModel).filter_by(dag_id=dr.dag_id, run_id=dr.run_id, task_id=task_id, key=key).one_or_none()
        return None if row is None else XComModel.deserialize_value(row)


def _states(dr):
    return {ti.task_id: ti.state for ti in dr.get_task_instances()}


def _asset_events(uri):
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        return [e.extra for e in session.query(AssetEvent).join(AssetModel, AssetEvent.asset_id == AssetModel.id)
                .filter(AssetModel.uri == uri).all()]


def test_template_fields_cover_paths_instants_and_configs():
    for op in (HoodieUpsertOperator, HoodieCompactionExecuteOperator, HoodieClusteringOperator,
               HoodieRollbackOperator, HoodieSavepointOperator):
        assert {"base_path", "hoodie_conf", "storage_options"} <= set(op.template_fields)
    assert {"source", "table_name", "operation"} <= set(HoodieUpsertOperator.template_fields)
    assert "instant_time" in HoodieCompactionExecuteOperator.template_fields


def test_writing_operators_declare_the_table_asset():
    up = HoodieUpsertOperator(task_id="u", base_path="/data/trips", table_name="t", source="/s")
    assert [o.uri for o in up.outlets] == ["hudi+file://localhost/data/trips"]
    assert HoodieCleanOperator(task_id="c", base_path="/data/trips").outlets == []
    assert HoodieClusteringOperator(task_id="k", base_path="/data/trips", mode="schedule").outlets == []
    templated = HoodieUpsertOperator(task_id="u2", base_path="{{ var.value.p }}", table_name="t", source="/s")
    assert templated.outlets == []


def test_plan_execute_xcom_and_asset_event(airflow_db, fake_jobs_dir, tmp_path):
    make_job(fake_jobs_dir, "compaction_plan", "ok")
    make_job(fake_jobs_dir, "compaction_execute", "ok")
    base = tmp_path / "table"
    dag = load_dag_file("ops_plan_execute", f"""
        import pendulum
        from airflow.sdk import DAG
        from airflow_hoodie.assets import hoodie_table_asset
        from airflow_hoodie.operators.hoodie import HoodieCompactionPlanOperator, HoodieCompactionExecuteOperator
        with DAG("ops_plan_execute", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
            plan = HoodieCompactionPlanOperator(task_id="plan", base_path="{base}")
            # the table's Asset declared here (a table nobody schedules on has none otherwise)
            run = HoodieCompactionExecuteOperator(task_id="execute", base_path="{base}",
                                                  outlets=[hoodie_table_asset("{base}")])
            plan >> run
    """)
    dr = dag.test()
    assert _states(dr) == {"plan": "success", "execute": "success"}
    result = _xcom(dr, "execute")
    assert result["instant"] == "20240101000000000"
    assert result["instant_arg"] == "20240101000000000"  # taken from the plan task's XCom
    assert str(_xcom(dr, "plan", key="instant")) == "20240101000000000"
    events = _asset_events(table_asset_uri(str(base)))
    assert events and events[-1]["instant"] == "20240101000000000" and events[-1]["job"] == "compaction_execute"


def test_nothing_to_do_succeeds_or_skips_without_asset_event(airflow_db, fake_jobs_dir, tmp_path):
    make_job(fake_jobs_dir, "compaction_plan", "noop")
    make_job(fake_jobs_dir, "clustering", "noop")
    make_job(fake_jobs_dir, "compaction_execute", "noop")  # the real job: no pending plan, nothing to do
    base = tmp_path / "table"
    dag = load_dag_file("ops_noop", f"""
        import pendulum
        from airflow.sdk import DAG
        from airflow_hoodie.operators.hoodie import (HoodieClusteringOperator,
            HoodieCompactionExecuteOperator, HoodieCompactionPlanOperator)
        with DAG("ops_noop", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
            plan = HoodieCompactionPlanOperator(task_id="plan", base_path="{base}")
            run = HoodieCompactionExecuteOperator(task_id="execute", base_path="{base}")
            cluster = HoodieClusteringOperator(task_id="cluster", base_path="{base}", on_nothing_to_do="skip")
            plan >> run
    """)
    dr = dag.test()
    assert _states(dr) == {"plan": "success", "execute": "success", "cluster": "skipped"}
    assert _xcom(dr, "plan")["reason"] == "no file slice has log files"
    assert _xcom(dr, "execute")["instant"] is None  # no plan handed over, none pending: no event
    assert _asset_events(table_asset_uri(str(base))) == []


def test_failed_job_fails_the_task_with_the_jobs_error(airflow_db, fake_jobs_dir, tmp_path, caplog, capsys):
    make_job(fake_jobs_dir, "upsert", "fail")
    base = tmp_path / "table"
    dag = load_dag_file("ops_fail", f"""
        import pendulum
        from airflow.sdk import DAG
        from airflow_hoodie.operators.hoodie import HoodieUpsertOperator
        with DAG("ops_fail", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
            HoodieUpsertOperator(task_id="upsert", base_path="{base}", table_name="t", source="/nowhere")
    """)
    dr = dag.test()
    assert _states(dr) == {"upsert": "failed"}
    logged = caplog.text + capsys.readouterr().out
    assert "record key field 'uuid' is missing" in logged
    assert "HoodieJobError" in logged


def test_failed_job_exception_message_direct(airflow_db, fake_jobs_dir, tmp_path):
    from airflow_hoodie.errors import HoodieJobError

    make_job(fake_jobs_dir, "clean", "fail")
    op = HoodieCleanOperator(task_id="clean", base_path=str(tmp_path / "t"))
    with pytest.raises(HoodieJobError, match="ERROR: HoodieError: record key field 'uuid'"):
        op.execute({})


def test_the_summary_shows_no_empty_rows():
    """Clean under KEEP_LATEST_FILE_VERSIONS retains by versions: its result's
    earliest_commit_to_retain is empty, and showed as an empty row (issue 20)."""
    from airflow_hoodie.operators.hoodie import summary_table

    table = summary_table({"instant": "20240101000000000", "action": "clean", "state": "COMPLETED",
                           "files_deleted": 3, "earliest_commit_to_retain": "", "policy": "KEEP_LATEST_FILE_VERSIONS"})
    assert "earliest_commit_to_retain" not in table
    assert "| policy" in table and "| files_deleted | 3" in table
