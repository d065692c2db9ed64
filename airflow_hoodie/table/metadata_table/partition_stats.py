"""The ``partition_stats`` partition (Hudi 1.x, table versions 8 and 9): per partition and column.

One record per (column, partition), keyed by :func:`index_keys.partition_stats_key`, of type
6, with the same HoodieMetadataColumnStats payload as column stats and the partition path as
its ``fileName``. Hudi's writer appends, for each commit, the range over the files that commit
wrote in the partition, marked a tight bound; the metadata table merges it with what it held
(extremes of the values, sums of the counts: the counts grow with every file version ever
written, and the range only widens). We append exactly that, so the merged records equal
Hudi's; a reader may prune on the range, never on the counts.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from airflow_hoodie.table.metadata_table.column_stats import ColumnRange, stats_payload
from airflow_hoodie.table.metadata_table.index_keys import partition_stats_key
from airflow_hoodie.table.metadata_table.metadata_record import partition_key

PARTITION_STATS_PARTITION = "partition_stats"
TYPE_PARTITION_STATS = 6


def partition_ranges(file_ranges: Iterable[tuple[str, Iterable[ColumnRange]]]) -> dict[str, dict[str, ColumnRange]]:
    """partition -> column -> the range over the given (partition, file ranges)."""
    out: dict[str, dict[str, ColumnRange]] = {}
    for partition, ranges in file_ranges:
        cols = out.setdefault(partition, {})
        for rng in ranges:
            if rng.value_type == "NULL":
                # a log file without data records adds nothing but its (zero) counts
                if rng.column in cols:
                    continue
            prev = cols.get(rng.column)
            if prev is None or prev.value_type == "NULL":
                cols[rng.column] = rng if prev is None else rng.merged(prev)
            else:
                cols[rng.column] = prev.merged(rng)
    return out


def partition_stats_records(ranges: Mapping[str, Mapping[str, ColumnRange]], index_version: str,
                            table_version: int,
                            key: Callable[[str, str], str] = partition_stats_key) -> dict[str, dict[str, Any]]:
    """HFile key -> HoodieMetadataRecord of each partition's column ranges (``key``: of a column
    and partition; an expression index keys its partition-level records its own way)."""
    records: dict[str, dict[str, Any]] = {}
    for partition, cols in ranges.items():
        for column, rng in cols.items():
            records[key(column, partition)] = {
                "key": "", "type": TYPE_PARTITION_STATS,
                "ColumnStatsMetadata": stats_payload(partition_key(partition), rng, index_version, table_version,
                                                     tight=True)}
    return records
