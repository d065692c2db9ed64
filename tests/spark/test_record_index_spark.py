"""hoodie.index.type=RECORD_INDEX on the DataFrame path: the keys are grouped by the
record-index file group they hash to, one task per group reads it, and the table comes out
as GLOBAL_SIMPLE makes it, with the record index still exact."""

from __future__ import annotations

from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.read import read_table
from tests.actions.services_fixtures import batch, table_config
from tests.table.metadata_table.test_record_index import assert_index_exact


def test_record_index_tagging_on_spark_gives_global_simples_table(spark, tmp_path, monkeypatch):
    from airflow_hoodie.spark import upsert as up
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    out = {}
    for index_type in ("GLOBAL_SIMPLE", "RECORD_INDEX"):
        base = tmp_path / index_type
        cfg = HoodieConfig({**table_config("COPY_ON_WRITE"), "hoodie.index.type": index_type,
                            "hoodie.metadata.record.index.enable": "true", DRIVER_BATCH_MAX_BYTES: "0"})
        upsert_dataframe(spark, spark.createDataFrame(batch(range(0, 12), 1).to_pandas()), str(base), "upsert",
                         cfg, "svc")
        upsert_dataframe(spark, spark.createDataFrame(batch(range(6, 16), 2).to_pandas()), str(base), "upsert",
                         cfg, "svc")
        if index_type == "RECORD_INDEX":
            # the keys of the data files are never read: the record index answers
            def no_scan(*args):
                raise AssertionError("the data files were scanned for keys")
            monkeypatch.setattr(up, "_existing_keys_df", no_scan)
            monkeypatch.setattr(up, "_key_range", no_scan)
        upsert_dataframe(spark, spark.createDataFrame(batch(range(10, 20), 3).to_pandas()), str(base), "upsert",
                         cfg, "svc")
        upsert_dataframe(spark, spark.createDataFrame(batch(range(0, 3), 4).to_pandas()), str(base), "delete",
                         cfg, "svc")
        monkeypatch.undo()
        rows = read_table(str(base)).sort_by("id")
        out[index_type] = rows.select(["_hoodie_record_key", "_hoodie_partition_path", "id", "v"])
        assert_index_exact(base, index_type)
    assert out["RECORD_INDEX"] == out["GLOBAL_SIMPLE"]
    assert out["RECORD_INDEX"].num_rows == 17
