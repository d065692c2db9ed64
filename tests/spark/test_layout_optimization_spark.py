"""Layout optimization on the Spark path: clustering groups run as Spark tasks order their rows
along the curve exactly as the in-process path does, keep every row (hudi-rs agrees) and keep the
metadata table's column_stats exact."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions import layout_fixtures as lf
from tests.actions.test_attack_lake_sequences import assert_metadata_describes_storage
from tests.table.normalize import hudi_rs_rows


def _files_by_xy(base: str) -> list[list[tuple[int, int]]]:
    """Each latest base file's (x, y) values, in file order: the layout, whatever its file names."""
    out = []
    for s in HoodieTable.load(base).file_system_view().latest_merged_file_slices():
        t = pq.read_table(s.base_file.path if s.base_file.path.startswith("/") else f"{base}/{s.partition_path}/"
                          f"{s.base_file.file_name}", columns=["x", "y"])
        out.append(sorted(zip(t.column("x").to_pylist(), t.column("y").to_pylist())))
    return sorted(out)


@pytest.mark.parametrize("strategy", ["hilbert"])
def test_spark_clustering_along_a_curve_matches_the_in_process_layout(spark, tmp_path: Path, strategy: str) -> None:
    from airflow_hoodie.spark.executor import SparkExecutor

    bases = {}
    for engine, executor in (("spark", SparkExecutor(spark)), ("local", LocalExecutor())):
        base = str(tmp_path / engine)
        lf.build(base, 3000, 3)
        before = read_table(base, columns=["id", "x", "y"]).sort_by("id")
        res = cu.run_clustering(HoodieTable.load(base), lf.cluster_config(strategy, 6, base), executor)
        assert res["records_written"] == 3000 and res["files_written"] == 6
        assert read_table(base, columns=["id", "x", "y"]).sort_by("id").equals(before)
        bases[engine] = base
    base = bases["spark"]
    rs = sorted((r["id"], r["x"], r["y"]) for r in hudi_rs_rows(base, columns=["id", "x", "y"]))
    assert rs == sorted((r["id"], r["x"], r["y"]) for r in read_table(base, columns=["id", "x", "y"]).to_pylist())
    assert_metadata_describes_storage(base, "Spark hilbert clustering")
    assert _files_by_xy(bases["spark"]) == _files_by_xy(bases["local"])
    n_y, _ = lf.opened(base, [("y", "==", 500)])
    assert n_y <= 3
