"""Clustering: rewrite small file groups into larger, sorted ones (a replacecommit).

Planning follows Hudi's SparkSizeBasedClusteringPlanStrategy: per partition (newest
``.skip.partitions.from.latest`` partitions skipped), the latest file slices whose base
file is below ``.small.file.limit`` and whose file group is not in a pending compaction
or clustering, largest first, packed into groups of at most ``.max.bytes.per.group``,
each with ``ceil(size / .target.file.max.bytes)`` output file groups, at most
``.max.num.groups`` groups in all. ``T.replacecommit.requested`` holds the Avro
``HoodieRequestedReplaceMetadata`` (operationType CLUSTER) with the plan. Execution
rewrites each group sorted by ``.sort.columns`` (linearly, or along the z-order or Hilbert
curve of ``hoodie.layout.optimize.strategy``: :mod:`airflow_hoodie.table.layout`) into files
near the target size and
completes ``T.replacecommit`` with ``partitionToReplaceFileIds``.

While the plan is pending, writers must not update its file groups (Hudi without an
update strategy refuses); :func:`check_no_pending_clustering` is that guard.
"""

from __future__ import annotations

import json
import math
import time
from functools import partial
from typing import Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa

from airflow_hoodie.actions import commit
from airflow_hoodie.actions import service_common as sc
from airflow_hoodie.actions import consistent_bucket_resize as cbr
from airflow_hoodie.actions.bucket_index_write import is_bucket_layout
from airflow_hoodie.actions.consistent_bucket_write import ring_loader
from airflow_hoodie.actions.executor import Executor
from airflow_hoodie.actions.file_group_write import task_attempt, write_stat
from airflow_hoodie.actions.planned_service import (
    DONE,
    PlannedService,
    ServiceTaskContext,
    execute_given_or_pending,
    execute_planned,
    task_options,
)
from airflow_hoodie.actions.service_common import MB, crash_point, serialize_plan
from airflow_hoodie.actions.transaction.conflict_resolution import (
    groups_held_by_live_writes,
)
from airflow_hoodie.actions.transaction.service_transaction import (
    executing,
    transaction_manager_for,
)
from airflow_hoodie.actions.write_client import commit_metadata
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.clustering import (  # noqa: F401 - the service's keys, for its callers
    DEFAULT_EXECUTION_STRATEGY,
    EXECUTION_STRATEGY_CLASS,
    LAYOUT_KEYS,
    MAX_BYTES_PER_GROUP,
    MAX_NUM_GROUPS,
    PLAN_STRATEGY_CLASS,
    SINGLE_GROUP,
    SKIP_PARTITIONS_FROM_LATEST,
    SMALL_FILE_LIMIT,
    SORT_COLUMNS,
    TARGET_FILE_MAX_BYTES,
)
from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError, HoodieWriteConflictError
from airflow_hoodie.settings.clustering import ClusteringSettings, layout_spec
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.table.file_group.base_file_writer import (
    with_meta_fields,
    write_base_file,
)
from airflow_hoodie.table.file_group.file_group import BaseFile, FileSlice, LogFile
from airflow_hoodie.table.file_group.file_naming import (
    base_file_name,
    make_write_token,
    new_file_id,
)
from airflow_hoodie.table.file_group.file_slice_reader import (
    SliceReadOptions,
    read_file_slice,
)
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.consistent_hashing import Ring
from airflow_hoodie.table.layout import sort_by_layout
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata
from airflow_hoodie.table.metadata.plans import ClusteringGroup, ClusteringPlan
from airflow_hoodie.table.schema.avro_convert import avro_to_arrow_schema, conform_table
from airflow_hoodie.table.schema.meta_fields import FILE_NAME
from airflow_hoodie.table.service_outcomes import record_nothing_planned
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline

CLUSTERING_PLAN_VERSION = 1
CLUSTER_OPERATION = "CLUSTER"


def check_no_pending_clustering(table: HoodieTable, file_group_ids: Iterable[tuple[str, str]]) -> None:
    """Refuse a write touching file groups that a pending clustering will replace.

    ``file_group_ids`` are (partition_path, file_id) pairs the write would update.
    Call it from the write path after tagging records with their file groups.
    """
    pending = table.file_system_view(table.reload_timeline()).pending_clustering_file_groups()
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


def slice_info(slice_: Any, uri_of: Callable[[str], str] = lambda p: p) -> dict[str, Any]:
    """Hudi's ``HoodieSliceInfo`` for one file slice.

    Hudi 0.14 stores full paths here (``BaseFile.getPath``), empty when there is no base
    file; ``uri_of`` turns our storage paths into such URIs.
    """
    return {
        "dataFilePath": uri_of(slice_.base_file.path) if slice_.base_file is not None else "",
        "deltaFilePaths": [uri_of(lf.path) for lf in slice_.log_files],
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


def select_partitions(partitions: Sequence[str], settings: ClusteringSettings) -> list[str]:
    skip = settings.skip_partitions_from_latest
    ordered = sorted(partitions, reverse=True)
    return sorted(ordered[skip:]) if skip > 0 else sorted(partitions)


def build_groups_for_partition(
    slices: Sequence[Any], settings: ClusteringSettings, excluded: set[tuple[str, str]],
    uri_of: Callable[[str], str] = lambda p: p,
) -> list[dict[str, Any]]:
    small = settings.small_file_limit
    target = settings.target_file_max_bytes
    max_group = settings.max_bytes_per_group
    default_size = settings.parquet_max_file_size
    single = settings.single_group
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
            "slices": [slice_info(s, uri_of) for s in g],
            "metrics": group_metrics(g, default_size),
            "numOutputFileGroups": output_groups(total, target),
            "extraMetadata": None,
            "version": 1,
        })
    return out


def build_clustering_plan(
    slices_by_partition: dict[str, Sequence[Any]], settings: ClusteringSettings, excluded: set[tuple[str, str]],
    uri_of: Callable[[str], str] = lambda p: p,
) -> dict[str, Any] | None:
    """Hudi's ``HoodieClusteringPlan`` or None when no group qualifies."""
    max_groups = settings.max_num_groups
    groups: list[dict[str, Any]] = []
    for partition in select_partitions(list(slices_by_partition), settings):
        for g in build_groups_for_partition(slices_by_partition[partition], settings, excluded, uri_of):
            if len(groups) >= max_groups:
                break
            groups.append(g)
    if not groups:
        return None
    params = dict(settings.strategy_params)
    return {
        "inputGroups": groups,
        "strategy": {"strategyClassName": settings.execution_strategy_class,
                     "strategyParams": params, "version": 1},
        "extraMetadata": {},
        "version": CLUSTERING_PLAN_VERSION,
        "preserveHoodieMetadata": True,
    }


def _nothing_to_cluster(by_part: dict[str, list[Any]], settings: ClusteringSettings,
                        excluded: set[tuple[str, str]]) -> str:
    """The numbers behind an empty plan: what exists against what the strategy takes."""
    slices = [s for part in by_part.values() for s in part]
    small = settings.small_file_limit
    held = sum(1 for s in slices if (s.partition_path, s.file_id) in excluded)
    under = sum(1 for s in slices if (s.partition_path, s.file_id) not in excluded
                and (s.base_file.size if s.base_file is not None else 0) < small)
    skipped = len(by_part) - len(select_partitions(list(by_part), settings))
    single = settings.single_group
    parts = [f"{len(slices)} file slices in {len(by_part)} partitions",
             f"{under} with a base file under {SMALL_FILE_LIMIT}={small} bytes"]
    if held:
        parts.append(f"{held} in a pending service or held by a live write")
    if skipped:
        parts.append(f"{skipped} newest partitions skipped ({SKIP_PARTITIONS_FROM_LATEST})")
    if not single:
        parts.append("a group needs at least 2 small slices of one partition "
                     f"(or {SINGLE_GROUP}=true, or sort columns)")
    return "no file slice qualifies for clustering: " + "; ".join(parts)


def requested_replace_metadata(plan: dict[str, Any]) -> dict[str, Any]:
    """Hudi's ``HoodieRequestedReplaceMetadata`` wrapping a clustering plan."""
    return {"operationType": CLUSTER_OPERATION, "clusteringPlan": plan, "extraMetadata": {}, "version": 1}


# ======================================================================== table level


def refuse_bucket_clustering(table: HoodieTable) -> None:
    """Clustering a simple-bucket table would merge buckets' groups into new random-UUID
    groups, which breaks its bucket-index writers; Flink refuses to schedule it
    (ClusteringUtil.validateClusteringScheduling), and so do we, before any change."""
    if is_bucket_layout(table.planning_view().existing_files(None)):
        raise HoodieNotSupportedError(
            f"Clustering {table.base_uri}: the table is laid out by Hudi's simple bucket index (every file group is "
            "named by its bucket), and clustering would rewrite its groups under new names, which the table's "
            "bucket-index writers cannot use. Nothing was scheduled. Compact (MERGE_ON_READ) and clean it instead; "
            "to re-layout it, rewrite it into a new table.")


def schedule_clustering(table: HoodieTable, config: HoodieConfig, instant_time: str | None = None) -> dict[str, Any]:
    """Plan clustering and write ``T.replacecommit.requested`` (``T.clustering.requested`` on
    Hudi 1.x tables) under the table lock; no
    instant when nothing qualifies. File groups a live pending write touches are left out:
    that writer's commit would otherwise fail its conflict check."""
    settings = ClusteringSettings.from_config(config)
    table.check_writable()  # a table we cannot keep true is refused first, by its feature's name
    refuse_bucket_clustering(table)
    commit.prepare_for_change(table, settings.action.change)
    table.check_records_writable("Scheduling a clustering")
    with transaction_manager_for(table, settings.lock).transaction("schedule a clustering"):
        result = _schedule_resize(table, config, settings, instant_time) if cbr.is_consistent_hashing_table(table) \
            else _schedule_clustering(table, settings, instant_time)
    if result["instant"] is None:
        record_nothing_planned(table.storage, table.base_path, "clustering", result["reason"], table.timeline)
    return result


def _schedule_clustering(table: HoodieTable, settings: ClusteringSettings, instant_time: str | None) -> dict[str, Any]:

    tl = table.reload_timeline()
    pending_writes = [i for i in tl.instants if i.action in (Action.COMMIT, Action.DELTA_COMMIT)
                      and i.state != State.COMPLETED]
    if pending_writes and not settings.lock.is_multi_writer:
        raise HoodieWriteConflictError(
            f"Write {pending_writes[0].timestamp} is still pending on {table.base_uri}; with a single writer, "
            "clustering is planned only when no write is running. Let it finish (or roll it back), then schedule "
            "again — or run the table with hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL."
        )
    view = table.file_system_view(tl)
    excluded = view.file_groups_in_pending_services()
    tm = transaction_manager_for(table, settings.lock)
    if tm.is_multi_writer:  # NBCC writers check no conflict: a replaced group would lose their logs
        held = groups_held_by_live_writes(table, tm)
        if held.undeclared is not None:
            return {"instant": None, "action": Action.REPLACE_COMMIT, "reason": (
                f"{held.undeclared.action} {held.undeclared.timestamp} is running and has not declared its file "
                "groups yet; a plan now could take them and fail its commit. Schedule again in a moment.")}
        excluded = excluded | held.groups
    by_part: dict[str, list[Any]] = {}
    for s in view.service_latest_slices():
        if s.base_file is None and not s.log_files:
            continue
        by_part.setdefault(s.partition_path, []).append(s)
    plan = build_clustering_plan(by_part, settings, excluded, uri_of=table.storage.uri)
    if plan is None:
        return {"instant": None, "action": Action.REPLACE_COMMIT, "reason": _nothing_to_cluster(by_part, settings, excluded)}
    ts = instant_time or table.new_instant_time()
    table.timeline_writer().create_requested(
        Instant(ts, table.format.clustering_action, State.REQUESTED),
        serialize_plan("HoodieRequestedReplaceMetadata", requested_replace_metadata(plan)))
    table.reload_timeline()
    return {"instant": ts, "action": Action.REPLACE_COMMIT, "state": "requested",
            "groups": len(plan["inputGroups"]),
            "input_file_groups": sum(len(g["slices"]) for g in plan["inputGroups"])}


def _schedule_resize(table: HoodieTable, config: HoodieConfig, settings: ClusteringSettings,
                     instant_time: str | None) -> dict[str, Any]:
    """A consistent-hashing table's clustering is its resize (:mod:`consistent_bucket_resize`):
    partitions with a pending clustering are left out, so each ring changes one resize at a time."""
    reason = cbr.pending_write_reason(table)
    if reason is not None:
        return {"instant": None, "action": Action.REPLACE_COMMIT, "reason": reason}
    view = table.file_system_view(table.timeline)
    busy = {p for p, _f in view.file_groups_in_pending_services()}
    by_part: dict[str, list[Any]] = {}
    for s in view.service_latest_slices():
        if s.partition_path not in busy and (s.base_file is not None or s.log_files):
            by_part.setdefault(s.partition_path, []).append(s)
    load = ring_loader(table)
    rings = {p: Ring(m) for p in by_part for m in [load(p)] if m is not None}
    plan = cbr.build_resize_plan(rings, by_part, settings.resize, lambda s: slice_info(s, table.storage.uri),
                                 lambda fs: group_metrics(fs, settings.parquet_max_file_size), settings.sort_columns)
    if plan is None:
        return {"instant": None, "action": Action.REPLACE_COMMIT,
                "reason": "no partition with a hash ring and file slices is free of a pending clustering"}
    ts = instant_time or table.new_instant_time()
    table.timeline_writer().create_requested(
        Instant(ts, table.format.clustering_action, State.REQUESTED),
        serialize_plan("HoodieRequestedReplaceMetadata", requested_replace_metadata(plan)))
    table.reload_timeline()
    return {"instant": ts, "action": Action.REPLACE_COMMIT, "state": "requested", "groups": len(plan["inputGroups"]),
            "input_file_groups": sum(len(g["slices"]) for g in plan["inputGroups"])}


def _group_slices(storage: Any, base_path: str, group: ClusteringGroup) -> list[FileSlice]:
    """The file slices a clustering group names, its files looked up (sizes) in storage."""
    out = []
    for info in group.slices or []:
        part = info.partition_path or ""
        pdir = storage.join(base_path, part) if part else base_path

        def path_of(p: str) -> str:
            # full URIs (Hudi 0.14 plans and ours) or bare names (older plans): same directory
            return storage.join(pdir, p.rstrip("/").rsplit("/", 1)[-1])

        base = None
        if info.data_file_path:
            bp = path_of(info.data_file_path)
            base = BaseFile.from_path(bp, storage.size(bp), part)
        logs = []
        for lp in info.delta_file_paths or []:
            p = path_of(lp)
            logs.append(LogFile.from_path(p, storage.size(p), part))
        logs.sort(key=lambda lf: lf.sort_key)
        instant = base.commit_time if base else (logs[0].base_instant if logs else "")
        out.append(FileSlice(part, info.file_id, instant, base, logs))
    return out


def read_group(ctx: ServiceTaskContext, group: ClusteringGroup) -> pa.Table:
    """A clustering group's rows: its slices read as of the plan, in the table's schema."""
    storage, _ = Storage.for_uri(ctx.base_uri, ctx.storage_options or None)
    schema = avro_to_arrow_schema(with_meta_fields(ctx.avro_schema))
    opts = SliceReadOptions(merge_config=ctx.merge_config, as_of=ctx.instant_time,
                            valid_instants=ctx.valid_instants, timeline_start=ctx.timeline_start)
    tables = []
    for s in _group_slices(storage, ctx.base_path, group):
        t = read_file_slice(storage, s, opts)
        if t.num_columns:
            tables.append(conform_table(t, schema))
    data = pa.concat_tables(tables) if tables else schema.empty_table()
    if ctx.sort_columns and data.num_rows:  # linear, or along the z-order / Hilbert curve
        data = sort_by_layout(data, ctx.sort_columns, ctx.layout)
    return data


def write_output(ctx: ServiceTaskContext, index: int, part: str, fid: str, chunk: pa.Table) -> dict[str, Any]:
    """One output base file of a clustering task (file group ``fid``); its write stat."""
    storage, _ = Storage.for_uri(ctx.base_uri, ctx.storage_options or None)
    stage, attempt = task_attempt()
    name = base_file_name(fid, make_write_token(index, stage + ctx.stage_offset, attempt), ctx.instant_time)
    chunk = chunk.set_column(chunk.schema.get_field_index(FILE_NAME), FILE_NAME,
                             pa.array([name] * chunk.num_rows, pa.string()))
    mk.create_marker(storage, ctx.base_path, ctx.instant_time, part, name, mk.IO_CREATE)

    crash_point("clustering.task")
    st = write_base_file(storage, ctx.base_path, part, name, chunk, ctx.avro_schema, ctx.file_settings)
    return write_stat(fileId=fid, path=st.path, prevCommit="null", numWrites=st.num_records,
                      numInserts=st.num_records, totalWriteBytes=st.file_size, partitionPath=part,
                      fileSizeInBytes=st.file_size)


def cluster_group(ctx: ServiceTaskContext, indexed: tuple[int, ClusteringGroup]) -> list[dict[str, Any]]:
    """One executor task: read a group's slices, sort, write ``numOutputFileGroups`` new files."""
    index, group = indexed
    data = read_group(ctx, group)
    parts = {s.partition_path or "" for s in group.slices or []}
    part = sorted(parts)[0]
    n_out = max(1, int(group.num_output_file_groups or 1))
    n_out = min(n_out, max(data.num_rows, 1))
    per = -(-data.num_rows // n_out) if data.num_rows else 0
    stats = []
    for k in range(n_out):
        chunk = data.slice(k * per, per) if data.num_rows else data
        if data.num_rows and chunk.num_rows == 0:
            continue
        stats.append(write_output(ctx, index, part, new_file_id(), chunk))
    return stats


def execute_clustering(table: HoodieTable, instant_time: str, executor: Executor, config: HoodieConfig | None = None,
                       storage_options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run the pending clustering ``instant_time`` (idempotent; an inflight attempt is undone
    first; one executing task at a time)."""


    started = time.time()
    tl = table.reload_timeline()
    inst = sc.find_instant(tl, instant_time, [Action.REPLACE_COMMIT])
    if inst is None:
        raise HoodieConfigError(f"No clustering {instant_time} on the timeline of {table.base_uri}.")
    if inst.state == State.COMPLETED:
        return {"instant": instant_time, "action": Action.REPLACE_COMMIT, "state": "completed",
                "reason": "already completed"}
    settings = ClusteringSettings.from_config(config)
    commit.prepare_for_change(table, settings.action.change)
    with executing(transaction_manager_for(table, settings.lock), "clustering", instant_time) as token:
        return _execute_clustering(table, instant_time, executor, settings, task_options(config), storage_options,
                                   started, token, config)


def _clustering_plan(table: HoodieTable, timeline: Timeline, inst: Instant) -> ClusteringPlan:
    plan = table.file_system_view(timeline).clustering_plan(inst.timestamp)
    if plan is None:
        raise HoodieConfigError(f"Replacecommit {inst.timestamp} is not a clustering (no clustering plan).")
    return ClusteringPlan.from_avro(plan)


def _replaced_groups(plan: ClusteringPlan) -> dict[str, list[str]]:
    replaced: dict[str, list[str]] = {}
    for g in plan.input_groups or []:
        for s in g.slices or []:
            replaced.setdefault(s.partition_path or "", []).append(s.file_id)
    return replaced


def _execute_clustering(table: HoodieTable, instant_time: str, executor: Executor, settings: ClusteringSettings,
                        options: Mapping[str, str], storage_options: Mapping[str, str] | None, started: float,
                        token: str | None = None, config: HoodieConfig | None = None) -> dict[str, Any]:
    rings: list[Any] = []
    contexts: list[ServiceTaskContext] = []

    def run(plan: ClusteringPlan, timeline: Any, schema: dict[str, Any]) -> list[dict[str, Any]]:
        params = (plan.strategy.strategy_params or {}) if plan.strategy else {}
        sort_cols = params.get(SORT_COLUMNS) or settings.sort_columns
        # the layout the plan recorded (its scheduler's options), else this job's
        layout = layout_spec(params) if any(k in params for k in LAYOUT_KEYS) else settings.layout
        ctx = ServiceTaskContext.for_plan(table, instant_time, timeline, schema, options, storage_options,
                                          tuple(c.strip() for c in sort_cols.split(",") if c.strip()), layout)
        groups = list(enumerate(plan.input_groups or []))
        task: Callable[..., list[dict[str, Any]]] = partial(cluster_group, ctx)
        if cbr.is_resize_plan(plan):  # rows go to the child buckets their keys hash to
            task = partial(cbr.resize_task, ctx, *cbr.hash_settings(table, settings.resize), read_group,
                           write_output)
        contexts[:] = [ctx]
        stats = [s for group in executor.map(task, groups) for s in group]
        for part in sorted(_replaced_groups(plan)):
            write_partition_metadata(table.storage, table.base_path, part, instant_time)
        return stats

    def commit_body(plan: ClusteringPlan, stats: list[dict[str, Any]], schema: dict[str, Any]) -> CommitMetadata:
        if cbr.is_resize_plan(plan):  # the new rings are written before the replacecommit completes
            rings[:] = cbr.new_rings(table, plan, instant_time, ring_loader(table))
            cbr.save_rings(table, rings)
        # the task's write identity (and any other commit-metadata option) goes into extraMetadata
        return commit_metadata(stats, "CLUSTER", json.dumps(schema, separators=(",", ":")),
                               _replaced_groups(plan), dict(settings.action.extra_metadata))

    service = PlannedService(
        Action.REPLACE_COMMIT, "clustering", load_plan=partial(_clustering_plan, table),
        partitions=lambda plan: [s.partition_path or "" for g in plan.input_groups or [] for s in g.slices or []],
        run=run, commit_body=commit_body,
        at_commit=lambda plan, stats: cbr.empty_children_with_logs(contexts[0], plan, stats, write_output)
        if cbr.is_resize_plan(plan) else [])
    done = execute_planned(service, table, instant_time, settings.lock, token)
    cbr.commit_rings(table, rings)  # the replacecommit completed: its rings are the partitions' rings
    if done.outcome != DONE:
        return {"instant": instant_time, "action": Action.REPLACE_COMMIT, "state": "completed", "reason": done.outcome}
    stats = done.stats
    return {"instant": instant_time, "action": Action.REPLACE_COMMIT, "state": "completed",
            "groups": len(done.plan.input_groups or []),
            "replaced_file_groups": sum(len(v) for v in _replaced_groups(done.plan).values()),
            "files_written": len(stats), "records_written": sum(s["numWrites"] for s in stats),
            "bytes_written": sum(s["totalWriteBytes"] for s in stats), "rolled_back_files": len(done.rolled_back),
            "seconds": round(time.time() - started, 3)}


def pending_clustering_instants(table: HoodieTable) -> list[Instant]:
    tl = table.reload_timeline()
    view = table.file_system_view(tl)
    return [i for i in tl.instants if i.action in (Action.REPLACE_COMMIT, Action.CLUSTERING) and i.state != State.COMPLETED
            and view.clustering_plan(i.timestamp) is not None]


def run_clustering(table: HoodieTable, config: HoodieConfig, executor: Executor, mode: str = "scheduleAndExecute",
                   instant_time: str | None = None, storage_options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``schedule`` | ``execute`` (given or every pending, oldest first) | ``scheduleAndExecute``."""
    modes = ("schedule", "execute", "scheduleAndExecute")
    if mode not in modes:
        raise HoodieConfigError(f"--mode {mode!r} is not one of {', '.join(modes)}.")
    if mode == "schedule":
        return schedule_clustering(table, config, instant_time)
    if mode == "execute":
        out = execute_given_or_pending(
            lambda ts: execute_clustering(table, ts, executor, config, storage_options), instant_time,
            lambda: pending_clustering_instants(table), Action.REPLACE_COMMIT, "clustering")
        out.pop("runs", None)
        return out
    # a plan whose executor died (inflight, its heartbeat expired: this task's killed try, as
    # often as not) runs first, as Hudi's --retry-last-failed-clustering-job does; left
    # pending, it would hold its file groups from every update and from the new plan
    heartbeats = transaction_manager_for(table, LockSettings.from_config(config)).heartbeats
    for dead in pending_clustering_instants(table):
        if dead.state == State.INFLIGHT and heartbeats.is_expired(dead.timestamp):
            execute_clustering(table, dead.timestamp, executor, config, storage_options)
    sched = schedule_clustering(table, config, instant_time)
    if sched["instant"] is None:
        return sched
    return execute_clustering(table, sched["instant"], executor, config, storage_options)
