"""A CDC table written through the Spark DataFrame path logs the same .cdc records as the
in-process (Arrow) path, and its CDC query returns the change model's list.

The same upserts (updates, inserts into existing small groups, new groups) and delete go to
two tables, one through ``upsert_dataframe`` (the DataFrame path: keys, index and routing as
Spark operations, file groups written by Spark tasks), one through ``write_arrow``. File ids
and instants differ between the two, so each commit's records are compared as a multiset,
instant times (DATA_BEFORE_AFTER's ``ts_ms``) set aside."""

from __future__ import annotations

import os

import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_cdc import ChangeModel, conf, decode_cdc_blocks, normalized, rows_table
from tests.spark.test_upsert import version_conf


def commit_records(base: str, instant: str) -> list[str]:
    """The commit's .cdc records, instant times blanked, as sorted reprs."""
    meta = HoodieTable.load(base).timeline.commit_metadata(instant)
    out = []
    for _partition, stat in meta.iter_write_stats():
        for rel in stat.cdc_stats or {}:
            for _schema, records in decode_cdc_blocks(os.path.join(base, rel)):
                out += [repr({k: (None if k == "ts_ms" else v) for k, v in r.items()}) for r in records]
    return sorted(out)


@pytest.mark.parametrize("mode,version", [("DATA_BEFORE_AFTER", 6), ("OP_KEY_ONLY", 9), ("DATA_BEFORE", 6)])
def test_spark_path_logs_what_the_arrow_path_logs(spark, tmp_path, mode, version):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    c = {**conf(**{"hoodie.table.cdc.supplemental.logging.mode": mode}), **version_conf(version)}
    on_spark, in_process = str(tmp_path / "spark"), str(tmp_path / "arrow")
    model, expected = ChangeModel(), []
    first = [{"id": i, "ts": 1, "p": "a" if i % 2 else "b", "v": f"v{i}"} for i in range(10)]
    second = [{"id": i, "ts": 2, "p": "a" if i % 2 else "b", "v": f"w{i}"} for i in [1, 2, 3, *range(10, 30)]]
    steps = [("upsert", first), ("upsert", second), ("delete", [{"id": k, "ts": 3, "p": "a" if k % 2 else "b",
                                                                 "v": ""} for k in (2, 5, 11)])]
    for operation, batch in steps:
        df = spark.createDataFrame(rows_table(batch))
        r = upsert_dataframe(spark, df, on_spark, operation,
                             HoodieConfig(c).with_values({DRIVER_BATCH_MAX_BYTES: "0"}), "t")
        local = write_arrow(in_process, rows_table(batch), operation, c, table_name="t")
        expected += model.upsert(batch, r.instant) if operation == "upsert" else \
            model.delete([b["id"] for b in batch], r.instant)
        assert commit_records(on_spark, r.instant) == commit_records(in_process, local.instant), operation
    assert any(commit_records(on_spark, i.timestamp)
               for i in HoodieTable.load(on_spark).timeline.completed_commits())
    got = sorted(tuple(x.values()) for x in read_table(on_spark, query_type="cdc").to_pylist())
    assert got == normalized(expected)
