"""bulk_insert through the row-writer path: layouts per hoodie.bulkinsert.sort.mode, one Spark job."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows, normalize_table


def _rows(n: int) -> pa.Table:
    return pa.table({
        "id": [f"k{(i * 7919) % n:05d}" for i in range(n)],  # keys out of order
        "ts": [1] * n,
        "p": ["a" if i % 3 else "b" for i in range(n)],
        "v": list(range(n)),
    })


def _conf(**extra: str) -> HoodieConfig:
    return HoodieConfig({"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
                         "hoodie.datasource.write.precombine.field": "ts",
                         "hoodie.datasource.write.partitionpath.field": "p", **extra})


def _base_files(base: str) -> dict[str, list[pa.Table]]:
    table = HoodieTable.load(base)
    out: dict[str, list[pa.Table]] = {}
    for fg in table.file_system_view().file_groups():
        sl = fg.latest_slice()
        out.setdefault(fg.partition_path, []).append(pq.read_table(table.storage.join(base, sl.base_file.path)))
    return out


def _jobs_of(spark, group: str) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


@pytest.mark.parametrize("mode", ["NONE", "GLOBAL_SORT", "PARTITION_SORT", "PARTITION_PATH_REPARTITION",
                                  "PARTITION_PATH_REPARTITION_AND_SORT"])
def test_every_sort_mode_writes_every_row_once_and_hudi_rs_agrees(spark, tmp_path, mode):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / mode)
    data = _rows(300)
    df = spark.createDataFrame(data).repartition(3).cache()
    df.count()
    spark.sparkContext.setJobGroup(f"bulk-{mode}", mode)
    result = upsert_dataframe(spark, df, base, "bulk_insert", _conf(**{"hoodie.bulkinsert.sort.mode": mode}), "t")
    spark.sparkContext.setJobGroup("other", "other")
    assert result.inserts == 300 and result.state == "COMPLETED"
    got = read_table(base)
    assert sorted(got.column("id").to_pylist()) == sorted(data.column("id").to_pylist())
    assert normalize_table(got) == hudi_rs_rows(base)
    files = _base_files(base)
    if mode == "NONE":
        # no shuffle: one job writes, each of the 3 input partitions its own file per partition
        # path; a first write's records are checked in that job's tasks (no job of its own)
        assert _jobs_of(spark, f"bulk-{mode}") == 1
        assert all(len(v) == 3 for v in files.values())
    if mode.startswith("PARTITION_PATH_REPARTITION"):
        # the rows of a partition path meet in one task: one file each
        assert sorted(files) == ["a", "b"] and all(len(v) == 1 for v in files.values())
    if mode not in ("NONE", "PARTITION_PATH_REPARTITION"):
        for tables in files.values():
            for t in tables:
                keys = t.column("_hoodie_record_key").to_pylist()
                assert keys == sorted(keys)
    if mode == "GLOBAL_SORT":
        for tables in files.values():  # range-partitioned: files of a partition never overlap
            ranges = sorted((t.column("_hoodie_record_key")[0].as_py(), t.column("_hoodie_record_key")[-1].as_py())
                            for t in tables)
            assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))


def test_partition_path_repartition_groups_by_path_with_a_timestamp_key_generator(spark, tmp_path):
    """Many timestamps make one day's path: the rows are grouped by the path the key
    generator makes, not by the raw field, so each day is still one file."""
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    n = 120
    data = pa.table({"id": [f"k{i:04d}" for i in range(n)], "ts": [1_700_000_000 + 3_600 * i for i in range(n)],
                     "v": list(range(n))})
    conf = HoodieConfig({"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "ts",
                         "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
                         "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
                         "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd",
                         "hoodie.bulkinsert.sort.mode": "PARTITION_PATH_REPARTITION",
                         "hoodie.bulkinsert.shuffle.parallelism": "4"})
    upsert_dataframe(spark, spark.createDataFrame(data).repartition(6), base, "bulk_insert", conf, "t")
    files = _base_files(base)
    assert len(files) == 6 and all(len(v) == 1 for v in files.values()), {k: len(v) for k, v in files.items()}
    assert read_table(base).num_rows == n


def test_rows_past_the_max_file_size_roll_to_new_file_groups(spark, tmp_path):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    df = spark.createDataFrame(_rows(300)).coalesce(1)
    # 1024 copyonwrite.record.size.estimate bytes per record -> 10 records per file
    conf = _conf(**{"hoodie.parquet.max.file.size": str(10 * 1024)})
    upsert_dataframe(spark, df, base, "bulk_insert", conf, "t")
    files = _base_files(base)
    assert sorted(len(v) for v in files.values()) == [10, 20]
    assert all(t.num_rows == 10 for v in files.values() for t in v)


def test_dedupe_before_insert_keeps_the_greatest_ordering_value(spark, tmp_path):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    data = pa.table({"id": ["x", "x", "y"], "ts": [1, 5, 2], "p": ["a", "a", "a"], "v": [1, 2, 3]})
    upsert_dataframe(spark, spark.createDataFrame(data), base, "bulk_insert",
                     _conf(**{"hoodie.combine.before.insert": "true"}), "t")
    got = {r["id"]: r["v"] for r in read_table(base, columns=["id", "v"]).to_pylist()}
    assert got == {"x": 2, "y": 3}


def test_an_unknown_sort_mode_is_refused_before_anything_is_written(spark, tmp_path):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = tmp_path / "t"
    with pytest.raises(HoodieConfigError, match="hoodie.bulkinsert.sort.mode"):
        upsert_dataframe(spark, spark.createDataFrame(_rows(10)), str(base), "bulk_insert",
                         _conf(**{"hoodie.bulkinsert.sort.mode": "SORTED"}), "t")
    hoodie = base / ".hoodie"
    assert not hoodie.exists() or not [p for p in hoodie.iterdir() if p.name.endswith(".requested")]


def test_bulk_insert_without_record_key_generates_unique_keys(spark, tmp_path):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    data = _rows(40).drop_columns(["id"])
    conf = HoodieConfig({"hoodie.datasource.write.partitionpath.field": "p"})
    result = upsert_dataframe(spark, spark.createDataFrame(data).repartition(3), base, "bulk_insert", conf, "t")
    keys = read_table(base, columns=["_hoodie_record_key"]).column(0).to_pylist()
    assert len(keys) == len(set(keys)) == 40
    assert all(k.startswith(result.instant + "_") for k in keys)
