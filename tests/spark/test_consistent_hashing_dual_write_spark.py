"""A write through the Spark DataFrame path while a consistent-hashing resize is pending, with
the duplicate update strategy: the Spark tag tasks duplicate the records into the child groups
as the in-process engine does, and after the clustering completes every row is read once with
its latest value (ours and hudi-rs)."""

from __future__ import annotations

from airflow_hoodie.actions.clustering import run_clustering
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.test_consistent_hashing import _batch, _check_rows_in_ring, _rs
from tests.actions.test_consistent_hashing_dual_write import DUAL, SPLIT, _expected, _ours, _schedule, _values


def _child_groups_with_logs(base: str) -> set[str]:
    """File ids with log files but no base file: before the clustering, only its child groups."""
    import os

    out = set()
    for part in ("a", "b"):
        names = os.listdir(f"{base}/{part}")
        bases = {n[:38] for n in names if n.endswith(".parquet")}
        out |= {n[1:39] for n in names if ".log." in n} - bases
    return out


def test_spark_write_while_a_resize_is_pending(spark, tmp_path) -> None:
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    first, updates = _batch(30, 1), _batch(14, 2, start=20)  # k20..k29 updated, k30..k33 new
    write_arrow(base, first, "upsert", DUAL)
    instant = _schedule(base, SPLIT)
    upsert_dataframe(spark, spark.createDataFrame(updates.to_pandas()), base, "upsert",
                     HoodieConfig({**DUAL, DRIVER_BATCH_MAX_BYTES: "0"}), "svc")
    expected = _expected(first, updates)
    assert _ours(base) == expected
    assert _child_groups_with_logs(base), "the Spark tag tasks wrote the duplicates to the child groups"
    out = run_clustering(HoodieTable.load(base), HoodieConfig({**DUAL, **SPLIT}), LocalExecutor(), mode="execute",
                         instant_time=instant)
    assert out["state"] == "completed", out
    assert _ours(base) == expected
    assert _values(_rs(base)) == expected
    _check_rows_in_ring(base, set(expected))
