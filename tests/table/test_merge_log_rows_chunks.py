"""When every log row of a slice wins (updates and inserts, one version per key), the merge
over the base file keeps the log rows as they are instead of gathering them. They must still
come out as one chunk after the base rows, as a gather returns them: a parquet writer starts
pages at chunk boundaries, so a compaction that passed the log blocks' chunks through would
write different bytes for the same rows."""

from __future__ import annotations

import pyarrow as pa

from airflow_hoodie.table.record_merger import MergeConfig, MergeMode, merge_records_counted


def _rows(keys: list[int], ts: int) -> pa.Table:
    return pa.table({
        "_hoodie_record_key": pa.array([f"k{k:03d}" for k in keys], pa.string()),
        "ts": pa.array([ts] * len(keys), pa.int64()),
        "v": pa.array([k * ts for k in keys], pa.int64()),
    })


def test_every_log_row_winning_comes_out_in_one_chunk_after_the_base_rows() -> None:
    base = _rows(list(range(20)), 1)
    blocks = [_rows([1, 5, 30], 2), _rows([7, 31], 3), _rows([2, 9, 40, 41], 4)]
    for config in (MergeConfig(), MergeConfig(mode=MergeMode.EVENT_TIME_ORDERING, ordering_field="ts"),
                   MergeConfig(mode=MergeMode.COMMIT_TIME_ORDERING, ordering_field="ts", log_precombine=True)):
        result = merge_records_counted([base, *blocks], config, has_base=True)
        table = result.table
        untouched = [k for k in range(20) if k not in (1, 5, 7, 2, 9)]
        expected = pa.concat_tables([_rows(untouched, 1), *blocks])
        assert table.to_pylist() == expected.to_pylist()
        for column in table.columns:
            assert [len(chunk) for chunk in column.chunks] == [len(untouched), 9]
        assert result.base_keys_kept == 20
        assert sorted(result.new_keys.to_pylist()) == ["k030", "k031", "k040", "k041"]
