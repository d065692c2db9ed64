"""The one execution skeleton of a planned table service (compaction, clustering).

The plan is on the timeline as ``T.<action>.requested``. Running it, whoever runs it and
however often: reload the timeline, find the plan, roll back a dead earlier attempt (an
inflight left by a killed task), move the plan inflight, map its operations over executor
tasks, then reconcile markers and complete the instant under the table lock, once, even
when two tasks race for the same plan. Each service supplies only what differs: how its
plan reads, which partitions it touches, the work of its tasks and its commit metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.cdc_write import compaction_logs_changes
from airflow_hoodie.actions.rollback import undo_metadata_commit
from airflow_hoodie.actions.service_common import (
    crash_point,
    find_instant,
    reconcile_with_markers,
    rollback_pending_service,
    table_avro_schema,
    table_props,
)
from airflow_hoodie.actions.transaction.service_transaction import (
    complete_once,
    execution_stage,
    transaction_manager_for,
)
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.write import INDEX_TYPE
from airflow_hoodie.settings.base_file import BaseFileSettings
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.layout import LayoutSpec
from airflow_hoodie.table.log.cdc_block import DATA_BEFORE_AFTER
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata
from airflow_hoodie.table.record_merger import MergeConfig, merge_config_from_table
from airflow_hoodie.table.timeline.instant import Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline

Stats = list[dict[str, Any]]
#: outcomes of one run
DONE, ALREADY_COMPLETED, COMPLETED_BY_ANOTHER = "done", "already completed", "completed by another task"


@dataclass(frozen=True)
class PlannedService:
    """What one kind of planned service contributes to the skeleton."""

    action: str  #: the pending instant's action (``compaction``, ``replacecommit``)
    name: str  #: crash-point prefix in tests (``compaction``, ``clustering``)
    load_plan: Callable[[Timeline, Instant], Any]
    partitions: Callable[[Any], list[str]]
    #: (plan, timeline, table schema) -> write stats, the executor tasks' work
    run: Callable[[Any, Timeline, dict[str, Any]], Stats]
    #: (plan, stats, table schema) -> the completed instant's content
    commit_body: Callable[[Any, Stats, dict[str, Any]], CommitMetadata]
    #: (plan, stats) -> more write stats, written under the table lock just before completing:
    #: work that depends on files other writers may add until then (no write commits meanwhile)
    at_commit: Callable[[Any, Stats], Stats] | None = None


@dataclass
class ServiceRun:
    """What one execution of a plan did."""

    outcome: str
    plan: Any = None
    stats: Stats = field(default_factory=list)
    rolled_back: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ServiceTaskContext:
    """Everything one task of a planned service needs (picklable, shipped to executors)."""

    base_uri: str
    storage_options: dict[str, str]
    base_path: str
    instant_time: str
    avro_schema: dict[str, Any]
    #: how slices merge (the table's properties) and how new base files are written (the
    #: table's properties under the job's options): parsed once, on the driver
    merge_config: MergeConfig
    file_settings: BaseFileSettings
    valid_instants: frozenset[str]
    stage_offset: int = 0  # execution_stage(): file names unique to this execution
    #: log blocks of older instants belong to archived commits (Timeline.first_non_savepoint_commit)
    timeline_start: str | None = None
    sort_columns: tuple[str, ...] = ()  # clustering: the columns its output files are sorted by
    #: a CDC table's .cdc log suffix (its release line's), None when the service logs no changes:
    #: a compaction logs what it merged only where Hudi's does (cdc_write.compaction_logs_changes)
    cdc_log_suffix: str | None = None
    #: that table's supplemental logging mode (HoodieCDCSupplementalLoggingMode): what its records hold
    cdc_logging_mode: str = DATA_BEFORE_AFTER
    #: clustering: how rows are ordered by those columns (linear, or along a space-filling curve)
    layout: LayoutSpec = field(default_factory=LayoutSpec)

    @classmethod
    def for_plan(cls, table: HoodieTable, instant_time: str, timeline: Timeline, schema: dict[str, Any],
                 options: Mapping[str, str], storage_options: Mapping[str, str] | None,
                 sort_columns: tuple[str, ...] = (), layout: LayoutSpec | None = None) -> "ServiceTaskContext":
        if storage_options is None:  # the options the table was opened with
            storage_options = getattr(table, "storage_options", None)
        props = {**table_props(table), **options}
        return cls(table.base_uri, dict(storage_options or {}), table.base_path, instant_time, schema,
                   merge_config_from_table(props), BaseFileSettings.from_config(props),
                   valid_instants_before(timeline, instant_time), execution_stage(),
                   timeline.first_non_savepoint_commit(), sort_columns,
                   table.format.release.cdc_log_suffix
                   if compaction_logs_changes(table.config.cdc_enabled, props.get(INDEX_TYPE)) else None,
                   table.config.cdc_logging_mode,
                   layout or LayoutSpec())


def written_files(stats: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every file a service's stats name: base files and a CDC table's .cdc logs."""
    return {s["path"] for s in stats} | {p for s in stats for p in s.get("cdcStats") or {}}


def valid_instants_before(timeline: Timeline, instant_time: str) -> frozenset[str]:
    """Completed instants older than the plan: the file slices its tasks may read."""
    return frozenset(i.timestamp for i in timeline.instants if i.state == State.COMPLETED and i.timestamp < instant_time)


def execute_planned(service: PlannedService, table: HoodieTable, instant_time: str, lock: LockSettings,
                    token: str | None) -> ServiceRun:
    """Run the plan at ``instant_time`` to completion (idempotent; see the module doc)."""
    timeline = table.reload_timeline()
    inst = find_instant(timeline, instant_time, [service.action])
    if inst is None or inst.state == State.COMPLETED:
        return ServiceRun(ALREADY_COMPLETED)
    table.check_records_writable(f"The {service.name} {instant_time}")
    plan = service.load_plan(timeline, inst)
    writer = table.timeline_writer()
    rolled: list[str] = []
    if inst.state == State.INFLIGHT:
        rolled = rollback_pending_service(table, instant_time, service.partitions(plan))
        # a metadata-table rollback (and the services its delta commits run): under the table lock
        with transaction_manager_for(table, lock).transaction(f"undo the metadata commit of {instant_time}"):
            undo_metadata_commit(table, instant_time)
        writer.revert_to_requested(inst)
    crash_point(f"{service.name}.before_inflight")
    # the pending action as the timeline has it (a clustering is ``clustering`` on Hudi 1.x
    # tables, a pending ``replacecommit`` before)
    pending = inst.action
    writer.transition_to_inflight(Instant(instant_time, pending, State.REQUESTED))
    crash_point(f"{service.name}.after_inflight")
    schema = table_avro_schema(table)
    stats = service.run(plan, timeline, schema)
    crash_point(f"{service.name}.before_commit")
    written = [s["path"] for s in stats]

    def finish() -> None:  # under the lock, only while the plan is still ours
        more = service.at_commit(plan, stats) if service.at_commit is not None else []
        stats.extend(more)
        written.extend(s["path"] for s in more)
        body = service.commit_body(plan, stats, schema)
        commit.complete(table, Instant(instant_time, pending, State.INFLIGHT), body,
                        lambda: reconcile_with_markers(table, instant_time, written_files(stats)))

    done = complete_once(transaction_manager_for(table, lock), table, instant_time, service.action,
                         written, finish, token)
    mk.delete_marker_dir(table.storage, table.base_path, instant_time)
    if not done:
        return ServiceRun(COMPLETED_BY_ANOTHER, plan, stats, rolled)
    table.reload_timeline()
    return ServiceRun(DONE, plan, stats, rolled)


def execute_given_or_pending(execute: Callable[[str], dict[str, Any]], instant_time: str | None,
                             pending: Callable[[], list[Instant]], action: str, name: str) -> dict[str, Any]:
    """Run the plan ``instant_time``, or every pending plan oldest first (Hudi's executors run
    pending plans in order); the last run's result, with every instant run."""
    if instant_time:
        return execute(instant_time)
    plans = pending()
    if not plans:
        return {"instant": None, "action": action, "reason": f"no pending {name}"}
    results = [execute(p.timestamp) for p in plans]
    return {**results[-1], "instants": [r["instant"] for r in results], "runs": results}


def task_options(config: HoodieConfig | None) -> dict[str, str]:
    """The job's options as its executor tasks receive them: a task runs in another process
    (a Spark executor), so it gets the options as plain strings and parses what it needs once,
    at its own entry."""
    return config.as_dict() if config is not None else {}
