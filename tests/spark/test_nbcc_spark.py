"""NBCC (non-blocking concurrency control) on the Spark DataFrame path: two upserts into a MOR
simple-bucket table of version 9 write logs only, under Hudi's fixed NBCC file ids, and our
reader returns each key once with its latest value."""

from __future__ import annotations

import os
import re

import pyarrow as pa

from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.read import read_table
from tests.actions.nbcc_fixtures import nbcc_settings

NBCC_FILE_ID = re.compile(r"^\d{8}-0000-0000-0000-000000000000-0$")


def _rows(ids: range, ts: int, tag: str) -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "ts": pa.array([ts] * len(ids), pa.int64()),
                     "v": [f"{tag}{i}" for i in ids], "p": ["a"] * len(ids)})


def test_two_nbcc_upserts_through_the_dataframe_path(spark, tmp_path) -> None:
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    conf = {**nbcc_settings(9), DRIVER_BATCH_MAX_BYTES: "0"}
    for data in (_rows(range(12), 1, "a"), _rows(range(6, 18), 2, "b")):
        upsert_dataframe(spark, spark.createDataFrame(data.to_pandas()), base, "upsert", HoodieConfig(conf), "svc")
    names = [n for d, _sub, files in os.walk(base) if "/.hoodie" not in d + "/" for n in files
             if not n.startswith(".hoodie_partition") and not n.endswith(".crc")]
    assert names and all(".log." in n for n in names), names
    assert all(NBCC_FILE_ID.match(n[1:].split("_", 1)[0]) for n in names), names
    t = read_table(base)
    got = sorted(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))
    want = {f"k{i}": f"a{i}" for i in range(12)}
    want.update({f"k{i}": f"b{i}" for i in range(6, 18)})
    assert got == sorted(want.items())
