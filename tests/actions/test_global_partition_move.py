"""A global index that moves records between partitions merges a moving record with the
stored one first, as Hudi does (HoodieIndexUtils.mergeForPartitionUpdatesIfNeeded). Under
event-time ordering a late record with an older ordering value must not replace a newer
stored record, nor take it to another partition: the stored record stays where it is."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.read import read_table

BASE_CONF = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
             "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
             "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
             "hoodie.simple.index.update.partition.path": "true", "hoodie.bloom.index.update.partition.path": "true",
             "hoodie.time.generator.max_expected_clock_skew_ms": "0"}


def _batch(ids: list[str], ts: list[int], parts: list[str], tag: str) -> pa.Table:
    return pa.table({"id": ids, "ts": pa.array(ts, pa.int64()), "p": parts, "v": [f"{tag}{i}" for i in ids]})


def _rows(base: str) -> list[tuple[str, int, str, str]]:
    t = read_table(base)
    return sorted(zip(t.column("id").to_pylist(), t.column("ts").to_pylist(), t.column("p").to_pylist(),
                      t.column("_hoodie_partition_path").to_pylist(), t.column("v").to_pylist()))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("index,version", [("GLOBAL_SIMPLE", "6"), ("GLOBAL_BLOOM", "6"), ("GLOBAL_SIMPLE", "9")])
def test_only_a_record_that_beats_the_stored_one_moves(tmp_path, table_type: str, index: str, version: str) -> None:
    conf = {**BASE_CONF, "hoodie.table.type": table_type, "hoodie.index.type": index}
    if version == "9":  # Hudi 1.x: event-time ordering is a merge mode, not a payload
        conf = {k: v for k, v in conf.items() if "payload" not in k}
        conf.update({"hoodie.write.table.version": "9", "hoodie.record.merge.mode": "EVENT_TIME_ORDERING"})
    base = str(tmp_path / "t")
    write_arrow(base, _batch(["k1", "k2", "k3", "k4"], [5, 5, 5, 5], ["b", "b", "b", "b"], "v0"), "insert", conf)
    # k1 older: stays in b as it was; k2 tie: moves (the incoming record wins a tie); k3 newer:
    # moves; k4 older but not moving: loses in place
    r = write_arrow(base, _batch(["k1", "k2", "k3", "k4"], [4, 5, 6, 3], ["a", "a", "a", "b"], "v1"), "upsert", conf)
    assert _rows(base) == [("k1", 5, "b", "b", "v0k1"), ("k2", 5, "a", "a", "v1k2"), ("k3", 6, "a", "a", "v1k3"),
                           ("k4", 5, "b", "b", "v0k4")]
    assert r.inserts == 2  # the two moved records are new in partition a


def test_the_stored_value_a_log_holds_decides(tmp_path) -> None:
    """On MERGE_ON_READ the stored record is the slice's merged one: an update in a log file
    (ts 7 over the base file's 5) beats a moving record with ts 6."""
    conf = {**BASE_CONF, "hoodie.table.type": "MERGE_ON_READ", "hoodie.index.type": "GLOBAL_SIMPLE"}
    base = str(tmp_path / "t")
    write_arrow(base, _batch(["k1", "k2"], [5, 5], ["b", "b"], "v0"), "insert", conf)
    write_arrow(base, _batch(["k1"], [7], ["b"], "v1"), "upsert", conf)
    write_arrow(base, _batch(["k1", "k2"], [6, 6], ["a", "a"], "v2"), "upsert", conf)
    assert _rows(base) == [("k1", 7, "b", "b", "v1k1"), ("k2", 6, "a", "a", "v2k2")]


def test_when_the_latest_write_wins_it_moves_whatever_its_ordering_value(tmp_path) -> None:
    conf = {**{k: v for k, v in BASE_CONF.items() if "payload" not in k}, "hoodie.index.type": "GLOBAL_SIMPLE"}
    base = str(tmp_path / "t")
    write_arrow(base, _batch(["k1"], [5], ["b"], "v0"), "insert", conf)
    write_arrow(base, _batch(["k1"], [4], ["a"], "v1"), "upsert", conf)
    assert _rows(base) == [("k1", 4, "a", "a", "v1k1")]


def test_a_moving_delete_still_deletes_the_stored_record(tmp_path) -> None:
    conf = {**BASE_CONF, "hoodie.index.type": "GLOBAL_SIMPLE"}
    base = str(tmp_path / "t")
    write_arrow(base, _batch(["k1", "k2"], [5, 5], ["b", "b"], "v0"), "insert", conf)
    deletes = _batch(["k1"], [1], ["a"], "x").append_column("_hoodie_is_deleted", pa.array([True]))
    write_arrow(base, deletes, "upsert", conf)
    assert [r[0] for r in _rows(base)] == ["k2"]


def test_the_record_index_looks_up_the_stored_record_the_same_way(tmp_path) -> None:
    conf = {**BASE_CONF, "hoodie.index.type": "RECORD_INDEX", "hoodie.metadata.record.index.enable": "true",
            "hoodie.record.index.update.partition.path": "true"}
    base = str(tmp_path / "t")
    write_arrow(base, _batch(["k1", "k2"], [5, 5], ["b", "b"], "v0"), "insert", conf)
    write_arrow(base, _batch(["k1", "k2"], [4, 6], ["a", "a"], "v1"), "upsert", conf)
    assert _rows(base) == [("k1", 5, "b", "b", "v0k1"), ("k2", 6, "a", "a", "v1k2")]
