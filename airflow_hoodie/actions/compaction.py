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

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from airflow_hoodie.actions.service_common import MB, completed_commits, is_completed, seconds_between
from airflow_hoodie.config import ConfigKey, HoodieConfig, register
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.instant import Action, Instant, State

TRIGGER_STRATEGY = "hoodie.compact.inline.trigger.strategy"
MAX_DELTA_COMMITS = "hoodie.compact.inline.max.delta.commits"
MAX_DELTA_SECONDS = "hoodie.compact.inline.max.delta.seconds"
TARGET_IO_MB = "hoodie.compaction.target.io"
LOGFILE_SIZE_THRESHOLD = "hoodie.compaction.logfile.size.threshold"
PARQUET_MAX_FILE_SIZE = "hoodie.parquet.max.file.size"

register(
    ConfigKey(TRIGGER_STRATEGY, "NUM_COMMITS", "NUM_COMMITS, TIME_ELAPSED, NUM_AND_TIME or NUM_OR_TIME"),
    ConfigKey(MAX_DELTA_COMMITS, "5", "Delta commits since the last compaction that trigger one"),
    ConfigKey(MAX_DELTA_SECONDS, str(60 * 60), "Seconds since the last compaction that trigger one"),
    ConfigKey(TARGET_IO_MB, str(500 * 1024), "IO budget (MB) of one compaction plan"),
    ConfigKey(LOGFILE_SIZE_THRESHOLD, "0", "Only compact file slices whose logs total at least this many bytes"),
    ConfigKey(PARQUET_MAX_FILE_SIZE, str(120 * 1024 * 1024), "Target base file size"),
    ConfigKey("hoodie.compaction.strategy",
              "org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy"),
)

TRIGGER_STRATEGIES = ("NUM_COMMITS", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME")
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


def compaction_due(instants: Sequence[Instant], config: HoodieConfig, now_ts: str) -> TriggerDecision:
    """Evaluate ``hoodie.compact.inline.trigger.strategy`` as Hudi's scheduler does."""
    strategy = (config.get(TRIGGER_STRATEGY) or "NUM_COMMITS").upper()
    if strategy not in TRIGGER_STRATEGIES:
        raise HoodieConfigError(
            f"{TRIGGER_STRATEGY}={strategy!r} is not supported; use one of {', '.join(TRIGGER_STRATEGIES)}."
        )
    max_commits = config.get_int(MAX_DELTA_COMMITS)
    max_seconds = config.get_int(MAX_DELTA_SECONDS)
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
        reason = (f"{strategy} not met: {count} delta commits (need {max_commits}), "
                  f"{elapsed:.0f}s since {ref} (need {max_seconds})")
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
    slices: Iterable[Any], excluded: set[tuple[str, str]], config: HoodieConfig
) -> list[dict[str, Any]]:
    """LogFileSizeBasedCompactionStrategy + BoundedIO: slices with logs, largest logs first.

    Slices of file groups in ``excluded`` (pending compaction or clustering) are skipped;
    operations below ``hoodie.compaction.logfile.size.threshold`` are dropped; the budget
    ``hoodie.compaction.target.io`` (MB) is spent in order, the operation that exhausts it
    still included (as Hudi does).
    """
    max_file = config.get_int(PARQUET_MAX_FILE_SIZE)
    threshold = config.get_int(LOGFILE_SIZE_THRESHOLD)
    ops = [
        build_operation(s, max_file)
        for s in slices
        if s.log_files and (s.partition_path, s.file_id) not in excluded
    ]
    ops = [op for op in ops if op["metrics"][TOTAL_LOG_FILES_SIZE] >= threshold]
    ops.sort(key=lambda op: -op["metrics"][TOTAL_LOG_FILES_SIZE])
    remaining = config.get_int(TARGET_IO_MB)
    chosen: list[dict[str, Any]] = []
    for op in ops:
        remaining -= int(op["metrics"][TOTAL_IO_MB])
        chosen.append(op)
        if remaining <= 0:
            break
    return chosen


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
    table: Any, config: HoodieConfig, instant_time: str | None = None, force: bool = False
) -> CompactionSchedule:
    """Plan a compaction on ``table`` and write ``T.compaction.requested``.

    Returns ``instant=None`` with the reason when the trigger is not met or no slice has
    log files. ``force`` skips the trigger (an operator asking explicitly).
    """
    from airflow_hoodie.table.file_system_view import FileSystemView
    from airflow_hoodie.table.instant import new_instant_time, is_utc_timeline
    from airflow_hoodie.table.timeline import TimelineWriter
    from airflow_hoodie.actions.service_common import serialize_plan

    if not table.is_mor:
        return CompactionSchedule(None, None, "table is COPY_ON_WRITE; compaction applies to MERGE_ON_READ")
    timeline = table.timeline
    instants = list(timeline.instants)
    last = max((i.timestamp for i in instants), default=None)
    ts = instant_time or new_instant_time(utc=is_utc_timeline(dict(table.config)), after=last)
    if last is not None and ts <= last:
        raise HoodieConfigError(
            f"Compaction instant {ts} must be later than every instant on the timeline (latest {last})."
        )
    if not force:
        decision = compaction_due(instants, config, ts)
        if not decision.due:
            return CompactionSchedule(None, None, decision.reason)
    view = FileSystemView(table, timeline)
    ops = select_operations(view.latest_file_slices(), pending_excluded_groups(view), config)
    if not ops:
        return CompactionSchedule(None, None, "no file slice with log files qualifies for compaction")
    plan = build_plan(ops)
    instant = Instant(ts, Action.COMPACTION, State.REQUESTED)
    TimelineWriter(table.storage, table.base_path).create_requested(
        instant, serialize_plan("HoodieCompactionPlan", plan)
    )
    return CompactionSchedule(instant, plan, f"scheduled {len(ops)} operations",
                              {"operations": len(ops),
                               "log_bytes": int(sum(o["metrics"][TOTAL_LOG_FILES_SIZE] for o in ops))})
