"""Attack: record keys as Hudi's key generators build them and its indexes find them. An upsert
or a delete finds the stored copy of a record only if the key (and, for a non-global index, the
partition path) we derive equals the stored one, and only if the index's pruning keeps the file
that holds it: a miss writes the record a second time, without a word.

Composite keys whose values hold Hudi's own separators (``,`` and ``:``), its placeholders
(``__null__``, ``__empty__``), empty strings, nulls and non-BMP characters, in partitions that
need url-encoding or the default partition, must be found by every index, across a partition
move (global indexes) and a compaction. Record-key ranges (the ``hoodie_min/max_record_key``
footer and the BLOOM index's range check) must follow Hudi's order, Java's ``String.compareTo``
(UTF-16 code units: a non-BMP character sorts below U+E000..U+FFFF), as
``HoodieBloomFilterWriteSupport.addKey`` and ``BloomIndexFileInfo.isKeyInRange`` do."""

from __future__ import annotations

import datetime
import glob
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import assert_metadata_describes_storage
from tests.table.normalize import hudi_rs_rows

A = ["x,b:1", "x", "", None, "é\U0001F600", ":", "__null__", "a:b,c", "k"]
B = ["2x", "1,b:2", "v", "w", None, "", "z", "", "__empty__"]
P = ["p/1", "p%2", None, "", "é", "=", "a", "b", "c"]
Q = [1, 2, None, 3, -1, 0, 5, 6, 7]


def _batch(ts: int, v: str, rows: list[int], moved: bool = False) -> pa.Table:
    return pa.table({"a": pa.array([A[i] for i in rows], pa.string()), "b": pa.array([B[i] for i in rows], pa.string()),
                     "p": pa.array([P[(i + 1) % len(P)] if moved else P[i] for i in rows], pa.string()),
                     "q": pa.array([Q[i] for i in rows], pa.int32()), "ts": [ts] * len(rows), "v": [v] * len(rows)})


def _rows(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((r["a"] or "", r["b"] or "", r["v"]) for r in records)


@pytest.mark.parametrize("version,table_type,index", [(6, "COPY_ON_WRITE", "BLOOM"),
                                                      (9, "MERGE_ON_READ", "GLOBAL_BLOOM")])
def test_composite_keys_with_separators_are_found_by_upserts_and_deletes(tmp_path: Path, version: int,
                                                                         table_type: str, index: str) -> None:
    base = str(tmp_path / "t")
    cfg = {"hoodie.table.name": "t", "hoodie.table.type": table_type, "hoodie.datasource.write.recordkey.field": "a,b",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p,q",
           "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
           "hoodie.index.type": index, "hoodie.parquet.small.file.limit": "0",
           "hoodie.datasource.write.hive_style_partitioning": "true",
           "hoodie.datasource.write.partitionpath.urlencode": "true",
           "hoodie.metadata.index.column.stats.enable": "true", "hoodie.bloom.index.update.partition.path": "true",
           "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
    if version != 6:
        cfg["hoodie.write.table.version"] = str(version)
    model: dict[tuple[Any, Any], dict[str, Any]] = {}
    moves = index.startswith("GLOBAL")

    def step(batch: pa.Table, operation: str, name: str) -> None:
        write_arrow(base, batch, operation, cfg)
        for r in batch.to_pylist():
            if operation == "delete":
                model.pop((r["a"], r["b"]), None)
            else:
                model[(r["a"], r["b"])] = r
        assert _rows(read_table(base).to_pylist()) == _rows(list(model.values())), name
        assert _rows(hudi_rs_rows(base)) == _rows(list(model.values())), name
        assert_metadata_describes_storage(base, name)

    every = list(range(len(A)))
    step(_batch(1, "v1", every), "upsert", "insert")
    step(_batch(2, "v2", every[::2]), "upsert", "update")
    step(_batch(3, "v3", every[1::2], moved=moves), "upsert", "update (moving partitions)" if moves else "update")
    step(_batch(4, "x", every[1::3], moved=moves), "delete", "delete")
    if table_type == "MERGE_ON_READ":
        c.schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True)
        c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(cfg))
        assert _rows(read_table(base).to_pylist()) == _rows(list(model.values())), "compaction"
    stored = read_table(base, columns=["_hoodie_record_key"]).column(0).to_pylist()
    assert len(stored) == len(set(stored)) == len(model)


#: UTF-8 bytes order them a < U+FF21 < U+1F600; Java's UTF-16 order a < U+1F600 (D83D DE00) < U+FF21
KEYS = ["a", "\U0001F600", "\uFF21"]
JAVA_ORDER = sorted(KEYS, key=lambda k: k.encode("utf-16-be"))


def _bloom_config() -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.index.type": "BLOOM", "hoodie.metadata.enable": "false", "hoodie.parquet.small.file.limit": "0"}


def _keys_table(keys: list[str], ts: int, v: str) -> pa.Table:
    return pa.table({"id": keys, "p": ["p0"] * len(keys), "ts": [ts] * len(keys), "v": [v] * len(keys)})


def test_the_footer_key_range_is_the_one_hudi_writes(tmp_path: Path) -> None:
    """A Hudi Java writer's BLOOM index checks each key against this range with
    ``String.compareTo``: a range in another order hides U+FF21 from it, and it inserts the key again."""
    base = str(tmp_path / "t")
    write_arrow(base, _keys_table(KEYS, 1, "old"), "upsert", _bloom_config())
    (path,) = glob.glob(f"{base}/p0/*.parquet")
    footer = pq.read_metadata(path).metadata
    assert (footer[b"hoodie_min_record_key"].decode(), footer[b"hoodie_max_record_key"].decode()) == \
        (JAVA_ORDER[0], JAVA_ORDER[-1])


def test_a_bloom_upsert_finds_a_key_in_a_file_hudi_ranged(tmp_path: Path) -> None:
    """The base file's footer range set as Hudi's Avro write support records it (Java order);
    an update of the non-BMP key must replace it, not add a second copy."""
    base = str(tmp_path / "t")
    cfg = _bloom_config()
    write_arrow(base, _keys_table(KEYS, 1, "old"), "upsert", cfg)
    (path,) = glob.glob(f"{base}/p0/*.parquet")
    data = pq.ParquetFile(path)
    footer = dict(data.metadata.metadata)
    footer[b"hoodie_min_record_key"], footer[b"hoodie_max_record_key"] = (JAVA_ORDER[0].encode(),
                                                                          JAVA_ORDER[-1].encode())
    pq.write_table(data.read().replace_schema_metadata(footer), path)
    write_arrow(base, _keys_table(["\U0001F600"], 2, "new"), "upsert", cfg)
    assert sorted((r["id"], r["v"]) for r in read_table(base).to_pylist()) == \
        sorted([("a", "old"), ("\U0001F600", "new"), ("\uFF21", "old")])


def _timestamp_batch(unit: str, v: str) -> pa.Table:
    at = datetime.datetime(2024, 1, 1, 12, 0, 0, 123000, tzinfo=datetime.timezone.utc)
    return pa.table({"id": ["a"], "k": pa.array([at], pa.timestamp(unit, tz="UTC")), "p": ["p0"], "ts": [1], "v": [v]})


@pytest.mark.parametrize("field", ["recordkey", "partitionpath"])
def test_a_millisecond_timestamp_key_is_the_key_of_the_stored_micros(tmp_path: Path, field: str) -> None:
    """The same record written as timestamp[ms] and then as timestamp[us] (what Spark and Hudi
    always write) has one key and one partition path: the one Hudi derives from the stored
    timestamp-micros value."""
    base = str(tmp_path / "t")
    cfg = {"hoodie.table.name": "t", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.datasource.write.recordkey.field": "k" if field == "recordkey" else "id",
           "hoodie.datasource.write.partitionpath.field": "p" if field == "recordkey" else "k"}
    write_arrow(base, _timestamp_batch("ms", "first"), "upsert", cfg)
    stored = read_table(base)
    assert stored.schema.field("k").type == pa.timestamp("us", tz="UTC")
    micros = str(stored.column("k").cast(pa.int64())[0].as_py())
    column = "_hoodie_record_key" if field == "recordkey" else "_hoodie_partition_path"
    assert stored.column(column).to_pylist() == [micros]
    write_arrow(base, _timestamp_batch("us", "second"), "upsert", cfg)
    assert [(r[column], r["v"]) for r in read_table(base).to_pylist()] == [(micros, "second")]


def test_a_timestamp_based_partition_of_a_millisecond_column_is_its_date(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "k",
           "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
           "hoodie.keygen.timebased.timestamp.type": "EPOCHMICROSECONDS",
           "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd", "hoodie.keygen.timebased.output.timezone": "UTC"}
    write_arrow(base, _timestamp_batch("ms", "first"), "upsert", cfg)
    assert read_table(base).column("_hoodie_partition_path").to_pylist() == ["2024-01-01"]
