"""The Spark write path shares the write client's commit: with optimistic concurrency a
DataFrame upsert that lost a race to another writer aborts, its rows never visible."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.actions import write as W
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieWriteConflictError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table

CONF = {"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
        "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"}


def _rows(ids, ts, tag):
    return pa.table({"id": list(ids), "ts": [ts] * len(ids), "p": ["a"] * len(ids), "v": [f"{tag}{i}" for i in ids]})


def test_a_spark_upsert_that_lost_the_race_aborts_cleanly(spark, tmp_path, monkeypatch):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    write_arrow(base, _rows(range(10), 1, "a"), "upsert", CONF, table_name="t")
    real_make_context = W.make_context

    def another_writer_commits_first(*args, **kwargs):
        monkeypatch.setattr(W, "make_context", real_make_context)
        write_arrow(base, _rows(range(5), 2, "other"), "upsert", CONF)
        return real_make_context(*args, **kwargs)

    monkeypatch.setattr(W, "make_context", another_writer_commits_first)
    with pytest.raises(HoodieWriteConflictError):
        upsert_dataframe(spark, spark.createDataFrame(_rows(range(3, 8), 3, "spark")), base, "upsert",
                         HoodieConfig(CONF), "t")
    values = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert [values[i] for i in range(10)] == [f"other{i}" for i in range(5)] + [f"a{i}" for i in range(5, 10)]
    assert HoodieTable.load(base).timeline.pending().instants == []
    # the retry lands
    upsert_dataframe(spark, spark.createDataFrame(_rows(range(3, 8), 3, "spark")), base, "upsert",
                     HoodieConfig(CONF), "t")
    values = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert [values[i] for i in range(3, 8)] == [f"spark{i}" for i in range(3, 8)]
