"""A table of two independent uniform columns, clustered by both, and the files a filtered read
opens: what layout-optimization tests (in-process and Spark) share."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa

import airflow_hoodie.table.read as read_module
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table


def config(version: int = 9) -> dict[str, str]:
    cfg = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
           "hoodie.datasource.write.table.type": "COPY_ON_WRITE", "hoodie.parquet.small.file.limit": "0",
           "hoodie.metadata.index.column.stats.enable": "true", "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
    if version != 6:
        cfg["hoodie.write.table.version"] = str(version)
    return cfg


def rows(ids: np.ndarray, seed: int) -> pa.Table:
    """``x`` and ``y`` uniform over [0, 1024), independent of each other and of the key."""
    rng = np.random.default_rng(seed)
    n = len(ids)
    return pa.table({"id": pa.array([f"k{i:08d}" for i in ids]), "p": pa.array(["a"] * n), "ts": pa.array(np.ones(n, np.int64)),
                     "x": pa.array(rng.integers(0, 1024, n)), "y": pa.array(rng.integers(0, 1024, n).astype(np.int32)),
                     "v": pa.array(rng.random(n))})


def build(base: str, total: int, batches: int, version: int = 9) -> None:
    """``total`` rows in ``batches`` inserts: as many small files to cluster."""
    per = total // batches
    for b in range(batches):
        write_arrow(base, rows(np.arange(b * per, (b + 1) * per), b), "insert", config(version))


def data_bytes(base: str) -> int:
    out = 0
    for root, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        out += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".parquet"))
    return out


def cluster_config(strategy: str, files: int, base: str, method: str = "direct", **extra: str) -> HoodieConfig:
    """Every small file in one group, written as about ``files`` files, ordered by (x, y)."""
    size = data_bytes(base)
    return HoodieConfig({cu.SORT_COLUMNS: "x,y", cu.SMALL_FILE_LIMIT: str(10 * size),
                         cu.MAX_BYTES_PER_GROUP: str(100 * size), cu.TARGET_FILE_MAX_BYTES: str(size // files + 1),
                         "hoodie.layout.optimize.strategy": strategy,
                         "hoodie.layout.optimize.curve.build.method": method,
                         "hoodie.metadata.index.column.stats.enable": "true", **extra})


def opened(base: str, filters: list[tuple[str, str, Any]]) -> tuple[int, pa.Table]:
    """(file slices the filtered read opens, its rows): data skipping through column_stats."""
    count: list[int] = []
    real = read_module.read_file_slice

    def counting(storage: Any, file_slice: Any, opts: Any = None) -> pa.Table:
        count.append(1)
        return real(storage, file_slice, opts)

    read_module.read_file_slice = counting
    try:
        table = read_table(base, columns=["id", "x", "y"], filters=filters)
    finally:
        read_module.read_file_slice = real
    return len(count), table


def latest_files(base: str) -> int:
    return sum(1 for s in HoodieTable.load(base).file_system_view().latest_merged_file_slices() if s.base_file)
