"""The README's "In Airflow" DAG, read from README.md, runs on S3 (moto's server) as written:
its connections made as the README says (an Amazon connection holding the keys, region and
endpoint, a ``hoodie`` connection naming it), its buckets and one day's source batch in the
landing zone, deletes by ``_hoodie_is_deleted`` included. Only the endpoint is the test's."""

from __future__ import annotations

import io
import json
import re

import pendulum
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tests.airflow.conftest  # noqa: F401 - a throwaway AIRFLOW_HOME before airflow loads
from tests.airflow.conftest import REPO_ROOT, airflow_db, load_dag_file  # noqa: F401 - a fixture
from tests.s3.conftest import S3Place

pytestmark = pytest.mark.timeout(900)
MARK = "<!-- readme-dag: s3"


def readme_dag() -> str:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert MARK in text, "README.md lost its marked DAG block"
    found = re.search(r"```python\n(.*?)```", text[text.index(MARK):], re.S)
    assert found, "no python block after the README's DAG marker"
    return found.group(1)


def test_the_readme_dag_runs_on_s3(airflow_db, s3: S3Place, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_hoodie.table.read import read_table

    code = readme_dag()
    table = re.search(r'TABLE = "(s3://[^"]+)"', code).group(1)
    client = s3.client()
    for bucket in ("lake", "landing"):  # the README's names
        if bucket not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
            client.create_bucket(Bucket=bucket)
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_AWS_LAKE", json.dumps({
        "conn_type": "aws", "login": "testing", "password": "testing",
        "extra": {"region_name": "us-east-1", "endpoint_url": s3.endpoint}}))
    monkeypatch.setenv("AIRFLOW_CONN_HOODIE_LAKE", json.dumps({"conn_type": "hoodie",
                                                               "extra": {"aws_conn_id": "aws_lake"}}))
    dag = load_dag_file("readme_orders_lake", code)

    def day(ds: str, rows: dict) -> None:
        out = io.BytesIO()
        pq.write_table(pa.table(rows), out)
        client.put_object(Bucket="landing", Key=f"orders/{ds}/part-0.parquet", Body=out.getvalue())

    day("2024-01-01", {"order_id": ["o1", "o2", "o3"], "region": ["eu", "eu", "us"], "ts": [1, 1, 1],
                       "amount": [10.0, 20.0, 30.0], "_hoodie_is_deleted": [False, False, False]})
    day("2024-01-02", {"order_id": ["o2", "o3", "o4"], "region": ["eu", "us", "us"], "ts": [2, 2, 2],
                       "amount": [21.0, 30.0, 40.0], "_hoodie_is_deleted": [False, True, False]})
    for ds in ("2024-01-01", "2024-01-02"):
        dr = dag.test(logical_date=pendulum.parse(ds))
        states = {ti.task_id: ti.state for ti in dr.get_task_instances()}
        assert states == {"upsert": "success", "committed": "success", "compaction_plan": "success",
                          "compaction_execute": "success", "clean": states["clean"]}, (ds, states)
        assert states["clean"] in ("success", "skipped")

    options = {"endpoint_override": s3.endpoint, "region": "us-east-1"}
    rows = read_table(table, storage_options=options).to_pylist()
    assert sorted((r["order_id"], r["amount"]) for r in rows) == [("o1", 10.0), ("o2", 21.0), ("o4", 40.0)]
    ro = read_table(table, query_type="read_optimized", storage_options=options).to_pylist()
    assert len(ro) == 3  # compacted: the base files hold the second day too
