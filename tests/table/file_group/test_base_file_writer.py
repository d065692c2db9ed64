"""The base-file writer's memory-saving forms must not change a byte of the file."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.file_group.base_file_writer import seqno_array, stamp_meta_columns, write_base_file
from airflow_hoodie.table.storage.storage import Storage

AVRO = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}, {"name": "v", "type": "string"}]}


def test_seqno_numbers_rows_from_start():
    assert seqno_array("20240101000000000", 3, 7, 3).to_pylist() == [
        "20240101000000000_3_7", "20240101000000000_3_8", "20240101000000000_3_9"]
    assert seqno_array("1", 0, 0, 0).to_pylist() == []


def test_constant_meta_columns_as_dictionaries_write_the_same_file(tmp_path):
    n = 5000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array([f"v{i % 7}" for i in range(n)])})
    keys = pa.array([str(i) for i in range(n)])
    storage, base = Storage.for_uri(str(tmp_path))
    digests, tables = [], []
    for dictionary in (False, True):
        stamped = stamp_meta_columns(data, keys, "p=1", "20240101000000000", "f-0_1-0-0_20240101000000000.parquet",
                                     partition_id=2, dictionary=dictionary)
        tables.append(stamped)
        name = f"f{int(dictionary)}.parquet"
        write_base_file(storage, base, "p=1", name, stamped, AVRO, HoodieConfig({}))
        digests.append(hashlib.sha256((tmp_path / "p=1" / name).read_bytes()).hexdigest())
    assert pa.types.is_dictionary(tables[1].schema.field("_hoodie_file_name").type)
    assert tables[1].nbytes < tables[0].nbytes
    assert digests[0] == digests[1]
    read = pq.read_table(tmp_path / "p=1" / "f1.parquet")
    assert read.schema.field("_hoodie_partition_path").type == pa.string()
    assert set(read.column("_hoodie_commit_time").to_pylist()) == {"20240101000000000"}
    assert read.column("_hoodie_commit_seqno").to_pylist()[:2] == ["20240101000000000_2_0", "20240101000000000_2_1"]
