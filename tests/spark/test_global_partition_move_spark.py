"""The DataFrame upsert path merges a record that a global index moves with the stored one
first, as the in-process path does: an older record does not move the stored one."""

from __future__ import annotations

from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.read import read_table


def test_a_moving_record_that_loses_on_ordering_leaves_the_stored_one_in_place(spark, tmp_path):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    cfg = HoodieConfig({"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
                        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "GLOBAL_SIMPLE",
                        "hoodie.simple.index.update.partition.path": "true", "hoodie.table.type": "MERGE_ON_READ",
                        "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
                        DRIVER_BATCH_MAX_BYTES: "0"})
    upsert_dataframe(spark, spark.createDataFrame([{"id": i, "ts": 5, "p": "b", "v": "old"} for i in range(4)]),
                     base, "insert", cfg, "t")
    # 0 older: stays in b; 1 tie and 2 newer: move to a; 3 older in place: loses
    batch = [{"id": 0, "ts": 4, "p": "a", "v": "new"}, {"id": 1, "ts": 5, "p": "a", "v": "new"},
             {"id": 2, "ts": 6, "p": "a", "v": "new"}, {"id": 3, "ts": 1, "p": "b", "v": "new"}]
    r = upsert_dataframe(spark, spark.createDataFrame(batch), base, "upsert", cfg)
    assert r.inserts == 2
    got = sorted((row["id"], row["ts"], row["p"], row["v"]) for row in read_table(base, columns=["id", "ts", "p", "v"]).to_pylist())
    assert got == [(0, 5, "b", "old"), (1, 5, "a", "new"), (2, 6, "a", "new"), (3, 5, "b", "old")]
