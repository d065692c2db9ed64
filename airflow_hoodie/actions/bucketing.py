"""Bucketing of a write, Hudi's UpsertPartitioner: which file group each record goes to.

Updates go to the group that holds them; inserts first fill small base files, then new
groups sized from the table's average record size.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from airflow_hoodie.actions.file_group_write import FileGroupTask
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import (
    HoodieError,
    HoodieWriteConflictError,
)
from airflow_hoodie.table.file_group.file_naming import (
    new_file_id,
)
from airflow_hoodie.table.file_group.file_system_view import ExistingFile
from airflow_hoodie.table.hoodie_table import HoodieTable


def existing_files(table: HoodieTable, partitions: Iterable[str] | None = None) -> list[ExistingFile]:
    """Latest committed file slices the index and bucketing work on (the table's view)."""
    return table.file_system_view().existing_files(partitions)


def average_record_size(table: HoodieTable, config: HoodieConfig) -> int:
    """Hudi's AverageRecordSizeUtils: newest commit that wrote enough bytes, else the estimate."""
    estimate = config.get_int("hoodie.copyonwrite.record.size.estimate")
    threshold = config.get_float("hoodie.record.size.estimation.threshold") * config.get_int(
        "hoodie.parquet.small.file.limit")
    tl = table.timeline
    for inst in reversed(tl.completed_commits().instants):
        try:
            meta = tl.commit_metadata(inst)
        except HoodieError:
            continue
        base_stats = [st for st in meta.write_stats if (st.path or "").endswith(".parquet")]
        total_bytes = sum(int(st.total_write_bytes or 0) for st in base_stats)
        total_recs = sum(int(st.num_writes or 0) for st in base_stats)
        if total_bytes > threshold and total_recs > 0:
            return int(math.ceil(total_bytes / total_recs))
    return estimate


def assign_buckets(
    update_counts: Mapping[tuple[str, str], int],
    insert_counts: Mapping[str, int],
    files: Sequence[ExistingFile],
    config: HoodieConfig,
    avg_record_size: int,
    is_mor: bool,
    use_small_files: bool = True,
) -> tuple[list[FileGroupTask], dict[str, list[tuple[int, int]]]]:
    """Hudi's UpsertPartitioner: one bucket per updated group, inserts to small files, then new groups.

    Returns the tasks and, per partition, the insert buckets as ``(bucket, record count)``.
    """
    small_limit = config.get_int("hoodie.parquet.small.file.limit")
    max_size = config.get_int("hoodie.parquet.max.file.size")
    by_key = {(f.partition_path, f.file_id): f for f in files}
    tasks: list[FileGroupTask] = []
    bucket_of: dict[tuple[str, str], int] = {}
    for (part, fid), n in sorted(update_counts.items()):
        f = by_key.get((part, fid))
        if f is not None and f.in_clustering:
            raise HoodieWriteConflictError(
                f"{n} record(s) update file group {fid} in partition {part!r}, which a pending clustering "
                "plan is rewriting (Hudi's reject-update strategy). Run or roll back the clustering first.")
        t = FileGroupTask(len(tasks), "UPDATE", part, fid, f.base_file if f else None,
                          f.base_instant if f else None, f.base_instant if f else "null",
                          list(f.log_files) if f else [], n)
        bucket_of[(part, fid)] = t.bucket
        tasks.append(t)
    inserts: dict[str, list[tuple[int, int]]] = {}
    per_bucket = (max(1, max_size // max(1, avg_record_size))
                  if config.get_bool("hoodie.copyonwrite.insert.auto.split")
                  else config.get_int("hoodie.copyonwrite.insert.split.size"))
    for part, n in sorted(insert_counts.items()):
        remaining = n
        plan: list[tuple[int, int]] = []
        if use_small_files and small_limit > 0 and not is_mor:
            smalls = sorted((f for f in files if f.partition_path == part and f.base_file
                             and not f.in_clustering and f.base_size < small_limit), key=lambda f: f.base_size)
            for f in smalls:
                if remaining <= 0:
                    break
                room = (max_size - f.base_size) // max(1, avg_record_size)
                take = int(min(room, remaining))
                if take <= 0:
                    continue
                b = bucket_of.get((part, f.file_id))
                if b is None:
                    t = FileGroupTask(len(tasks), "UPDATE", part, f.file_id, f.base_file, f.base_instant,
                                      f.base_instant, list(f.log_files), 0)
                    tasks.append(t)
                    b = bucket_of[(part, f.file_id)] = t.bucket
                tasks[b].expected_records += take
                plan.append((b, take))
                remaining -= take
        while remaining > 0:
            take = int(min(per_bucket, remaining))
            t = FileGroupTask(len(tasks), "INSERT", part, new_file_id(), expected_records=take)
            tasks.append(t)
            plan.append((t.bucket, take))
            remaining -= take
        inserts[part] = plan
    return tasks, inserts
