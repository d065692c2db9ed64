"""The memory rule of the DataFrame write path: a Python task of the tag or write step holds
at most one file group's records (hoodie.copyonwrite.insert.split.size new records, or an
update group's records), never a share of the batch, and each group is a shuffle partition of
its own, so the JVM's sort holds no more either."""

from __future__ import annotations

from collections import Counter

import pytest

from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.spark.task_partitions import (
    dense_keys,
    spark_hash_int,
    tag_slice_target,
)
from airflow_hoodie.table.read import read_table

SPLIT = 40


@pytest.fixture
def engines(monkeypatch):
    """The DataFrame engines upsert_dataframe makes, to read what their tasks held."""
    from airflow_hoodie.spark import dataframe_write
    from airflow_hoodie.spark.upsert import SparkWriteEngine

    made = []

    def make(*args):
        made.append(SparkWriteEngine(*args))
        return made[-1]

    monkeypatch.setattr(dataframe_write, "SparkWriteEngine", make)
    return made


def _upsert(spark, base, rows):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    cfg = HoodieConfig({"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
                        "hoodie.datasource.write.precombine.field": "ts",
                        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.index.type": "BLOOM",
                        DRIVER_BATCH_MAX_BYTES: "0", "hoodie.copyonwrite.insert.split.size": str(SPLIT),
                        "hoodie.copyonwrite.insert.auto.split": "false", "hoodie.parquet.small.file.limit": "0"})
    return upsert_dataframe(spark, spark.createDataFrame(rows, "id string, ts long, p string, v string"),
                            base, "upsert", cfg, "t")


def _assert_held_within_groups(engine):
    held = engine.held.value
    tag = {k: n for k, n in held.items() if k[0] == "tag"}
    write = {k: n for k, n in held.items() if k[0] == "write"}
    assert max(tag.values()) <= SPLIT, tag
    # no update group here holds more than the split (the first write made groups of <= SPLIT)
    assert max(write.values()) <= SPLIT, write
    assert len(tag) > 2 and len(write) > 2, held  # the batch was split over several tasks


def test_a_batch_split_over_several_file_groups_is_written_one_group_per_task(spark, tmp_path, engines):
    base = str(tmp_path / "t")
    first = [(f"k{i:04d}", 1, "ab"[i % 2], f"v{i}") for i in range(300)]
    r = _upsert(spark, base, first)
    assert r.inserts == 300
    _assert_held_within_groups(engines[-1])
    # each partition's 150 inserts went to new groups of exactly 40, 40, 40 and 30 records
    per_file = Counter(zip(*read_table(base, columns=["p", "_hoodie_file_name"]).to_pydict().values()))
    assert sorted(per_file.values()) == [30, 30, 40, 40, 40, 40, 40, 40]

    updates = [(f"k{i:04d}", 2, "ab"[i % 2], "new") for i in range(0, 300, 2)] + \
        [(f"n{i:04d}", 2, "ab"[i % 2], "n") for i in range(110)]
    r = _upsert(spark, base, updates)
    assert (r.updates, r.inserts) == (150, 110)
    _assert_held_within_groups(engines[-1])
    got = {row["id"]: row["v"] for row in read_table(base, columns=["id", "v"]).to_pylist()}
    want = {f"k{i:04d}": "new" if i % 2 == 0 else f"v{i}" for i in range(300)}
    assert got == {**want, **{f"n{i:04d}": "n" for i in range(110)}}


def test_each_group_gets_a_shuffle_partition_of_its_own(spark):
    from pyspark.sql import functions as F

    from airflow_hoodie.spark.task_partitions import one_group_per_task

    values = [-7, 0, 1, 42, 2**31 - 1, -(2**31)]
    row = spark.range(1).select(*[F.hash(F.lit(v).cast("int")).alias(str(i)) for i, v in enumerate(values)]).first()
    assert list(row) == [spark_hash_int(v) for v in values]  # Spark's hash partitioning, in Python
    assert sorted(spark_hash_int(k) % 13 for k in dense_keys(13)) == list(range(13))
    frame = spark.range(130).withColumn("g", (F.col("id") % 13).cast("int"))
    spread = (one_group_per_task(frame, F.col("g"), 13, "__k").groupBy(F.spark_partition_id().alias("task"))
              .agg(F.countDistinct("g").alias("groups")).collect())
    assert len(spread) == 13 and {r["groups"] for r in spread} == {1}


@pytest.mark.parametrize("split", [1, 40, 150_000, 500_000])
def test_a_tag_slice_is_aimed_five_deviations_below_the_split(split):
    t = tag_slice_target(split)
    assert 1 <= t <= split and (split < 100 or t + 5 * t ** 0.5 <= split + 1)
