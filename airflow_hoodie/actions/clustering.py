"""Clustering: rewrite small file groups into larger, sorted ones (a replacecommit).

Planning follows Hudi's SparkSizeBasedClusteringPlanStrategy: per partition (newest
``.skip.partitions.from.latest`` partitions skipped), the latest file slices whose base
file is below ``.small.file.limit`` and whose file group is not in a pending compaction
or clustering, largest first, packed into groups of at most ``.max.bytes.per.group``,
each with ``ceil(size / .target.file.max.bytes)`` output file groups, at most
``.max.num.groups`` groups in all. ``T.replacecommit.requested`` holds the Avro
``HoodieRequestedReplaceMetadata`` (operationType CLUSTER) with the plan. Execution
rewrites each group sorted by ``.sort.columns`` into files near the target size and
completes ``T.replacecommit`` with ``partitionToReplaceFileIds``.

While the plan is pending, writers must not update its file groups (Hudi without an
update strategy refuses); :func:`check_no_pending_clustering` is that guard.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from airflow_hoodie.actions.service_common import MB
from airflow_hoodie.config import ConfigKey, HoodieConfig, register
from airflow_hoodie.errors import HoodieWriteConflictError

SMALL_FILE_LIMIT = "hoodie.clustering.plan.strategy.small.file.limit"
TARGET_FILE_MAX_BYTES = "hoodie.clustering.plan.strategy.target.file.max.bytes"
SORT_COLUMNS = "hoodie.clustering.plan.strategy.sort.columns"
SKIP_PARTITIONS_FROM_LATEST = "hoodie.clustering.plan.strategy.skip.partitions.from.latest"
MAX_NUM_GROUPS = "hoodie.clustering.plan.strategy.max.num.groups"
MAX_BYTES_PER_GROUP = "hoodie.clustering.plan.strategy.max.bytes.per.group"
SINGLE_GROUP = "hoodie.clustering.plan.strategy.single.group.clustering.enabled"
PLAN_STRATEGY_CLASS = "hoodie.clustering.plan.strategy.class"
EXECUTION_STRATEGY_CLASS = "hoodie.clustering.execution.strategy.class"

DEFAULT_EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"

register(
    ConfigKey(SMALL_FILE_LIMIT, str(300 * 1024 * 1024), "Base files below this size are clustered"),
    ConfigKey(TARGET_FILE_MAX_BYTES, str(1024 * 1024 * 1024), "Target size of clustered files"),
    ConfigKey(SORT_COLUMNS, None, "Comma-separated columns to sort clustered data by"),
    ConfigKey(SKIP_PARTITIONS_FROM_LATEST, "0", "Leave the newest N partitions alone"),
    ConfigKey(MAX_NUM_GROUPS, "30", "Most clustering groups per plan"),
    ConfigKey(MAX_BYTES_PER_GROUP, str(2 * 1024 * 1024 * 1024), "Most input bytes per clustering group"),
    ConfigKey(SINGLE_GROUP, "true", "Cluster a group made of a single file slice"),
    ConfigKey(PLAN_STRATEGY_CLASS,
              "org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy"),
    ConfigKey(EXECUTION_STRATEGY_CLASS, DEFAULT_EXECUTION_STRATEGY),
    ConfigKey("hoodie.clustering.inline", "false"),
    ConfigKey("hoodie.clustering.async.enabled", "false"),
    ConfigKey("hoodie.clustering.inline.max.commits", "4"),
    ConfigKey("hoodie.clustering.async.max.commits", "4"),
    ConfigKey("hoodie.parquet.max.file.size", str(120 * 1024 * 1024)),
)

CLUSTERING_PLAN_VERSION = 1
CLUSTER_OPERATION = "CLUSTER"


def check_no_pending_clustering(table: Any, file_group_ids: Iterable[tuple[str, str]]) -> None:
    """Refuse a write touching file groups that a pending clustering will replace.

    ``file_group_ids`` are (partition_path, file_id) pairs the write would update.
    Call it from the write path after tagging records with their file groups.
    """
    from airflow_hoodie.table.file_system_view import FileSystemView

    pending = FileSystemView(table, table.timeline).pending_clustering_file_groups()
    conflicts = sorted((fg, pending[fg]) for fg in set(file_group_ids) if fg in pending)
    if conflicts:
        shown = ", ".join(f"{p or '<non-partitioned>'}/{f} (clustering {ts})" for (p, f), ts in conflicts[:5])
        raise HoodieWriteConflictError(
            f"{len(conflicts)} file group(s) this write updates are under pending clustering: {shown}"
            f"{' ...' if len(conflicts) > 5 else ''}. Run the clustering job to completion "
            "(clustering.py --mode execute) or roll back that clustering instant, then retry the write."
        )


def slice_size(slice_: Any, default_size: int) -> int:
    """Hudi sizes a slice by its base file, or the max parquet size when it has none."""
    return int(slice_.base_file.size) if slice_.base_file is not None else default_size


def slice_info(slice_: Any) -> dict[str, Any]:
    """Hudi's ``HoodieSliceInfo`` for one file slice."""
    return {
        "dataFilePath": slice_.base_file.path_rel if getattr(slice_.base_file, "path_rel", None)
        else (f"{slice_.partition_path}/{slice_.base_file.file_name}".lstrip("/") if slice_.base_file else None),
        "deltaFilePaths": [f"{slice_.partition_path}/{lf.file_name}".lstrip("/") for lf in slice_.log_files],
        "fileId": slice_.file_id,
        "partitionPath": slice_.partition_path,
        "bootstrapFilePath": "",
        "version": 1,
    }


def group_metrics(slices: Sequence[Any], default_size: int) -> dict[str, float]:
    log_size = sum(int(lf.size or 0) for s in slices for lf in s.log_files)
    base = sum(int(s.base_file.size) for s in slices if s.base_file is not None)
    read_mb = (base + log_size) // MB
    write_mb = sum(slice_size(s, default_size) for s in slices) // MB
    return {"TOTAL_IO_READ_MB": float(read_mb), "TOTAL_IO_WRITE_MB": float(write_mb),
            "TOTAL_IO_MB": float(read_mb + write_mb), "TOTAL_LOG_FILES_SIZE": float(log_size),
            "TOTAL_LOG_FILES": float(sum(len(s.log_files) for s in slices))}


def output_groups(total: int, target: int) -> int:
    return max(1, math.ceil(total / target)) if target > 0 else 1


def select_partitions(partitions: Sequence[str], config: HoodieConfig) -> list[str]:
    skip = config.get_int(SKIP_PARTITIONS_FROM_LATEST)
    ordered = sorted(partitions, reverse=True)
    return sorted(ordered[skip:]) if skip > 0 else sorted(partitions)


def build_groups_for_partition(
    slices: Sequence[Any], config: HoodieConfig, excluded: set[tuple[str, str]]
) -> list[dict[str, Any]]:
    small = config.get_int(SMALL_FILE_LIMIT)
    target = config.get_int(TARGET_FILE_MAX_BYTES)
    max_group = config.get_int(MAX_BYTES_PER_GROUP)
    default_size = config.get_int("hoodie.parquet.max.file.size")
    single = config.get_bool(SINGLE_GROUP) or bool(config.get(SORT_COLUMNS))
    eligible = [s for s in slices if (s.partition_path, s.file_id) not in excluded
                and (s.base_file.size if s.base_file is not None else 0) < small]
    eligible.sort(key=lambda s: -slice_size(s, default_size))
    groups: list[list[Any]] = []
    sizes: list[int] = []
    current: list[Any] = []
    total = 0
    for s in eligible:
        size = slice_size(s, default_size)
        if current and total + size > max_group:
            groups.append(current)
            sizes.append(total)
            current, total = [], 0
        current.append(s)
        total += size
    if current:
        groups.append(current)
        sizes.append(total)
    out = []
    for g, total in zip(groups, sizes):
        if len(g) < 2 and not single:
            continue
        out.append({
            "slices": [slice_info(s) for s in g],
            "metrics": group_metrics(g, default_size),
            "numOutputFileGroups": output_groups(total, target),
            "extraMetadata": None,
            "version": 1,
        })
    return out


def build_clustering_plan(
    slices_by_partition: dict[str, Sequence[Any]], config: HoodieConfig, excluded: set[tuple[str, str]]
) -> dict[str, Any] | None:
    """Hudi's ``HoodieClusteringPlan`` or None when no group qualifies."""
    max_groups = config.get_int(MAX_NUM_GROUPS)
    groups: list[dict[str, Any]] = []
    for partition in select_partitions(list(slices_by_partition), config):
        for g in build_groups_for_partition(slices_by_partition[partition], config, excluded):
            if len(groups) >= max_groups:
                break
            groups.append(g)
    if not groups:
        return None
    params = {k: str(config.get(k)) for k in (SORT_COLUMNS, TARGET_FILE_MAX_BYTES) if config.get(k)}
    return {
        "inputGroups": groups,
        "strategy": {"strategyClassName": config.get(EXECUTION_STRATEGY_CLASS) or DEFAULT_EXECUTION_STRATEGY,
                     "strategyParams": params, "version": 1},
        "extraMetadata": {},
        "version": CLUSTERING_PLAN_VERSION,
        "preserveHoodieMetadata": True,
    }


def requested_replace_metadata(plan: dict[str, Any]) -> dict[str, Any]:
    """Hudi's ``HoodieRequestedReplaceMetadata`` wrapping a clustering plan."""
    return {"operationType": CLUSTER_OPERATION, "clusteringPlan": plan, "extraMetadata": {}, "version": 1}
