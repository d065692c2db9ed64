"""The merge over a base file ranks the touched base rows from their key, delete and ordering
columns only: it must pick the same winners as the general merge, which ranks whole rows,
when the base file carries delete flags, a delete marker field and several ordering fields."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.table.record_merger import MergeConfig, MergeMode, merge_records_counted


def _rows(keys, ts, seq, vals, deleted, op) -> pa.Table:
    return pa.table({
        "_hoodie_record_key": keys,
        "ts": pa.array(ts, pa.int64()),
        "seq": pa.array(seq, pa.int64()),
        "val": vals,
        "_hoodie_is_deleted": pa.array(deleted, pa.bool_()),
        "op": op,
    })


@pytest.mark.parametrize("cfg", [
    MergeConfig(MergeMode.EVENT_TIME_ORDERING, "ts", delete_field="op", delete_marker="D",
                more_ordering_fields=("seq",)),
    MergeConfig(MergeMode.COMMIT_TIME_ORDERING, "ts", delete_field="op", delete_marker="D"),
])
def test_merge_over_base_picks_the_winners_of_the_general_merge(cfg: MergeConfig) -> None:
    keys = [f"k{i}" for i in range(8)]
    base = _rows(keys, [5, 5, 5, 5, 9, 9, 5, 5], [1] * 8, [f"b{i}" for i in range(8)],
                 [False, False, False, False, True, False, False, True], ["U"] * 5 + ["D", "D", "U"])
    log = _rows(["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k9"], [4, 5, 5, 6, 1, 1, 9, 1],
                [9, 0, 2, 1, 1, 1, 1, 1], ["l0", "l1", "l2", "l3", "l4", "l5", "l6", "l9"],
                [False, False, False, True, False, False, False, False], ["U", "U", "U", "U", "U", "U", "U", "D"])
    over_base = merge_records_counted([base, log], cfg, has_base=True).table
    general = merge_records_counted([base, log], cfg, has_base=False).table
    as_map = lambda t: dict(zip(t.column("_hoodie_record_key").to_pylist(), t.column("val").to_pylist()))  # noqa: E731
    assert as_map(over_base) == as_map(general)
    if cfg.mode is MergeMode.EVENT_TIME_ORDERING:
        # k0: older ts loses to the base; k1: tie on ts, lower seq loses; k2: seq breaks the tie for the log;
        # k3: a newer delete; k4/k5: a base delete (flag/marker) outranks an older log row; k6: a base
        # delete marker is outranked by a newer log row; k7: an untouched base delete flag; k9: a log delete marker
        assert as_map(over_base) == {"k0": "b0", "k1": "b1", "k2": "l2", "k6": "l6"}
