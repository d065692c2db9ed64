"""Why a compaction plan came out empty, in the rule's own words and numbers.

A young MERGE_ON_READ table often has no log file at all: Hudi's small-file rule routes
inserts *and updates* of a file group under ``hoodie.parquet.small.file.limit`` into a new
base file, so nothing is left to compact. Users waited on a compaction sensor for hours with
only "no file slice qualifies" to go on; this says which rule left each slice out.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from airflow_hoodie.config_keys.compaction import LOGFILE_SIZE_THRESHOLD
from airflow_hoodie.config_keys.write import (
    PARQUET_SMALL_FILE_LIMIT as SMALL_FILE_LIMIT,
)
from airflow_hoodie.settings.compaction import CompactionSettings
from airflow_hoodie.table.file_group.file_group import FileSlice
from airflow_hoodie.table.timeline.instant import Instant
from airflow_hoodie.table.timeline.timeline import Timeline


def nothing_to_compact_reason(slices: Sequence[FileSlice], excluded: Iterable[tuple[str, str]],
                              settings: CompactionSettings, timeline: Timeline, deltas: Sequence[Instant]) -> str:
    """``deltas``: the completed delta commits since the last compaction."""
    excluded = set(excluded)
    with_logs = [s for s in slices if s.log_files]
    in_services = [s for s in with_logs if (s.partition_path, s.file_id) in excluded]
    threshold = settings.logfile_size_threshold
    small_logs = [s for s in with_logs if (s.partition_path, s.file_id) not in excluded
                  and sum(lf.size or 0 for lf in s.log_files) < threshold]
    parts = [f"{len(slices)} latest file slices, {len(with_logs)} with log files"]
    if in_services:
        parts.append(f"{len(in_services)} of those in a pending compaction or clustering plan")
    if small_logs:
        parts.append(f"{len(small_logs)} with fewer log bytes than {LOGFILE_SIZE_THRESHOLD}={threshold}")
    if not with_logs and deltas:
        base_only = sum(1 for d in deltas if not _wrote_logs(timeline, d))
        parts.append(
            f"{base_only} of the {len(deltas)} delta commits since the last compaction wrote base files only: "
            f"file groups under {SMALL_FILE_LIMIT}={settings.parquet_small_file_limit} bytes take inserts and "
            "updates into a new base file (Hudi's small-file rule), so there is no log to compact; logs come "
            f"once file groups pass that size, or set {SMALL_FILE_LIMIT}=0")
    elif not deltas:
        parts.append("no delta commit since the last compaction")
    return "no file slice with log files qualifies for compaction: " + "; ".join(parts)


def _wrote_logs(timeline: Timeline, delta: Instant) -> bool:
    return any(".log." in (st.path or "") for st in timeline.commit_metadata(delta).write_stats)
