"""The merge over a base file keeps the base rows in place and counts the base keys it
keeps; both must agree with the plain merge and with hashing every output key against the
base file's keys (what a compaction did before the merge counted them)."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_hoodie.table.record_merger import (
    DeleteSet,
    MergeConfig,
    MergeMode,
    merge_records,
    merge_records_counted,
)

CONFIGS = {
    "commit_time": MergeConfig(),
    "event_time": MergeConfig(mode=MergeMode.EVENT_TIME_ORDERING, ordering_field="ts"),
    "event_time_two_fields": MergeConfig(mode=MergeMode.EVENT_TIME_ORDERING, ordering_field="ts",
                                         more_ordering_fields=("v",)),
    "payload_precombine": MergeConfig(mode=MergeMode.COMMIT_TIME_ORDERING, ordering_field="ts",
                                      log_precombine=True),
}


def _rows(rng: random.Random, keys: list[int], deleted: float) -> pa.Table:
    return pa.table({
        "_hoodie_record_key": pa.array([f"k{k:03d}" for k in keys], pa.string()),
        "ts": pa.array([rng.choice([None, 1, 2, 3]) for _ in keys], pa.int64()),
        "v": pa.array([rng.randint(0, 3) for _ in keys], pa.int64()),
        "_hoodie_is_deleted": pa.array([rng.random() < deleted for _ in keys]),
    })


def _slice(rng: random.Random) -> list:
    pieces: list = [_rows(rng, rng.sample(range(60), rng.randint(1, 30)), 0.1)]
    for _ in range(rng.randint(0, 4)):
        if rng.random() < 0.3:
            keys = [f"k{k:03d}" for k in rng.sample(range(80), rng.randint(0, 10))]
            pieces.append(DeleteSet(pa.array(keys, pa.string()),
                                    pa.array([rng.choice([None, 0, 1, 2, 4]) for _ in keys], pa.int64())))
        else:
            pieces.append(_rows(rng, [rng.randint(0, 80) for _ in range(rng.randint(0, 15))], 0.15))
    return pieces


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_counted_merge_over_base_matches_plain_merge_and_key_hashing(name: str) -> None:
    config = CONFIGS[name]
    rng = random.Random(name)
    for _ in range(40):
        pieces = _slice(rng)
        result = merge_records_counted(pieces, config, has_base=True)
        assert result.table.equals(merge_records(pieces, config, has_base=True))
        if not config.log_precombine:
            # base rows first and base keys unique: the base file needs no special treatment
            assert result.table.equals(merge_records(pieces, config, has_base=False))
        base_keys = pieces[0].column("_hoodie_record_key").combine_chunks()
        in_base = pc.is_in(result.table.column("_hoodie_record_key"), value_set=base_keys) \
            if result.table.num_rows else pa.array([], pa.bool_())
        assert result.base_keys_kept == (pc.sum(in_base).as_py() or 0)
