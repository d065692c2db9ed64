"""A COPY_ON_WRITE merge reads the old file's one-value meta columns (commit time, partition
path, file name) as dictionaries and writes them as dictionaries. The file must still be the
one its rows, as plain strings, make: that is what Hudi's writer (one dictionary per column
chunk, built from the chunk's own rows) and this writer before the dictionary form write.
Each case rewrites the merged file's rows, read back as strings, and compares the bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.settings.base_file import BaseFileSettings
from airflow_hoodie.table.file_group import base_file_writer
from airflow_hoodie.table.file_group.base_file_writer import write_base_file
from airflow_hoodie.table.storage.storage import Storage

CFG = {"hoodie.table.name": "t", "hoodie.table.type": "COPY_ON_WRITE",
       "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
       "hoodie.datasource.write.partitionpath.field": "p", "hoodie.metadata.enable": "false",
       "hoodie.parquet.compression.codec": "snappy"}


def _rows(ids: list[int], ts: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "ts": pa.array([ts] * len(ids), pa.int64()),
                     "p": pa.array(["a"] * len(ids)), "v": pa.array([f"v{ts}-{i}" for i in ids])})


def _latest_file(base: Path) -> Path:
    return max((base / "a").glob("*.parquet"), key=lambda f: f.stem.rsplit("_", 1)[1])


def _as_strings_digest(path: Path, tmp_path: Path) -> str:
    """sha256 of the file ``path``'s rows make when their meta columns are plain strings."""
    rows = pq.read_table(path)
    avro = json.loads(pq.read_schema(path).metadata[b"parquet.avro.schema"])
    avro["fields"] = [f for f in avro["fields"] if not f["name"].startswith("_hoodie_")]
    storage, root = Storage.for_uri(str(tmp_path))
    write_base_file(storage, root, "again", path.name, rows, avro, BaseFileSettings.from_config(HoodieConfig(CFG)))
    return hashlib.sha256((tmp_path / "again" / path.name).read_bytes()).hexdigest()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_delete_only_merge_writes_no_unused_commit_time(tmp_path: Path) -> None:
    base = tmp_path / "t"
    write_arrow(str(base), _rows(list(range(6)), 1), "insert", CFG)
    write_arrow(str(base), _rows([0, 1, 2], 2), "upsert", CFG)
    write_arrow(str(base), _rows([4], 3), "delete", CFG)  # no upsert: only kept rows are written
    path = _latest_file(base)
    kept = pq.read_table(path)
    assert sorted(kept.column("id").to_pylist()) == [0, 1, 2, 3, 5]
    assert path.stem.rsplit("_", 1)[1] not in set(kept.column("_hoodie_commit_time").to_pylist())
    assert _digest(path) == _as_strings_digest(path, tmp_path / "ref")


def test_a_merge_of_several_row_groups_writes_each_its_own_dictionary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 1 << 20 rows per row group in production; a file group of Hudi's default 120 MB holds more
    monkeypatch.setattr(base_file_writer, "ROW_GROUP_ROWS", 4)
    base = tmp_path / "t"
    write_arrow(str(base), _rows(list(range(6)), 1), "insert", CFG)
    write_arrow(str(base), _rows([0, 1, 2, 9], 2), "upsert", CFG)  # rows: 3 4 5 (t1) 0 1 2 9 (t2)
    path = _latest_file(base)
    assert pq.ParquetFile(path).metadata.num_row_groups == 2
    assert _digest(path) == _as_strings_digest(path, tmp_path / "ref")


def test_a_merge_of_an_old_file_of_several_row_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The old file's row groups come back as chunks with dictionaries of their own (here
    [t1], [t1, t2], [t2]); the merge joins them into one before writing one row group."""
    base = tmp_path / "t"
    monkeypatch.setattr(base_file_writer, "ROW_GROUP_ROWS", 4)
    write_arrow(str(base), _rows(list(range(6)), 1), "insert", CFG)
    write_arrow(str(base), _rows([0, 1, 2, 9, 10, 11], 2), "upsert", CFG)
    assert pq.ParquetFile(_latest_file(base)).metadata.num_row_groups == 3
    monkeypatch.setattr(base_file_writer, "ROW_GROUP_ROWS", 1 << 20)
    write_arrow(str(base), _rows([3, 12], 3), "upsert", CFG)  # t1 row replaced, one insert
    path = _latest_file(base)
    rows = pq.read_table(path)
    assert rows.column("id").to_pylist() == [4, 5, 0, 1, 2, 9, 10, 11, 3, 12]
    assert rows.column("_hoodie_commit_time").to_pylist() == (
        [rows.column("_hoodie_commit_time")[0].as_py()] * 2 + [rows.column("_hoodie_commit_time")[2].as_py()] * 6
        + [path.stem.rsplit("_", 1)[1]] * 2)
    assert _digest(path) == _as_strings_digest(path, tmp_path / "ref")


def test_a_merge_that_replaces_every_row_of_the_first_commit(tmp_path: Path) -> None:
    """The first value of the old dictionary goes unused and the first-use order changes:
    the dictionary the file gets starts with the second commit's time."""
    base = tmp_path / "t"
    write_arrow(str(base), _rows([0, 1], 1), "insert", CFG)
    write_arrow(str(base), _rows([2, 3], 2), "upsert", CFG)   # small file: same group
    write_arrow(str(base), _rows([0, 1, 4], 3), "upsert", CFG)  # every t1 row replaced
    path = _latest_file(base)
    rows = pq.read_table(path)
    assert rows.column("id").to_pylist() == [2, 3, 0, 1, 4]
    assert len(set(rows.column("_hoodie_commit_time").to_pylist())) == 2
    assert _digest(path) == _as_strings_digest(path, tmp_path / "ref")
