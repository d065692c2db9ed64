"""HoodieIndexerOperator: the arguments it hands ``spark_jobs/indexer.py``, its result in XCom,
no Asset event (an index changes no data), and index types it cannot build refused when the
DAG is parsed."""

from __future__ import annotations

import pytest

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.operators.hoodie import HoodieIndexerOperator
from airflow_hoodie.provider_info import provider_info
from tests.airflow.conftest import load_dag_file, make_job
from tests.airflow.test_operators import _xcom


def test_declared_like_the_other_operators():
    import airflow_hoodie.operators.hoodie as ops

    assert "HoodieIndexerOperator" in ops.__all__
    assert "indexing" in provider_info()["description"]
    op = HoodieIndexerOperator(task_id="i", base_path="/data/trips", index_types=["RECORD_INDEX", "SECONDARY_INDEX"],
                               index_name="city_idx", index_column="city")
    assert {"base_path", "hoodie_conf", "index_types", "index_name", "index_column", "mode"} <= set(op.template_fields)
    assert op.outlets == []
    assert op.job_args({}) == ["--mode", "scheduleAndExecute", "--index-types", "RECORD_INDEX,SECONDARY_INDEX",
                               "--index-name", "city_idx", "--index-column", "city"]
    assert HoodieIndexerOperator(task_id="e", base_path="/t", index_types="COLUMN_STATS", mode="execute",
                                 instant_time="20240101000000000").job_args({}) == [
        "--mode", "execute", "--index-types", "COLUMN_STATS", "--instant-time", "20240101000000000"]


def test_what_the_job_cannot_build_fails_the_dag_not_the_run():
    with pytest.raises(HoodieNotSupportedError, match="EXPRESSION_INDEX"):
        HoodieIndexerOperator(task_id="i", base_path="/t", index_types="EXPRESSION_INDEX")
    with pytest.raises(ValueError, match="mode"):
        HoodieIndexerOperator(task_id="i", base_path="/t", index_types="RECORD_INDEX", mode="dropindex")
    HoodieIndexerOperator(task_id="i", base_path="/t", index_types="{{ var.value.kinds }}")  # templated: checked later


def test_the_job_gets_its_arguments_and_the_result_lands_in_xcom(airflow_db, fake_jobs_dir, tmp_path):
    make_job(fake_jobs_dir, "indexer", "ok")
    base = tmp_path / "table"
    dag = load_dag_file("ops_indexer", f"""
        import pendulum
        from airflow.sdk import DAG
        from airflow_hoodie.operators.hoodie import HoodieIndexerOperator
        with DAG("ops_indexer", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
            HoodieIndexerOperator(task_id="index", base_path="{base}", index_types="RECORD_INDEX,SECONDARY_INDEX",
                                  index_name="city_idx", index_column="city")
    """)
    dr = dag.test()
    result = _xcom(dr, "index")
    assert result["instant"] == "20240101000000000"
    assert result["rest"][-6:] == ["--index-types", "RECORD_INDEX,SECONDARY_INDEX", "--index-name", "city_idx",
                                   "--index-column", "city"]
