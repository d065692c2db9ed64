"""Secondary indexes kept exact on an ``s3://`` table (moto's endpoint): a copy of Hudi 1.1's
v9 MOR table, uploaded, takes a value-changing upsert with inserts, a delete and a compaction
through the object store; the table, brought back, has every index record in its file group
and exactly the entries of the rows hudi-rs and our reader read (on S3 too)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.secondary_index_fixtures import AWKWARD, FAST, check_indexes
from tests.s3.conftest import S3Place
from tests.table.normalize import hudi_rs_rows, normalize_table
from tests.table.table_files import copy_conformance_table


def _upload(s3: S3Place, local: Path, prefix: str) -> None:
    client = s3.client()
    for path in sorted(local.rglob("*")):
        if path.is_file():
            client.put_object(Bucket=s3.bucket, Key=f"{prefix}/{path.relative_to(local).as_posix()}",
                              Body=path.read_bytes())


def _download(s3: S3Place, prefix: str, local: Path) -> Path:
    client = s3.client()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=s3.bucket, Prefix=f"{prefix}/"):
        for obj in page.get("Contents") or []:
            target = local / obj["Key"][len(prefix) + 1:]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(client.get_object(Bucket=s3.bucket, Key=obj["Key"])["Body"].read())
    return local


def test_secondary_indexes_stay_exact_on_s3(s3: S3Place, conformance_next, tmp_path):
    local = copy_conformance_table(conformance_next, "mor/v9_txns_simple_meta", tmp_path / "up")
    start = check_indexes(local, "start")
    _upload(s3, local, "si")
    uri, opts = s3.uri("si"), s3.storage_options
    cfg = {**FAST, "hoodie.datasource.write.recordkey.field": "txn_id"}
    stored = read_table(uri, storage_options=opts).sort_by("_hoodie_record_key")
    rows = stored.drop_columns([n for n in stored.column_names if n.startswith("_hoodie_")])
    later = rows.slice(0, 4).set_column(rows.schema.get_field_index("txn_ts"), "txn_ts",
                                        pa.array([2 ** 50] * 4, rows.schema.field("txn_ts").type))
    name = later.schema.get_field_index("merchant_name")
    changed = later.slice(0, 2).set_column(name, "merchant_name", pa.array(AWKWARD[:2]))
    inserted = later.slice(2, 2).set_column(name, "merchant_name", pa.array(AWKWARD[2:]))
    inserted = inserted.set_column(inserted.schema.get_field_index("txn_id"), "txn_id", pa.array(["S3-1", "S3$2"]))
    write_arrow(uri, pa.concat_tables([changed, inserted]), "upsert", cfg, storage_options=opts)
    write_arrow(uri, rows.slice(5, 1), "delete", cfg, storage_options=opts)
    table = HoodieTable.load(uri, storage_options=opts)
    assert c.schedule_compaction(table, HoodieConfig(FAST), force=True).instant is not None
    done = c.execute_pending_compactions(HoodieTable.load(uri, storage_options=opts), LocalExecutor(),
                                         HoodieConfig(FAST), storage_options=opts)
    assert done["state"] == "completed", done
    assert hudi_rs_rows(uri, storage_options=s3.hudi_rs_options) == normalize_table(read_table(uri, storage_options=opts))
    back = _download(s3, "si", tmp_path / "down")
    after = check_indexes(back, "after the s3 jobs")
    assert after["secondary_index_merchant_idx"] == start["secondary_index_merchant_idx"] + 1
