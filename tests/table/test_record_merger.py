"""Merge semantics of record versions, as Hudi's payloads and log scanner define them."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.record_merger import (
    DeleteSet,
    MergeConfig,
    MergeMode,
    merge_records,
)

EVENT = MergeConfig(MergeMode.EVENT_TIME_ORDERING, "ts")
LATEST = MergeConfig(MergeMode.COMMIT_TIME_ORDERING, "ts")


def rows(keys, ts, vals, commit="c1", deleted=None):
    cols = {
        "_hoodie_commit_time": [commit] * len(keys),
        "_hoodie_record_key": keys,
        "ts": pa.array(ts, pa.int64()),
        "val": vals,
    }
    if deleted is not None:
        cols["_hoodie_is_deleted"] = pa.array(deleted, pa.bool_())
    return pa.table(cols)


def as_map(table: pa.Table) -> dict[str, str]:
    return dict(zip(table.column("_hoodie_record_key").to_pylist(), table.column("val").to_pylist()))


@dataclass
class Del:
    record_key: str
    ordering_value: object = None
    partition_path: str = ""


def test_config_from_properties_payload_classes():
    assert MergeConfig.from_properties({}).mode is MergeMode.COMMIT_TIME_ORDERING
    cfg = MergeConfig.from_properties(
        {
            "hoodie.table.precombine.field": "ts",
            "hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
        }
    )
    assert cfg == MergeConfig(MergeMode.EVENT_TIME_ORDERING, "ts")
    cfg = MergeConfig.from_properties(
        {
            "hoodie.table.precombine.field": "ts",
            "hoodie.compaction.payload.class": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
        }
    )
    assert cfg.mode is MergeMode.COMMIT_TIME_ORDERING and cfg.ordering_field == "ts"
    cfg = MergeConfig.from_properties(
        {"hoodie.table.payload.class": "org.apache.hudi.common.model.EventTimeAvroPayload"}
    )
    assert cfg.mode is MergeMode.EVENT_TIME_ORDERING and not cfg.uses_ordering
    cfg = MergeConfig.from_properties({"hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.precombine.field": "ts"})
    assert cfg.uses_ordering
    with pytest.raises(HoodieConfigError):
        MergeConfig.from_properties({"hoodie.record.merge.mode": "CUSTOM"})


def test_latest_wins_under_commit_time_ordering():
    base = rows(["a", "b"], [5, 5], ["a0", "b0"])
    log = rows(["a", "c"], [1, 1], ["a1", "c1"], commit="c2")
    out = merge_records([base, log], LATEST)
    assert as_map(out) == {"a": "a1", "b": "b0", "c": "c1"}
    # slice order: base rows first, then inserts
    assert out.column("_hoodie_record_key").to_pylist() == ["b", "a", "c"] or out.num_rows == 3


def test_greater_ordering_wins_equal_takes_later():
    base = rows(["a", "b", "c"], [5, 5, 5], ["a0", "b0", "c0"])
    log1 = rows(["a", "b", "c"], [4, 5, 6], ["a1", "b1", "c1"], commit="c2")
    out = merge_records([base, log1], EVENT)
    assert as_map(out) == {"a": "a0", "b": "b1", "c": "c1"}


def test_duplicates_within_one_block_take_last_on_tie():
    log = rows(["a", "a", "a"], [1, 3, 3], ["x", "y", "z"])
    assert as_map(merge_records([log], EVENT)) == {"a": "z"}
    assert as_map(merge_records([log], LATEST)) == {"a": "z"}


def test_null_ordering_is_oldest():
    base = rows(["a"], [None], ["a0"])
    log = rows(["a"], [0], ["a1"])
    assert as_map(merge_records([base, log], EVENT)) == {"a": "a1"}
    assert as_map(merge_records([log, base], EVENT)) == {"a": "a1"}


def test_delete_block_natural_order_removes_earlier_versions():
    base = rows(["a", "b"], [9, 9], ["a0", "b0"])
    deletes = DeleteSet.from_records([Del("a", 0), Del("b", None)])
    assert as_map(merge_records([base, deletes], EVENT)) == {}
    assert as_map(merge_records([base, deletes], LATEST)) == {}


def test_record_after_natural_delete_is_reinserted():
    base = rows(["a"], [9], ["a0"])
    deletes = DeleteSet.from_records([Del("a", 0)])
    later = rows(["a"], [1], ["a2"], commit="c3")
    assert as_map(merge_records([base, deletes, later], EVENT)) == {"a": "a2"}
    assert as_map(merge_records([base, deletes, later], LATEST)) == {"a": "a2"}


def test_delete_with_lower_ordering_is_stale_under_event_time():
    base = rows(["a", "b", "c"], [5, 5, 5], ["a0", "b0", "c0"])
    deletes = DeleteSet.from_records([Del("a", 4), Del("b", 5), Del("c", 6)])
    assert as_map(merge_records([base, deletes], EVENT)) == {"a": "a0"}
    # commit-time ordering ignores ordering values: every delete wins
    assert as_map(merge_records([base, deletes], LATEST)) == {}


def test_is_deleted_rows_respect_ordering():
    base = rows(["a", "b"], [5, 5], ["a0", "b0"])
    log = rows(["a", "b"], [4, 6], ["a1", "b1"], deleted=[True, True])
    assert as_map(merge_records([base, log], EVENT)) == {"a": "a0"}
    assert as_map(merge_records([base, log], LATEST)) == {}


def test_delete_marker_field():
    cfg = MergeConfig(MergeMode.COMMIT_TIME_ORDERING, "ts", delete_field="op", delete_marker="D")
    base = rows(["a", "b"], [1, 1], ["a0", "b0"])
    log = rows(["a", "b"], [2, 2], ["a1", "b1"]).append_column("op", pa.array(["D", "U"]))
    assert as_map(merge_records([base, log], cfg)) == {"b": "b1"}


def test_schema_evolution_added_column_and_missing_ordering():
    base = rows(["a", "b"], [1, 1], ["a0", "b0"])
    log = rows(["b"], [2], ["b1"]).append_column("extra", pa.array([7], pa.int32()))
    out = merge_records([base, log], EVENT)
    assert as_map(out) == {"a": "a0", "b": "b1"}
    assert "extra" in out.column_names
    assert sorted(out.column("extra").to_pylist(), key=str) == [7, None] or sorted(
        out.column("extra").to_pylist(), key=lambda v: (v is None, v)
    ) == [7, None]


def test_empty_inputs():
    assert merge_records([], EVENT).num_rows == 0
    base = rows([], [], [])
    assert merge_records([base, DeleteSet.from_records([])], EVENT).num_rows == 0
    assert merge_records([base, DeleteSet.from_records([Del("z")])], EVENT).num_rows == 0


def test_string_ordering_field():
    cfg = MergeConfig(MergeMode.EVENT_TIME_ORDERING, "ts")
    base = pa.table({"_hoodie_record_key": ["a"], "ts": ["2024-02"], "val": ["a0"]})
    log = pa.table({"_hoodie_record_key": ["a"], "ts": ["2024-01"], "val": ["a1"]})
    assert as_map(merge_records([base, log], cfg)) == {"a": "a0"}
    dels = DeleteSet.from_records([Del("a", "2024-03")])
    assert as_map(merge_records([base, log, dels], cfg)) == {}


def test_large_merge_is_vectorized():
    n = 200_000
    base = pa.table({"_hoodie_record_key": pa.array([f"k{i}" for i in range(n)]), "ts": pa.array(range(n), pa.int64()), "val": pa.array(range(n))})
    log = base.slice(0, n // 2)
    out = merge_records([base, log, DeleteSet(pa.array([f"k{i}" for i in range(10)]), None)], EVENT)
    assert out.num_rows == n - 10


def test_zero_ordering_delete_array_is_natural_and_ranks_lowest():
    base = rows(["a", "b"], [9, 9], ["a0", "b0"])
    deletes = DeleteSet(pa.array(["a", "b"]), pa.array([0, 0], pa.int64()))
    later = rows(["b"], [-5], ["b2"])
    assert as_map(merge_records([base, deletes, later], EVENT)) == {"b": "b2"}


V6_LATEST = MergeConfig.from_properties(
    {
        "hoodie.table.precombine.field": "ts",
        "hoodie.compaction.payload.class": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
    }
)


def test_v6_overwrite_payload_precombines_logs_then_overwrites_base():
    """Hudi 0.x: log records pre-combined by ordering value, the result overwrites the base row."""
    assert V6_LATEST.log_precombine and V6_LATEST.mode is MergeMode.COMMIT_TIME_ORDERING
    base = rows(["a", "b", "c"], [100, 100, 100], ["a0", "b0", "c0"])
    log1 = rows(["a", "b"], [5, 1], ["a1", "b1"], commit="c2")
    log2 = rows(["a", "b"], [3, 2], ["a2", "b2"], commit="c3")
    out = merge_records([base, log1, log2], V6_LATEST, has_base=True)
    # a: log1 (5) beats log2 (3) among logs, then overwrites the base despite 100 > 5
    assert as_map(out) == {"a": "a1", "b": "b2", "c": "c0"}
    # a log-only slice (no base file) is pre-combined the same way
    assert as_map(merge_records([log1, log2], V6_LATEST)) == {"a": "a1", "b": "b2"}
    # an explicit COMMIT_TIME_ORDERING merge mode is plain latest-wins
    explicit = MergeConfig.from_properties(
        {"hoodie.table.precombine.field": "ts", "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}
    )
    assert not explicit.log_precombine
    assert as_map(merge_records([base, log1, log2], explicit, has_base=True)) == {"a": "a2", "b": "b2", "c": "c0"}


def test_v6_overwrite_payload_log_delete_beats_base():
    base = rows(["a", "b"], [100, 100], ["a0", "b0"])
    log1 = rows(["a"], [5], ["a1"], commit="c2")
    stale = DeleteSet.from_records([Del("a", 4), Del("b", 1)])
    out = merge_records([base, log1, stale], V6_LATEST, has_base=True)
    # a: the delete (4) is older than log1 (5) in the log: stale; b: the delete overwrites the base
    assert as_map(out) == {"a": "a1"}


def test_a_block_without_the_record_key_is_corrupt_data_not_a_key_error():
    """A log block decoded with a damaged SCHEMA header lacks _hoodie_record_key while the
    base file has it: a clear HoodieCorruptedDataError, not a raw KeyError."""
    from airflow_hoodie.errors import HoodieCorruptedDataError

    base = pa.table({"_hoodie_record_key": ["k1"], "v": [1]})
    damaged = pa.table({"_hoodie_record_kez": ["k1"], "v": [2]})
    with pytest.raises(HoodieCorruptedDataError, match="SCHEMA header is corrupt"):
        merge_records([base, damaged], MergeConfig(), has_base=True)


def test_virtual_keys_merge_by_the_key_generator():
    """A MOR table written with hoodie.populate.meta.fields=false has no keys in its files:
    base and log records are matched by the keys the table's key generator computes."""
    props = {"hoodie.populate.meta.fields": "false", "hoodie.table.recordkey.fields": "id",
             "hoodie.table.precombine.field": "ts",
             "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
             "hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}
    cfg = MergeConfig.from_properties(props)
    assert cfg.virtual_key_props is not None
    nulls = lambda n: pa.nulls(n, pa.string())  # noqa: E731
    base = pa.table({"_hoodie_record_key": nulls(3), "id": ["a", "b", "c"], "ts": [1, 1, 1], "v": [1, 2, 3]})
    log = pa.table({"_hoodie_record_key": nulls(2), "id": ["b", "d"], "ts": [2, 2], "v": [20, 40]})
    merged = merge_records([base, log], cfg, has_base=True)
    assert sorted(zip(merged.column("id").to_pylist(), merged.column("v").to_pylist())) == [
        ("a", 1), ("b", 20), ("c", 3), ("d", 40)]
