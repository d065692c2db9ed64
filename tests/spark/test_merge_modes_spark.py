"""The DataFrame path dedupes a batch by several ordering fields as a tuple, and by commit time
(the later row) under COMMIT_TIME_ORDERING; the in-process path is in tests/actions/test_merge_modes.py."""

from __future__ import annotations

import pytest

from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from tests.actions.test_merge_modes import rows, tuple_conf, visible


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_dataframe_dedupe_by_ordering_tuple_and_by_commit_time(spark, tmp_path, table_type):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = tmp_path / "t"
    cfg = HoodieConfig(tuple_conf(table_type, **{DRIVER_BATCH_MAX_BYTES: "0"}))
    batch = rows((1, 1, 5, "a"), (1, 2, 0, "b"), (1, 2, 3, "winner"), (1, 1, 9, "c"))
    upsert_dataframe(spark, spark.createDataFrame(batch), str(base), "upsert", cfg, "t")
    assert visible(base) == {1: (2, 3, "winner")}

    commit_time = cfg.with_values({"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"})
    other = tmp_path / "u"
    batch = rows((2, 9, 9, "earlier in batch"), (2, 1, 1, "later in batch"))
    upsert_dataframe(spark, spark.createDataFrame(batch).coalesce(1), str(other), "upsert", commit_time, "u")
    assert visible(other) == {2: (1, 1, "later in batch")}
