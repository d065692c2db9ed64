"""``spark_jobs/indexer.py`` as a process: its JSON result line and exit codes, and a run
killed at every step of the indexing instant, then run again, leaving the same complete
secondary index as a run that was never killed."""

from __future__ import annotations

import pytest

from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS_INFLIGHT,
    listed_in,
)
from tests.actions.test_indexer import check_index, make_table
from tests.spark.test_services_jobs import fast, run

NO_SKEW = ("--hoodie-conf", "hoodie.time.generator.max_expected_clock_skew_ms=0")
SI = ("--index-types", "RECORD_INDEX,SECONDARY_INDEX", "--index-name", "city_idx", "--index-column", "city", "--local")
POINTS = ["indexing.after_requested", "indexing.after_inflight", "indexing.after_build", "indexing.before_commit"]


def test_the_job_builds_the_index_and_prints_its_result(tmp_path):
    base = str(tmp_path / "t")
    make_table(base, 9)
    proc, result = run("indexer", "--base-path", base, *SI, *NO_SKEW)
    assert proc.returncode == 0, proc.stderr
    assert result["action"] == "indexing" and result["state"] == "COMPLETED"
    assert result["partitions"] == ["record_index", "secondary_index_city_idx"]
    check_index(base, "secondary_index_city_idx", "city", "V2")
    proc, again = run("indexer", "--base-path", base, "--operation", "scheduleAndExecute", *SI, *NO_SKEW)
    assert proc.returncode == 0 and again["instant"] is None


def test_the_job_refuses_what_it_cannot_build_with_a_non_zero_exit(tmp_path):
    base = str(tmp_path / "t")
    make_table(base, 9)
    proc, _ = run("indexer", "--base-path", base, "--index-types", "EXPRESSION_INDEX", *NO_SKEW)
    assert proc.returncode != 0 and "EXPRESSION_INDEX" in proc.stderr + proc.stdout


@pytest.mark.parametrize("point", POINTS)
def test_a_killed_run_is_finished_by_running_it_again(tmp_path, point):
    base = str(tmp_path / "t")
    make_table(base, 9)
    rc, _ = fast("indexer", "--base-path", base, *SI, *NO_SKEW, crash=point, tmp=str(tmp_path))
    assert rc == -9
    rc, result = fast("indexer", "--base-path", base, *SI, *NO_SKEW, tmp=str(tmp_path))
    assert rc == 0 and result["state"] == "COMPLETED"
    assert result.get("resumed") == result["instant"]
    table = HoodieTable.load(base)
    assert listed_in(table.config, METADATA_PARTITIONS_INFLIGHT) == []
    assert [i.timestamp for i in table.timeline.instants if i.action == "indexing"] == [result["instant"]]
    check_index(base, "secondary_index_city_idx", "city", "V2")


def test_on_spark_the_slices_are_read_as_tasks(tmp_path, spark):
    from airflow_hoodie.actions.indexer import run_indexer
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.spark.executor import SparkExecutor

    base = str(tmp_path / "t")
    make_table(base, 8)
    out = run_indexer(HoodieTable.load(base), HoodieConfig(dict([NO_SKEW[1].split("=")])), "scheduleAndExecute",
                      "RECORD_INDEX,SECONDARY_INDEX", "city_idx", "city", executor=SparkExecutor(spark))
    assert out["state"] == "COMPLETED"
    check_index(base, "secondary_index_city_idx", "city", "V1")
