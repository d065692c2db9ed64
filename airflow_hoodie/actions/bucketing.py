"""Bucketing of a write, Hudi's UpsertPartitioner: which file group each record goes to.

Updates go to the group that holds them; inserts first fill small files, then new groups
sized from the table's average record size. Which files count as small depends on the
table type and on whether the index sees records that live only in log files (Hudi 0.14's
UpsertPartitioner.getSmallFiles for COPY_ON_WRITE, SparkUpsertDeltaCommitPartitioner.
getSmallFileCandidates for MERGE_ON_READ); see :func:`small_files`.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

from airflow_hoodie.actions.file_group_write import FileGroupTask
from airflow_hoodie.errors import (
    HoodieError,
    HoodieWriteConflictError,
)
from airflow_hoodie.settings.file_sizing import SizingSettings
from airflow_hoodie.table.file_group.file_naming import (
    new_file_id,
)
from airflow_hoodie.table.file_group.file_system_view import ExistingFile
from airflow_hoodie.table.hoodie_table import HoodieTable


def existing_files(table: HoodieTable, partitions: Iterable[str] | None = None) -> list[ExistingFile]:
    """Latest committed file slices the index and bucketing work on (the table's planning view)."""
    return table.planning_view().existing_files(partitions)


def average_record_size(table: HoodieTable, sizing: SizingSettings) -> int:
    """Hudi's UpsertPartitioner.averageBytesPerRecord: the newest completed ``commit`` that
    wrote more than the threshold, else the estimate. Only ``commit`` instants count (Hudi
    0.14): a clustering's replacecommit writes denser files, and a MOR table's delta
    commits are mostly log blocks, so both would misjudge how many records fit a file."""
    estimate = sizing.record_size_estimate
    threshold = sizing.record_size_threshold_bytes
    tl = table.timeline
    for inst in reversed(tl.completed_commits().instants):
        if inst.action != "commit":
            continue
        try:
            meta = tl.commit_metadata(inst)
        except HoodieError:
            continue
        total_bytes = sum(int(st.total_write_bytes or 0) for st in meta.write_stats)
        total_recs = sum(int(st.num_writes or 0) for st in meta.write_stats)
        if total_bytes > threshold and total_recs > 0:
            return int(math.ceil(total_bytes / total_recs))
    return estimate


def can_index_log_files(index_type: str) -> bool:
    """Hudi's HoodieIndex.canIndexLogFiles: of the indexes we run, only the in-memory hash
    index knows records that live only in log files; SIMPLE and BLOOM read base files, so
    an insert appended to a log would be invisible to their next lookup."""
    return index_type.upper() == "IN_MEMORY"


def _in_pending_compaction(f: ExistingFile) -> bool:
    # the view looks keys up in the merged slice exactly when a pending compaction opened
    # a new (still empty) latest slice; otherwise both are the same slice
    if f.lookup_log_files is None:
        return False
    return f.lookup_base_file != f.base_file or list(f.lookup_log_files) != list(f.log_files)


def small_files(part: str, files: Sequence[ExistingFile], sizing: SizingSettings, is_mor: bool,
                log_indexable: bool) -> list[tuple[ExistingFile, int]]:
    """The small files of partition ``part`` that inserts may fill, with the size Hudi
    counts for each, in the order they are filled.

    - COPY_ON_WRITE: latest base files under ``hoodie.parquet.small.file.limit``, smallest
      first (UpsertPartitioner.getSmallFiles).
    - MERGE_ON_READ, index blind to log files (SIMPLE, BLOOM): base-only slices (no log
      files: they cannot be padded without compacting them) not in a pending compaction,
      under the small-file limit, smallest first, at most
      ``hoodie.merge.small.file.group.candidates.limit`` of them. The inserts are merged into
      a new base file of the group (BaseSparkDeltaCommitActionExecutor.handleUpdate).
    - MERGE_ON_READ, index that sees log files (IN_MEMORY): every latest slice not in a
      pending compaction whose base plus log bytes (scaled by
      ``hoodie.logfile.to.parquet.compression.ratio``) stay under
      ``hoodie.parquet.max.file.size``, in view order; the inserts are appended to its log.

    Groups under a pending clustering plan are dropped last, after the limit, as
    UpsertPartitioner.filterSmallFilesInClustering does. An empty list when the small-file
    limit is 0 or less.
    """
    small_limit = sizing.small_file_limit
    if small_limit <= 0:
        return []
    here = [f for f in files if f.partition_path == part]
    if not is_mor:
        picked = sorted(((f, f.base_size) for f in here if f.base_file and f.base_size < small_limit),
                        key=lambda c: c[1])
    elif log_indexable:
        ratio = sizing.log_to_parquet_ratio
        max_size = sizing.max_file_size
        sized = [(f, f.base_size + int(f.log_size * ratio)) for f in here if not _in_pending_compaction(f)]
        picked = [(f, size) for f, size in sized if size < max_size]
    else:
        limit = sizing.small_file_group_candidates_limit
        base_only = [f for f in here if f.base_file and not f.log_files and not _in_pending_compaction(f)
                     and f.base_size < small_limit]
        picked = [(f, f.base_size) for f in sorted(base_only, key=lambda f: f.base_size)[:max(limit, 0)]]
    return [(f, size) for f, size in picked if not f.in_clustering]


def assign_buckets(
    update_counts: Mapping[tuple[str, str], int],
    insert_counts: Mapping[str, int],
    files: Sequence[ExistingFile],
    sizing: SizingSettings,
    index_type: str,
    avg_record_size: int,
    is_mor: bool,
    use_small_files: bool = True,
    updates_under_clustering: bool = False,
) -> tuple[list[FileGroupTask], dict[str, list[tuple[int, int]]]]:
    """Hudi's UpsertPartitioner: one bucket per updated group, inserts to small files, then new groups.

    Returns the tasks and, per partition, the insert buckets as ``(bucket, record count)``.
    """
    max_size = sizing.max_file_size
    log_indexable = can_index_log_files(index_type)
    by_key = {(f.partition_path, f.file_id): f for f in files}
    tasks: list[FileGroupTask] = []
    bucket_of: dict[tuple[str, str], int] = {}
    for (part, fid), n in sorted(update_counts.items()):
        f = by_key.get((part, fid))
        if f is not None and f.in_clustering and not updates_under_clustering:
            raise HoodieWriteConflictError(
                f"{n} record(s) update file group {fid} in partition {part!r}, which a pending clustering "
                "plan is rewriting (Hudi's reject-update strategy). Run or roll back the clustering first.")
        t = FileGroupTask(len(tasks), "UPDATE", part, fid, f.base_file if f else None,
                          f.base_instant if f else None, f.base_instant if f else "null",
                          list(f.log_files) if f else [], n)
        bucket_of[(part, fid)] = t.bucket
        tasks.append(t)
    inserts: dict[str, list[tuple[int, int]]] = {}
    per_bucket = (max(1, max_size // max(1, avg_record_size)) if sizing.insert_auto_split
                  else sizing.insert_split_size)
    for part, n in sorted(insert_counts.items()):
        remaining = n
        plan: list[tuple[int, int]] = []
        candidates = small_files(part, files, sizing, is_mor, log_indexable) if use_small_files else []
        for f, _ in candidates:
            # a MOR group whose log the index cannot see takes this write's records as a new
            # base file version, its updates too, whether or not inserts fit (Hudi checks the
            # group against all of the partition's small files)
            if (part, f.file_id) in bucket_of:
                tasks[bucket_of[(part, f.file_id)]].merge_base = is_mor and not log_indexable
        for f, size in candidates:
            if remaining <= 0:
                break
            take = int(min((max_size - size) // max(1, avg_record_size), remaining))
            if take <= 0:
                continue
            b = bucket_of.get((part, f.file_id))
            if b is None:
                t = FileGroupTask(len(tasks), "UPDATE", part, f.file_id, f.base_file, f.base_instant,
                                  f.base_instant, list(f.log_files), 0)
                tasks.append(t)
                t.merge_base = is_mor and not log_indexable
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


def assign_bucket_tasks(update_counts: Mapping[tuple[str, str], int], created: Sequence[tuple[str, str, int]],
                        files: Sequence[ExistingFile], child_groups: Mapping[tuple[str, str], str] | None = None,
                        new_groups_as_logs: bool = False) -> list[FileGroupTask]:
    """The tasks of a bucket-index write: one per existing bucket group it touches (as
    :func:`assign_buckets` makes them, so a group under pending clustering is refused the
    same way) and one new group per (partition, new file id, records) in ``created``. No
    small-file padding and no splits: a bucket's records all go to its one group.

    ``child_groups`` ((partition, file id) -> clustering instant): a consistent-hashing write
    with the duplicate update strategy writes the groups under that pending resize and its
    child groups; a child's records are appended to a log of the slice based at the clustering
    instant (the base file the clustering writes there comes first when it completes).
    ``new_groups_as_logs`` (NBCC): a new group is written as a log, never a base file, as
    Hudi's bucket partitioners do under NBCC (a base file of a group another writer may be
    creating at the same time would be lost to the file-slice order)."""
    children = dict(child_groups or {})
    to_children = {k: n for k, n in update_counts.items() if k in children}
    tasks, _ = assign_buckets({k: n for k, n in update_counts.items() if k not in children}, {}, files,
                              SizingSettings(), "BUCKET", 1, False, use_small_files=False,
                              updates_under_clustering=bool(children))
    for (part, file_id), n in sorted(to_children.items()):
        ts = children[(part, file_id)]
        tasks.append(FileGroupTask(len(tasks), "UPDATE", part, file_id, None, ts, ts, [], n))
    kind = "UPDATE" if new_groups_as_logs else "INSERT"
    for part, file_id, n in created:
        tasks.append(FileGroupTask(len(tasks), kind, part, file_id, expected_records=n, new_group=new_groups_as_logs))
    return tasks
