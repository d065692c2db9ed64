"""The keys a merge over a base file reports as new (a compaction hashes only those into the
base file's bloom filter) are exactly the output keys the base file lacks. The merge counts
its way to "none" when every log winner updates a base key; a miscount would leave a key
out of the new file's filter, and the index would then miss the record."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_hoodie.table.record_merger import DeleteSet, MergeConfig, MergeMode, merge_records_counted

CONFIGS = {
    "commit_time": MergeConfig(),
    "event_time": MergeConfig(mode=MergeMode.EVENT_TIME_ORDERING, ordering_field="ts"),
    "payload_precombine": MergeConfig(mode=MergeMode.COMMIT_TIME_ORDERING, ordering_field="ts",
                                      log_precombine=True),
}


def _rows(rng: random.Random, keys: list[int]) -> pa.Table:
    return pa.table({
        "_hoodie_record_key": pa.array([f"k{k:03d}" for k in keys], pa.string()),
        "ts": pa.array([rng.choice([None, 1, 2, 3]) for _ in keys], pa.int64()),
        "_hoodie_is_deleted": pa.array([rng.random() < 0.1 for _ in keys]),
    })


def _slice(rng: random.Random, inserts: bool) -> list:
    base = rng.sample(range(60), rng.randint(1, 30))
    pool = range(80) if inserts else base
    pieces: list = [_rows(rng, base)]
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.3:
            keys = [f"k{k:03d}" for k in rng.sample(pool, min(len(pool), rng.randint(0, 10)))]
            pieces.append(DeleteSet(pa.array(keys, pa.string()),
                                    pa.array([rng.choice([None, 0, 2, 4]) for _ in keys], pa.int64())))
        else:
            pieces.append(_rows(rng, [rng.choice(pool) for _ in range(rng.randint(0, 15))]))
    return pieces


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("inserts", [False, True], ids=["updates_only", "with_inserts"])
def test_new_keys_are_the_output_keys_the_base_file_lacks(name: str, inserts: bool) -> None:
    rng = random.Random(f"{name}-{inserts}")
    for _ in range(40):
        pieces = _slice(rng, inserts)
        result = merge_records_counted(pieces, CONFIGS[name], has_base=True)
        out = result.table.column("_hoodie_record_key") if result.table.num_rows else pa.array([], pa.string())
        base_keys = pieces[0].column("_hoodie_record_key")
        expected = out.filter(pc.invert(pc.is_in(out, value_set=base_keys))) if len(out) else out
        assert result.new_keys is not None
        assert sorted(result.new_keys.to_pylist()) == sorted(expected.to_pylist())
        if not inserts:
            assert len(result.new_keys) == 0
