"""Compaction of MERGE_ON_READ file slices: schedule (plan) and execute.

Scheduling decides *whether* (trigger strategy over delta commits since the last
compaction) and *what* (file slices with log files, largest logs first, capped by an IO
budget, never a file group already under a pending compaction or clustering), then
writes ``T.compaction.requested`` holding Hudi's Avro ``HoodieCompactionPlan``. Execution
moves it to inflight, merges each operation's base + logs into a new base file named
with the compaction instant (one executor task per operation) and completes it as
``T.commit`` with ``compacted=true``. Because the plan is on the timeline, a crashed run
is rolled back and re-executed from the same plan.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.cdc_write import compaction_changes, write_cdc_log
from airflow_hoodie.actions.compaction_reasons import nothing_to_compact_reason
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
from airflow_hoodie.actions.service_common import (
    MB,
    crash_point,
    find_instant,
    is_completed,
    seconds_between,
)
from airflow_hoodie.actions.transaction.conflict_resolution import (
    groups_held_by_live_writes,
)
from airflow_hoodie.actions.transaction.service_transaction import (
    executing,
    transaction_manager_for,
)
from airflow_hoodie.actions.write_client import commit_metadata
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.compaction import (  # noqa: F401 - the service's keys, for its callers
    LOGFILE_SIZE_THRESHOLD,
    MAX_DELTA_COMMITS,
    MAX_DELTA_SECONDS,
    TARGET_IO_MB,
    TRIGGER_STRATEGY,
)
from airflow_hoodie.errors import HoodieConfigError, HoodieWriteConflictError
from airflow_hoodie.settings.base_file import BloomSettings
from airflow_hoodie.settings.compaction import TRIGGER_STRATEGIES, CompactionSettings  # noqa: F401
from airflow_hoodie.table.bloom.bloom_footer import (
    SerializedFilter,
    extended_footer_filter,
)
from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.table.file_group.base_file_writer import (
    ONE_VALUE_META_COLUMNS,
    repeated_string,
    with_meta_fields,
    write_base_file,
)
from airflow_hoodie.table.file_group.file_group import BaseFile, FileSlice, LogFile
from airflow_hoodie.table.file_group.file_naming import base_file_name, make_write_token
from airflow_hoodie.table.file_group.file_slice_reader import (
    SliceRead,
    SliceReadOptions,
    read_file_slice_counted,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata
from airflow_hoodie.table.metadata.plans import CompactionOperation, CompactionPlan
from airflow_hoodie.table.schema.avro_convert import avro_to_arrow_schema, conform_table
from airflow_hoodie.table.schema.meta_fields import FILE_NAME
from airflow_hoodie.table.service_outcomes import record_nothing_planned
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action, Instant, State

#: Metric names Hudi's CompactionStrategy.captureMetrics puts in each operation.
TOTAL_IO_READ_MB = "TOTAL_IO_READ_MB"
TOTAL_IO_WRITE_MB = "TOTAL_IO_WRITE_MB"
TOTAL_IO_MB = "TOTAL_IO_MB"
TOTAL_LOG_FILES_SIZE = "TOTAL_LOG_FILES_SIZE"
TOTAL_LOG_FILES = "TOTAL_LOG_FILES"
COMPACTION_PLAN_VERSION = 2


@dataclass(frozen=True)
class TriggerDecision:
    due: bool
    delta_commits: int
    seconds_since: float
    reason: str


def delta_commits_since_last_compaction(instants: Sequence[Instant]) -> tuple[list[Instant], str | None]:
    """Completed delta commits after the latest compaction, and the reference time.

    The reference is the latest compaction instant (completed ``commit`` on a MOR table,
    or a pending ``compaction``), else the first delta commit, as Hudi measures
    TIME_ELAPSED from there.
    """
    ordered = sorted(instants, key=lambda i: i.sort_key)
    compactions = [i for i in ordered if i.action in (Action.COMMIT, Action.COMPACTION)
                   and (is_completed(i) or i.action == Action.COMPACTION)]
    deltas = [i for i in ordered if i.action == Action.DELTA_COMMIT and is_completed(i)]
    if compactions:
        last = compactions[-1].timestamp
        return [d for d in deltas if d.timestamp > last], last
    return deltas, deltas[0].timestamp if deltas else None


def compaction_due(instants: Sequence[Instant], settings: CompactionSettings, now_ts: str) -> TriggerDecision:
    """Evaluate ``hoodie.compact.inline.trigger.strategy`` as Hudi's scheduler does."""
    strategy = settings.trigger_strategy
    max_commits = settings.max_delta_commits
    max_seconds = settings.max_delta_seconds
    deltas, ref = delta_commits_since_last_compaction(instants)
    if ref is None:
        return TriggerDecision(False, 0, 0.0, "no delta commits to compact")
    count = len(deltas)
    elapsed = seconds_between(ref, now_ts)
    by_num = count >= max_commits
    by_time = elapsed >= max_seconds
    due = {
        "NUM_COMMITS": by_num,
        "TIME_ELAPSED": by_time,
        "NUM_AND_TIME": by_num and by_time,
        "NUM_OR_TIME": by_num or by_time,
    }[strategy]
    if due:
        reason = f"{strategy}: {count} delta commits, {elapsed:.0f}s since {ref}"
    else:
        reason = (f"{TRIGGER_STRATEGY}={strategy} not met: {count} delta commits since the last compaction "
                  f"(need {MAX_DELTA_COMMITS}={max_commits}), {elapsed:.0f}s since {ref} "
                  f"(need {MAX_DELTA_SECONDS}={max_seconds})")
    return TriggerDecision(due, count, elapsed, reason)


def operation_metrics(slice_: Any, default_max_file_size: int) -> dict[str, float]:
    """Hudi's per-operation metrics (sizes in whole MB as Hudi's getSizeInMB truncates)."""
    log_size = sum(max(int(lf.size or 0), 0) for lf in slice_.log_files)
    base_size = int(slice_.base_file.size) if slice_.base_file is not None else 0
    io_read = (base_size + log_size) // MB
    io_write = (base_size if slice_.base_file is not None else default_max_file_size) // MB
    return {
        TOTAL_IO_READ_MB: float(io_read),
        TOTAL_IO_WRITE_MB: float(io_write),
        TOTAL_IO_MB: float(io_read + io_write),
        TOTAL_LOG_FILES_SIZE: float(log_size),
        TOTAL_LOG_FILES: float(len(slice_.log_files)),
    }


def build_operation(slice_: Any, default_max_file_size: int) -> dict[str, Any]:
    """A ``HoodieCompactionOperation`` record for one file slice (file names, not paths)."""
    return {
        "baseInstantTime": slice_.base_instant,
        "deltaFilePaths": [lf.file_name for lf in slice_.log_files],
        "dataFilePath": slice_.base_file.file_name if slice_.base_file is not None else None,
        "fileId": slice_.file_id,
        "partitionPath": slice_.partition_path,
        "metrics": operation_metrics(slice_, default_max_file_size),
        "bootstrapFilePath": None,
    }


def select_operations(
    slices: Iterable[Any], excluded: set[tuple[str, str]], settings: CompactionSettings
) -> list[dict[str, Any]]:
    """LogFileSizeBasedCompactionStrategy + BoundedIO: slices with logs, largest logs first.

    Slices of file groups in ``excluded`` (pending compaction or clustering) are skipped;
    operations below ``hoodie.compaction.logfile.size.threshold`` are dropped; the budget
    ``hoodie.compaction.target.io`` (MB) is spent in order, the operation that exhausts it
    still included (as Hudi does).
    """
    max_file = settings.parquet_max_file_size
    threshold = settings.logfile_size_threshold
    ops = [
        build_operation(s, max_file)
        for s in slices
        if s.log_files and (s.partition_path, s.file_id) not in excluded
    ]
    ops = [op for op in ops if op["metrics"][TOTAL_LOG_FILES_SIZE] >= threshold]
    ops.sort(key=lambda op: -op["metrics"][TOTAL_LOG_FILES_SIZE])
    remaining = settings.target_io_mb
    chosen: list[dict[str, Any]] = []
    for op in ops:
        remaining -= int(op["metrics"][TOTAL_IO_MB])
        chosen.append(op)
        if remaining <= 0:
            break
    return chosen


def slices_to_compact(table: HoodieTable, slices: Iterable[FileSlice], compaction_instant: str,
                      timeline: Any) -> list[FileSlice]:
    """The slices with only the log files a compaction at ``compaction_instant`` may merge
    (``LogFileLayout.logs_to_compact``: on table version 8+ those whose delta commit
    completed before it; a pending delta commit's log stays for the next plan)."""
    layout = table.format.log_file_layout
    if not layout.names_logs_by_write_instant:
        return list(slices)
    done = timeline.completion_times()
    # a log older than the start of the active writes is an archived, completed delta
    # commit's (an older clean left on the timeline does not move that start)
    first_ts = timeline.first_non_savepoint_commit()
    out = []
    for s in slices:
        logs = layout.logs_to_compact(s.log_files, compaction_instant, done, first_ts)
        out.append(FileSlice(s.partition_path, s.file_id, s.base_instant, s.base_file, logs))
    return out


def build_plan(operations: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``HoodieCompactionPlan`` record."""
    return {"operations": operations, "extraMetadata": None, "version": COMPACTION_PLAN_VERSION}


@dataclass
class CompactionSchedule:
    """Outcome of scheduling: the requested instant (or None) and why."""

    instant: Instant | None
    plan: dict[str, Any] | None
    reason: str
    figures: dict[str, Any] = field(default_factory=dict)

    def as_result(self) -> dict[str, Any]:
        return {
            "instant": self.instant.timestamp if self.instant else None,
            "action": Action.COMPACTION,
            "state": self.instant.state.value if self.instant else None,
            "reason": self.reason,
            **self.figures,
        }


def pending_excluded_groups(view: Any) -> set[tuple[str, str]]:
    """File groups already under a pending compaction or clustering."""
    excluded = set(view.pending_compaction_operations().keys())
    excluded.update(view.pending_clustering_file_groups().keys())
    return excluded


def schedule_compaction(
    table: HoodieTable, config: HoodieConfig, instant_time: str | None = None, force: bool = False
) -> CompactionSchedule:
    """Plan a compaction on ``table`` and write ``T.compaction.requested``, under the
    table lock so no write commits between the plan's view and its publication.

    Returns ``instant=None`` with the reason when the trigger is not met or no slice has
    log files. ``force`` skips the trigger (an operator asking explicitly).
    """
    settings = CompactionSettings.from_config(config)
    commit.prepare_for_change(table, settings.action.change)
    with transaction_manager_for(table, settings.lock).transaction("schedule a compaction"):
        table.reload_timeline()
        schedule = _schedule_compaction(table, settings, instant_time, force)
    if schedule.instant is None:
        record_nothing_planned(table.storage, table.base_path, "compaction", schedule.reason, table.timeline)
    return schedule


def _schedule_compaction(
    table: HoodieTable, settings: CompactionSettings, instant_time: str | None, force: bool
) -> CompactionSchedule:

    if not table.is_mor:
        return CompactionSchedule(None, None, "table is COPY_ON_WRITE; compaction applies to MERGE_ON_READ")
    timeline = table.timeline
    instants = timeline.instants
    last = max((i.timestamp for i in instants), default=None)
    ts = instant_time or table.new_instant_time()
    if instant_time and timeline.get(instant_time) is not None:
        raise HoodieConfigError(f"Instant {instant_time} already exists on the timeline; pick a new instant time.")
    if last is not None and ts <= last:
        raise HoodieConfigError(
            f"Compaction instant {ts} must be later than every instant on the timeline (latest {last})."
        )
    inflight_writes = [i for i in instants if i.action in (Action.COMMIT, Action.DELTA_COMMIT)
                       and i.state != State.COMPLETED]
    # with optimistic concurrency the plan leaves live writers' file groups out (below); with
    # NBCC it takes them, their logs sliced by completion time; a single writer must finish first
    if inflight_writes and not settings.lock.is_multi_writer:

        raise HoodieWriteConflictError(
            f"Earliest write inflight instant time must be later than compaction time: write "
            f"{inflight_writes[0].timestamp} is still pending. Let it finish, or roll it back "
            "(rollback.py / the next upsert does it), then schedule the compaction again."
        )
    if not force:
        decision = compaction_due(instants, settings, ts)
        if not decision.due:
            return CompactionSchedule(None, None, decision.reason)
    view = table.file_system_view(timeline)
    excluded = view.file_groups_in_pending_services()
    left_to_writers: frozenset[tuple[str, str]] = frozenset()
    tm = transaction_manager_for(table, settings.lock)
    if tm.is_occ:
        held = groups_held_by_live_writes(table, tm)
        if held.undeclared is not None:
            return CompactionSchedule(None, None, (
                f"{held.undeclared.action} {held.undeclared.timestamp} is running and has not declared its file "
                "groups yet; a plan now could take them and fail its commit. Schedule again in a moment."))
        left_to_writers = held.groups - excluded
        excluded = excluded | held.groups
    slices = slices_to_compact(table, view.service_latest_slices(), ts, timeline)
    ops = select_operations(slices, excluded, settings)
    if not ops:
        deltas, _ = delta_commits_since_last_compaction(instants)
        why = nothing_to_compact_reason(slices, excluded, settings, timeline, deltas)
        if left_to_writers:
            why += f" ({len(left_to_writers)} file group(s) left to live writers, for a later plan)"
        return CompactionSchedule(None, None, why)
    plan = build_plan(ops)
    instant = Instant(ts, Action.COMPACTION, State.REQUESTED)
    table.timeline_writer().create_requested(
        instant, CompactionPlan.from_avro(plan).to_bytes()
    )
    return CompactionSchedule(instant, plan, f"scheduled {len(ops)} operations",
                              {"operations": len(ops),
                               "log_bytes": int(sum(o["metrics"][TOTAL_LOG_FILES_SIZE] for o in ops))})


# ======================================================================== execution
def _file_name(value: str | None) -> str | None:
    """Plans written by older Hudi versions hold full paths; newer ones file names."""
    if not value:
        return None
    return value.rstrip("/").rsplit("/", 1)[-1]


def _op_slice(storage: Any, base_path: str, op: CompactionOperation) -> FileSlice:
    """The file slice an operation names, its files looked up (sizes) in storage."""
    part = op.partition_path or ""
    pdir = storage.join(base_path, part) if part else base_path
    base = None
    name = _file_name(op.data_file_path)
    if name:
        path = storage.join(pdir, name)
        base = BaseFile.from_path(path, storage.size(path), part)
    logs = []
    for ln in op.delta_file_paths or []:
        path = storage.join(pdir, _file_name(ln))
        info = storage.info(path)
        if info is None:
            raise HoodieConfigError(
                f"Log file {path} of compaction operation for file group {op.file_id} is missing; "
                "was it cleaned or rolled back? Roll back this compaction instant and reschedule."
            )
        logs.append(LogFile.from_path(path, info.size, part))
    logs.sort(key=lambda lf: lf.sort_key)
    return FileSlice(part, op.file_id, op.base_instant_time, base, logs)


def _extended_base_filter(read: SliceRead, bloom: BloomSettings) -> SerializedFilter | None:
    """The new file's bloom filter from the base file's, when the new file holds every key of
    the base file (no delete removed one) plus ``read.new_keys``: only those are hashed (most
    of a filter's cost is hashing, and most keys of a compacted slice are the base file's).
    None: the writer builds the filter from all keys."""
    if read.new_keys is None or read.base_footer is None or read.base_keys_kept != read.base_rows \
            or not read.base_rows:
        return None
    return extended_footer_filter(read.base_footer, bloom, read.new_keys)


def _as_written(merged: pa.Table, schema: pa.Schema) -> pa.Table:
    """``merged`` in ``schema``'s columns and types, but a string column that came as a
    dictionary stays one (one dictionary per column): the writer writes it from its indices,
    into the same file the strings make, without hashing every row's value."""
    encoded = {f.name: f.type for f in merged.schema if pa.types.is_dictionary(f.type)}
    if not encoded:
        return conform_table(merged, schema)
    target = pa.schema([f.with_type(encoded[f.name]) if f.name in encoded and encoded[f.name].value_type == f.type
                        else f for f in schema], metadata=schema.metadata)
    return conform_table(merged, target).unify_dictionaries()


def compact_operation(ctx: ServiceTaskContext, indexed_op: tuple[int, CompactionOperation]) -> dict[str, Any]:
    """One executor task: merge base + logs of one file slice into a new base file.

    Records keep their ``_hoodie_commit_time``/``_hoodie_commit_seqno`` (as Hudi's
    compaction does); ``_hoodie_file_name`` names the new file. Returns the write stat.
    """


    index, op = indexed_op
    storage, _ = Storage.for_uri(ctx.base_uri, ctx.storage_options or None)
    slice_ = _op_slice(storage, ctx.base_path, op)
    schema = avro_to_arrow_schema(with_meta_fields(ctx.avro_schema))
    # every column but _hoodie_file_name, which names the new file: reading, merging and
    # copying the old name of every row only to overwrite it cost ~3 ms per 100k-row group
    # the one-value meta columns stay dictionaries from the read to the write (a CDC table's
    # change log compares the merged rows with the old file's strings)
    dictionary = ctx.cdc_log_suffix is None
    opts = SliceReadOptions(merge_config=ctx.merge_config, as_of=ctx.instant_time,
                            valid_instants=ctx.valid_instants, timeline_start=ctx.timeline_start,
                            columns=[f for f in schema.names if f != FILE_NAME],
                            dictionaries=ONE_VALUE_META_COLUMNS if dictionary else ())
    read = read_file_slice_counted(storage, slice_, opts)
    stage, attempt = task_attempt()
    name = base_file_name(op.file_id, make_write_token(index, stage + ctx.stage_offset, attempt), ctx.instant_time)
    part = slice_.partition_path
    merged = read.table
    if merged.num_columns:
        merged = _as_written(merged.append_column(FILE_NAME, repeated_string(name, merged.num_rows, dictionary)),
                             schema)
    else:
        merged = schema.empty_table()
    # updates: rows whose key the base file had, as the merge counted them
    base_rows = read.base_rows
    updated = read.base_keys_kept if slice_.base_file is not None else merged.num_rows
    inserts = merged.num_rows - updated
    mk.create_marker(storage, ctx.base_path, ctx.instant_time, part, name,
                     mk.IO_MERGE if slice_.base_file is not None else mk.IO_CREATE)

    crash_point("compaction.task")
    stats = write_base_file(storage, ctx.base_path, part, name, merged, ctx.avro_schema, ctx.file_settings,
                            bloom_filter=_extended_base_filter(read, ctx.file_settings.bloom))
    cdc_stats = _log_compacted_changes(ctx, storage, slice_, merged, name, op)
    return write_stat(
        cdcStats=cdc_stats,
        fileId=op.file_id, path=stats.path, prevCommit=op.base_instant_time, numWrites=stats.num_records,
        numDeletes=max(base_rows - updated, 0), numUpdateWrites=updated if slice_.base_file else 0,
        numInserts=inserts, totalWriteBytes=stats.file_size, partitionPath=part,
        totalLogFilesCompacted=len(slice_.log_files), totalLogRecords=read.log_records,
        totalUpdatedRecordsCompacted=read.log_keys,
        totalLogSizeCompacted=sum(lf.size for lf in slice_.log_files), fileSizeInBytes=stats.file_size,
    )


def _log_compacted_changes(ctx: ServiceTaskContext, storage: Storage, slice_: FileSlice, merged: pa.Table,
                           name: str, op: CompactionOperation) -> dict[str, int] | None:
    """The .cdc log of a CDC table's compacted group (its ``cdcStats``), None for other tables."""
    if ctx.cdc_log_suffix is None:
        return None
    base = pq.read_table(storage.open_input(slice_.base_file.path)) if slice_.base_file is not None else None
    changes = compaction_changes(base, merged, op.base_instant_time or "", ctx.cdc_logging_mode)
    token = name.split("_")[1]
    return write_cdc_log(storage, ctx.base_path, slice_.partition_path, op.file_id, ctx.instant_time, token,
                         ctx.cdc_log_suffix, ctx.avro_schema, ctx.cdc_logging_mode, changes)


def pending_compaction_instants(table: HoodieTable) -> list[Instant]:
    return [i for i in table.timeline.instants if i.action == Action.COMPACTION and i.state != State.COMPLETED]


def execute_compaction(table: HoodieTable, instant_time: str, executor: Executor, config: HoodieConfig | None = None,
                       storage_options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Run the pending compaction ``instant_time`` to completion (idempotent).

    Completed already: reported, nothing done. Inflight (a crashed attempt): its files
    are deleted and it goes back to requested, then runs again from the plan.
    """


    started = time.time()
    timeline = table.reload_timeline()
    inst = find_instant(timeline, instant_time, [Action.COMPACTION])
    if inst is None:
        raise HoodieConfigError(
            f"No compaction {instant_time} on the timeline of {table.base_uri}; schedule one with compaction_plan.py."
        )
    if inst.state == State.COMPLETED:
        return {"instant": instant_time, "action": Action.COMPACTION, "state": "completed",
                "reason": "already completed", "operations": 0}
    settings = CompactionSettings.from_config(config)
    commit.prepare_for_change(table, settings.action.change)
    with executing(transaction_manager_for(table, settings.lock), "compaction", instant_time) as token:
        return _execute_compaction(table, instant_time, executor, settings, task_options(config), storage_options,
                                   started, token)


def _execute_compaction(table: HoodieTable, instant_time: str, executor: Executor, settings: CompactionSettings,
                        options: Mapping[str, str], storage_options: Mapping[str, str] | None, started: float,
                        token: str | None = None) -> dict[str, Any]:
    def run(plan: CompactionPlan, timeline: Any, schema: dict[str, Any]) -> list[dict[str, Any]]:
        ctx = ServiceTaskContext.for_plan(table, instant_time, timeline, schema, options, storage_options)
        return executor.map(partial(compact_operation, ctx), list(enumerate(plan.operations or [])))

    def commit_body(plan: CompactionPlan, stats: list[dict[str, Any]], schema: dict[str, Any]) -> CommitMetadata:
        # the write identity (and any other commit-metadata option) of the task goes in too
        return commit_metadata(stats, "COMPACT", json.dumps(schema, separators=(",", ":")),
                               extra=dict(settings.action.extra_metadata),
                               compacted=True)

    service = PlannedService(
        Action.COMPACTION, "compaction",
        load_plan=lambda timeline, inst: CompactionPlan.from_bytes(timeline.read_plan(inst)),
        partitions=lambda plan: [o.partition_path or "" for o in plan.operations or []],
        run=run, commit_body=commit_body)
    done = execute_planned(service, table, instant_time, settings.lock, token)
    if done.outcome != DONE:
        return {"instant": instant_time, "action": Action.COMPACTION, "state": "completed",
                "reason": done.outcome, "operations": 0}
    stats = done.stats
    return {
        "instant": instant_time, "action": Action.COMPACTION, "state": "completed",
        "operations": len(done.plan.operations or []), "records_written": sum(s["numWrites"] for s in stats),
        "bytes_written": sum(s["totalWriteBytes"] for s in stats),
        "log_files_compacted": sum(s["totalLogFilesCompacted"] for s in stats),
        "rolled_back_files": len(done.rolled_back), "seconds": round(time.time() - started, 3),
    }


def execute_pending_compactions(table: HoodieTable, executor: Executor, config: HoodieConfig | None = None,
                                instant_time: str | None = None,
                                storage_options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Execute ``instant_time`` or every pending compaction, oldest first."""
    out = execute_given_or_pending(
        lambda ts: execute_compaction(table, ts, executor, config, storage_options), instant_time,
        lambda: pending_compaction_instants(table), Action.COMPACTION, "compaction")
    runs = out.pop("runs", None)
    if runs is not None:
        out["operations"] = sum(r.get("operations", 0) for r in runs)
    return out
