"""A base file writes a column with a dictionary only when the dictionary compresses it, as
parquet-mr (Hudi's writer) decides after a column's first page: a near-unique amount or name
is written plain, a column of few values and the one-value meta columns keep theirs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.file_group.base_file_writer import dictionary_columns, stamp_meta_columns, write_base_file
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.settings.base_file import BaseFileSettings

AVRO = {"type": "record", "name": "r", "fields": [
    {"name": "id", "type": ["null", "long"]}, {"name": "amount", "type": ["null", "double"]},
    {"name": "name", "type": ["null", "string"]}, {"name": "city", "type": ["null", "string"]},
    {"name": "day", "type": ["null", "int"]}]}


def _data(n: int) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({"id": pa.array(range(n), pa.int64()),
                     "amount": pa.array(rng.random(n) * 1000, pa.float64()),
                     "name": pa.array([f"name-{x}" for x in rng.integers(0, 10**9, n)]),
                     "city": pa.array([["Oslo", "Lima", None][i % 3] for i in range(n)]),
                     "day": pa.array((np.arange(n) // 1000).astype(np.int32))})


def test_only_columns_a_dictionary_compresses_get_one(tmp_path):
    n = 20_000
    data = _data(n)
    keys = pa.array([str(i) for i in range(n)])
    stamped = stamp_meta_columns(data, keys, "p", "20240101000000000", "f-0_1-0-0_20240101000000000.parquet",
                                 partition_id=0, dictionary=True)
    cfg = BaseFileSettings.from_config(HoodieConfig({"hoodie.datasource.write.recordkey.field": "id"}))
    assert dictionary_columns(stamped, cfg) == ["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_file_name",
                                                "city", "day"]
    storage, base = Storage.for_uri(str(tmp_path))
    write_base_file(storage, base, "p", "f.parquet", stamped, AVRO, cfg)
    md = pq.read_metadata(tmp_path / "p" / "f.parquet").row_group(0)
    has_dictionary = {md.column(i).path_in_schema: md.column(i).has_dictionary_page for i in range(md.num_columns)}
    assert not any(has_dictionary[c] for c in ("amount", "name", "id", "_hoodie_record_key", "_hoodie_commit_seqno"))
    assert all(has_dictionary[c] for c in ("city", "day", "_hoodie_commit_time", "_hoodie_file_name"))
    read = pq.read_table(tmp_path / "p" / "f.parquet")
    assert read.select(data.column_names).equals(data)


def test_the_decision_follows_the_values_not_the_type():
    cfg = BaseFileSettings()
    few = pa.table({"x": pa.array([1.5, 2.5] * 5000), "s": pa.array(["a", "bb"] * 5000)})
    many = pa.table({"x": pa.array(np.arange(10_000) / 7.0), "s": pa.array([f"s{i}" for i in range(10_000)])})
    assert dictionary_columns(few, cfg) == ["x", "s"]
    assert dictionary_columns(many, cfg) == []
    # nulls take no dictionary entry: a mostly-null column of few values keeps its dictionary
    sparse = pa.table({"s": pa.array([None if i % 10 else f"s{i % 3}" for i in range(10_000)])})
    assert dictionary_columns(sparse, cfg) == ["s"]
