"""The Spark DataFrame path's BLOOM index with hoodie.bloom.index.use.metadata: the key ranges
and filters of the files the metadata table describes come from it, and the upsert writes
the same table as the footer path (our reader, hudi-rs, the statistics)."""

from __future__ import annotations

import pyarrow as pa

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.spark import upsert as spark_upsert
from airflow_hoodie.spark.dataframe_write import upsert_dataframe
from airflow_hoodie.table.read import read_table
from tests.spark.test_upsert import engine_conf
from tests.table.metadata_table.stats_check import assert_stats_describe_storage
from tests.table.normalize import hudi_rs_rows, normalize_table

STATS = {"hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.index.bloom.filter.enable": "true"}


def _rows(ids: range, ts: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": [f"k{i:04d}" for i in ids], "p": [f"p{i % 2}" for i in ids], "ts": [ts] * len(ids),
                     "v": [ts * 1000 + i for i in ids]})


def test_dataframe_bloom_lookup_takes_ranges_and_filters_from_the_metadata_table(spark, tmp_path, monkeypatch):
    described: list[int] = []
    real = spark_upsert.metadata_footers

    def recording(table, refs, prune=True):
        found = real(table, refs, prune)
        described.append(len(found))
        return found

    monkeypatch.setattr(spark_upsert, "metadata_footers", recording)
    results = {}
    for use in ("false", "true"):
        base = str(tmp_path / use)
        cfg = HoodieConfig({"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
                            "hoodie.datasource.write.precombine.field": "ts",
                            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "BLOOM",
                            "hoodie.bloom.index.use.metadata": use, "hoodie.parquet.small.file.limit": "0",
                            **STATS}).with_values(engine_conf(None))
        for start in range(0, 60, 20):
            upsert_dataframe(spark, spark.createDataFrame(_rows(range(start, start + 20), 1)), base,
                             "upsert", cfg, "t")
        described.clear()
        upsert_dataframe(spark, spark.createDataFrame(_rows(range(10, 50, 3), 2)), base, "upsert",
                         cfg, "t")
        results[use] = normalize_table(read_table(base))
        assert results[use] == hudi_rs_rows(base)
        assert_stats_describe_storage(base)
        if use == "true":
            assert described and described[0] > 0  # every base file of the table came from the metadata table
        else:
            assert not described
    drop = {"_hoodie_commit_time", "_hoodie_commit_seqno"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in results["true"]] == \
        [{k: v for k, v in r.items() if k not in drop} for r in results["false"]]
    assert len(results["true"]) == 60
