"""The real jobs on an ``s3://`` table: spark-submit of spark_jobs/upsert.py,
compaction_plan.py and compaction_execute.py (its operations on Spark's executors) through HoodieHook, the table and its endpoint in a ``hoodie`` connection
whose login/password are the keys. The secret reaches the job in its environment only."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tests.airflow.conftest  # noqa: F401 - a throwaway AIRFLOW_HOME before airflow loads
from airflow_hoodie.table.read import read_table
from tests.s3.conftest import S3Place
from tests.table.normalize import hudi_rs_rows, normalize_table

pytestmark = pytest.mark.timeout(600)


def test_upsert_and_compaction_plan_jobs_on_s3(s3: S3Place, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_hoodie.hooks.hoodie import HoodieHook

    uri = s3.uri("jobs")
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_HOODIE_S3JOBS", json.dumps({
        "conn_type": "hoodie", "login": "testing", "password": "testing",
        "extra": {"base_path": uri, "storage_options": s3.storage_options,
                  "hoodie_conf": {"hoodie.datasource.write.recordkey.field": "id",
                                  "hoodie.datasource.write.partitionpath.field": "p",
                                  "hoodie.datasource.write.precombine.field": "ts",
                                  "hoodie.datasource.write.table.type": "MERGE_ON_READ",
                                  "hoodie.write.table.version": "9",
                                  "hoodie.time.generator.max_expected_clock_skew_ms": "0"}}}))
    hook = HoodieHook("hoodie_s3jobs")
    for ts, ids in ((1, [1, 2, 3]), (2, [2, 3])):  # updates only: they go to a log file
        source = tmp_path / f"batch{ts}.parquet"
        pq.write_table(pa.table({"id": [f"k{i}" for i in ids], "p": ["p0"] * len(ids), "ts": [ts] * len(ids),
                                 "v": [f"v{ts}-{i}" for i in ids]}), source)
        run = hook.run_job("upsert", ["--source", str(source), "--table-name", "jobs"])
        assert run.result["instant"], run.result
    command = " ".join(hook._submit_hook._build_spark_submit_command("/jobs/upsert.py"))
    assert "secret_key" not in command and "endpoint_override" in command
    plan = hook.run_job("compaction_plan", ["--force"])
    assert plan.result["instant"], plan.result
    done = hook.run_job("compaction_execute", ["--instant-time", plan.result["instant"]])  # on Spark's executors
    assert done.result["state"] in ("completed", "COMPLETED"), done.result
    expected = {"k1": "v1-1", "k2": "v2-2", "k3": "v2-3"}
    ours = normalize_table(read_table(uri, storage_options=s3.storage_options))
    assert {r["id"]: r["v"] for r in ours} == expected
    assert hudi_rs_rows(uri, storage_options=s3.hudi_rs_options) == ours
