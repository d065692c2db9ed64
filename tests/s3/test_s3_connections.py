"""Connections as users have them, on ``s3://`` (moto's server): a ``hoodie`` connection
holding the endpoint and keys, or naming an Amazon provider connection (``aws_conn_id``) that
holds them. The upsert operator (a real spark-submit, driver and DataFrame paths) reads its
``s3://`` source and writes its ``s3://`` table through either; the CLI reaches the table with
``--conn-id`` only. The endpoint is nowhere else: a step that ignored the connection would ask
AWS itself and fail."""

from __future__ import annotations

import io
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tests.airflow.conftest  # noqa: F401 - a throwaway AIRFLOW_HOME before airflow loads
from airflow_hoodie.config_keys.write import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.table.read import read_table
from tests.s3.conftest import S3Place

pytestmark = pytest.mark.timeout(600)

CONF = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.write.table.version": "9", "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
PATHS = {"driver": {}, "dataframe": {DRIVER_BATCH_MAX_BYTES: "0"}}


def connect(s3: S3Place, monkeypatch: pytest.MonkeyPatch, kind: str, table: str) -> str:
    """A ``hoodie`` connection to ``table``: endpoint and keys in it (``hoodie``), or in the
    Amazon connection it names (``aws``: keys, region and ``endpoint_url`` as that provider
    spells them)."""
    extra: dict = {"base_path": s3.uri(table), "hoodie_conf": CONF}
    if kind == "aws":
        monkeypatch.setenv("AIRFLOW_CONN_MOTO_AWS", json.dumps({
            "conn_type": "aws", "login": "aws-key", "password": "aws-secret",
            "extra": {"region_name": "us-east-1", "endpoint_url": s3.endpoint}}))
        extra["aws_conn_id"] = "moto_aws"
        monkeypatch.setenv("AIRFLOW_CONN_HOODIE_LAKE", json.dumps({"conn_type": "hoodie", "extra": extra}))
    else:
        monkeypatch.setenv("AIRFLOW_CONN_HOODIE_LAKE", json.dumps({
            "conn_type": "hoodie", "login": "testing", "password": "testing",
            "extra": {**extra, "storage_options": s3.storage_options}}))
    return "hoodie_lake"


def put_batch(s3: S3Place, key: str, ts: int, ids: list[int]) -> str:
    out = io.BytesIO()
    pq.write_table(pa.table({"id": [f"k{i}" for i in ids], "p": ["p0"] * len(ids),
                             "ts": pa.array([ts] * len(ids), pa.int64()), "v": [f"v{ts}-{i}" for i in ids]}), out)
    s3.client().put_object(Bucket=s3.bucket, Key=key, Body=out.getvalue())
    return s3.uri(key)


def test_an_aws_conn_id_gives_the_storage_options(s3: S3Place, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys, region and endpoint_url of the Amazon connection, resolved by its AwsBaseHook, in
    pyarrow's names; the hoodie connection's own storage_options win over them."""
    from airflow_hoodie.hooks.hoodie import HoodieHook

    conn_id = connect(s3, monkeypatch, "aws", "t")
    assert HoodieHook(conn_id).get_conn().storage_options == {
        "access_key": "aws-key", "secret_key": "aws-secret", "region": "us-east-1", "endpoint_override": s3.endpoint}
    hoodie = json.loads(os.environ["AIRFLOW_CONN_HOODIE_LAKE"])
    hoodie["extra"]["storage_options"] = {"region": "eu-west-1"}
    monkeypatch.setenv("AIRFLOW_CONN_HOODIE_LAKE", json.dumps(hoodie))
    assert HoodieHook(conn_id).get_conn().storage_options["region"] == "eu-west-1"


@pytest.mark.parametrize("kind,path", [("hoodie", "driver"), ("hoodie", "dataframe"), ("aws", "driver"),
                                       ("aws", "dataframe")])
def test_upsert_operator_with_an_s3_source_through_the_connection(s3: S3Place, monkeypatch: pytest.MonkeyPatch,
                                                                  kind: str, path: str) -> None:
    from airflow_hoodie.operators.hoodie import HoodieUpsertOperator

    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    conn_id = connect(s3, monkeypatch, kind, "orders")
    source = put_batch(s3, "landing/b1.parquet", 1, [1, 2, 3])
    op = HoodieUpsertOperator(task_id="upsert", hoodie_conn_id=conn_id, table_name="orders", source=source,
                              hoodie_conf=PATHS[path])
    result = op.execute({})
    assert result["state"] == "COMPLETED", result
    rows = read_table(s3.uri("orders"), storage_options=s3.storage_options).to_pylist()
    assert {r["id"]: r["v"] for r in rows} == {"k1": "v1-1", "k2": "v1-2", "k3": "v1-3"}


def test_cli_timeline_slices_and_read_with_conn_id_only(s3: S3Place, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.cli import main

    uri = s3.uri("orders")
    rows = pa.table({"id": ["k1", "k2"], "p": ["p0", "p0"], "ts": [1, 1], "v": ["a", "b"]})
    instant = write_arrow(uri, rows, "upsert", {**CONF, "hoodie.table.name": "orders"},
                          storage_options=s3.storage_options).instant
    conn_id = connect(s3, monkeypatch, "aws", "orders")

    def run(*argv: str) -> str:
        out, err = io.StringIO(), io.StringIO()
        assert main([*argv, "--conn-id", conn_id], out=out, err=err) == 0, err.getvalue()
        return out.getvalue()

    assert instant in run("timeline", uri)
    assert "p0" in run("slices", uri)
    lines = run("read", uri, "--format", "jsonl", "--columns", "id,v").splitlines()
    assert sorted(json.loads(line)["v"] for line in lines) == ["a", "b"]
    err = io.StringIO()
    assert main(["timeline", uri, "--conn-id", "no_such_conn"], out=io.StringIO(), err=err) == 2
    assert "no_such_conn" in err.getvalue()


def test_a_sources_own_secrets_reach_the_job_in_its_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """``source_storage_options=``: plain options as ``--source-storage-option``, secrets in
    ``$HOODIE_SOURCE_STORAGE_SECRETS``; the job puts them together again."""
    from airflow_hoodie.hooks.hoodie import HoodieHook
    from airflow_hoodie.spark.job import base_parser, source_storage_options
    from airflow_hoodie.storage_secrets import SOURCE_STORAGE_SECRETS_ENV

    hook = HoodieHook(None, base_path="/tmp/t", storage_options={"region": "us-east-1"},
                      source_storage_options={"endpoint_override": "http://src:9000", "secret_key": "src-secret"})
    args = hook.job_arguments(["--source", "s3://src/b1"])
    assert "src-secret" not in " ".join(args)
    at = args.index("--source-storage-option")
    assert args[at:at + 2] == ["--source-storage-option", "endpoint_override=http://src:9000"]
    env = hook.build_submit_hook("upsert", args)._env_vars
    assert json.loads(env[SOURCE_STORAGE_SECRETS_ENV]) == {"secret_key": "src-secret"}
    monkeypatch.setenv(SOURCE_STORAGE_SECRETS_ENV, env[SOURCE_STORAGE_SECRETS_ENV])
    parser = base_parser("the upsert job's options")
    parser.add_argument("--source")
    parser.add_argument("--source-storage-option", action="append", default=[])
    ns, _ = parser.parse_known_args(args)
    assert source_storage_options(ns) == {"endpoint_override": "http://src:9000", "secret_key": "src-secret"}
