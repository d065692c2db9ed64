"""The base-file writer's memory-saving forms must not change a byte of the file."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.file_group.base_file_writer import seqno_array, stamp_meta_columns, write_base_file
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.settings.base_file import BaseFileSettings

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
        write_base_file(storage, base, "p=1", name, stamped, AVRO, BaseFileSettings.from_config(HoodieConfig({})))
        digests.append(hashlib.sha256((tmp_path / "p=1" / name).read_bytes()).hexdigest())
    assert pa.types.is_dictionary(tables[1].schema.field("_hoodie_file_name").type)
    assert tables[1].nbytes < tables[0].nbytes
    assert digests[0] == digests[1]
    read = pq.read_table(tmp_path / "p=1" / "f1.parquet")
    assert read.schema.field("_hoodie_partition_path").type == pa.string()
    assert set(read.column("_hoodie_commit_time").to_pylist()) == {"20240101000000000"}
    assert read.column("_hoodie_commit_seqno").to_pylist()[:2] == ["20240101000000000_2_0", "20240101000000000_2_1"]


def _dict(indices: list[int], values: list[str], mask=None) -> pa.ChunkedArray:
    return pa.chunked_array([pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32(), mask=mask), pa.array(values))])


def test_dictionary_as_written_keeps_used_values_in_first_use_order():
    import numpy as np

    from airflow_hoodie.table.file_group.base_file_writer import dictionary_as_written

    out = dictionary_as_written(_dict([2, 0, 2], ["a", "b", "c"]))  # "b" unused, "c" first
    assert out.dictionary.to_pylist() == ["c", "a"] and out.to_pylist() == ["c", "a", "c"]
    out = dictionary_as_written(_dict([2, 0, 1], ["a", "b", "c"], mask=np.array([False, True, False])))
    assert out.dictionary.to_pylist() == ["c", "b"] and out.to_pylist() == ["c", None, "b"]
    same = _dict([0, 1, 0], ["a", "b"])
    assert dictionary_as_written(same).equals(same.chunk(0))


def test_cow_merge_writes_the_file_its_rows_as_strings_make(tmp_path):
    """A merge reads the old file's one-value meta columns as dictionaries. Every row of the
    second commit is replaced, which leaves its commit time unused in the dictionary read
    back: the new file must still be the file its rows, as plain strings, make."""
    import json

    from airflow_hoodie.actions.write import write_arrow

    def rows(ids: list[int], ts: int) -> pa.Table:
        return pa.table({"id": pa.array(ids, pa.int64()), "ts": pa.array([ts] * len(ids), pa.int64()),
                         "p": pa.array(["a" if i % 2 else "b" for i in ids])})

    cfg = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.datasource.write.partitionpath.field": "p", "hoodie.metadata.enable": "false"}
    base = str(tmp_path / "t")
    write_arrow(base, rows(list(range(40)), 1), "bulk_insert", cfg, table_name="t")
    write_arrow(base, rows([1, 3, 5], 2), "upsert", cfg, table_name="t")
    write_arrow(base, rows([1, 3, 5, 7, 41], 3), "upsert", cfg, table_name="t")  # all of commit 2 replaced
    files = sorted((tmp_path / "t" / "a").glob("*.parquet"), key=lambda f: f.stem.rsplit("_", 1)[1])
    path = files[-1]
    written = pq.read_table(path)
    commit_times = set(written.column("_hoodie_commit_time").to_pylist())
    assert len(commit_times) == 2 and path.stem.rsplit("_", 1)[1] in commit_times  # the second commit's is gone
    assert sorted(written.column("id").to_pylist()) == list(range(1, 40, 2)) + [41]
    meta = pq.read_schema(path).metadata
    avro = json.loads(meta[b"parquet.avro.schema"])
    avro["fields"] = [f for f in avro["fields"] if not f["name"].startswith("_hoodie_")]
    storage, root = Storage.for_uri(str(tmp_path))
    write_base_file(storage, root, "again", path.name, written, avro, BaseFileSettings.from_config(HoodieConfig(cfg)))
    assert hashlib.sha256((tmp_path / "again" / path.name).read_bytes()).hexdigest() == \
        hashlib.sha256(path.read_bytes()).hexdigest()


def test_gzip_pages_at_zlibs_default_level_as_parquet_java(tmp_path):
    """parquet-java deflates through Hadoop's GzipCodec at zlib's default level (6); Arrow's
    gzip default is 9, seven times the CPU. zlib's gzip header tells them apart (XFL: 2 for
    level 9, 4 for level 1, 0 between)."""
    import zlib

    n = 20000
    data = pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array([f"v{i * 7919 % 10007}" for i in range(n)])})
    stamped = stamp_meta_columns(data, pa.array([str(i) for i in range(n)]), "p=1", "20240101000000000",
                                 "f-0_1-0-0_20240101000000000.parquet", dictionary=True)
    storage, base = Storage.for_uri(str(tmp_path))
    write_base_file(storage, base, "p=1", "f.parquet", stamped, AVRO, BaseFileSettings.from_config(HoodieConfig({})))
    raw = (tmp_path / "p=1" / "f.parquet").read_bytes()
    assert pq.ParquetFile(tmp_path / "p=1" / "f.parquet").metadata.row_group(0).column(0).compression == "GZIP"
    at, pages = 0, []
    while (at := raw.find(b"\x1f\x8b\x08", at + 1)) > 0:
        pages.append(raw[at + 8])
    assert pages and set(pages) == {0}, pages
    # and a page deflated at level 6 is what zlib makes of its bytes at that level
    at = raw.find(b"\x1f\x8b\x08")
    d = zlib.decompressobj(31)
    page = d.decompress(raw[at:])
    member = raw[at:len(raw) - len(d.unused_data)]
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    assert member[10:-8] == c.compress(page) + c.flush()
