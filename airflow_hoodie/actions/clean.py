"""Cleaning: delete file slices no reader needs any more, under Hudi's three policies.

Planning picks the *earliest commit to retain* (KEEP_LATEST_COMMITS: the N-th newest
completed commit, never past the oldest pending write; KEEP_LATEST_BY_HOURS: the first
commit within N hours of the latest instant) and then, per file group, the slices to
delete. KEEP_LATEST_FILE_VERSIONS keeps the newest N slices of each group instead. A
slice is never deleted when a savepoint holds its base file or a pending compaction
still needs it; replaced (clustered) file groups go once their replace commit is older
than the retention bound. The plan is Hudi's Avro ``HoodieCleanerPlan`` in
``T.clean.requested``; deletes run as executor tasks; ``T.clean`` carries the Avro
``HoodieCleanMetadata`` with ``earliestCommitToRetain``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Iterable, Mapping, Sequence

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.executor import Executor
from airflow_hoodie.actions.service_common import (
    action_instant,
    completed_commits,
    crash_point,
    deserialize_plan,
    instant_minus_hours,
    is_completed,
    is_pending,
    serialize_plan,
)
from airflow_hoodie.actions.transaction.failed_writes import rollback_failed_writes
from airflow_hoodie.actions.transaction.service_transaction import (
    transaction_manager_for,
)
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.clean import (  # noqa: F401 - the service's keys, for its callers
    COMMITS_RETAINED,
    FILE_VERSIONS_RETAINED,
    HOURS_RETAINED,
    POLICY,
)
from airflow_hoodie.config_keys.concurrency import LAZY
from airflow_hoodie.errors import HoodieIOError
from airflow_hoodie.settings.clean import (
    KEEP_LATEST_BY_HOURS,
    KEEP_LATEST_COMMITS,
    KEEP_LATEST_FILE_VERSIONS,
    CleanSettings,
)
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.service_outcomes import record_nothing_planned
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action, Instant, State

CLEAN_PLAN_VERSION = 2
CLEAN_METADATA_VERSION = 2


def earliest_commit_to_retain(
    instants: Sequence[Instant], policy: str, commits_retained: int, hours_retained: int,
    latest_instant: str | None,
) -> Instant | None:
    """Hudi's CleanerUtils.getEarliestCommitToRetain over the commits+compaction timeline.

    KEEP_LATEST_COMMITS: with more than N completed commits, the N-th newest; if a write
    or compaction is still pending and older than that, the last completed commit before
    it instead (its files must survive until it finishes). KEEP_LATEST_BY_HOURS: the
    first completed commit at or after ``latest_instant - N hours``.
    """
    commits_and_compaction = sorted(
        (i for i in instants if i.action in Action.WRITE),
        key=lambda i: i.sort_key,
    )
    completed = [i for i in commits_and_compaction if is_completed(i)]
    if policy == KEEP_LATEST_COMMITS:
        if len(completed) <= commits_retained:
            return None
        nth = completed[len(completed) - commits_retained]
        pending = [i for i in commits_and_compaction if is_pending(i)]
        if pending and nth.timestamp > pending[0].timestamp:
            before = [c for c in completed if c.timestamp < pending[0].timestamp]
            return before[-1] if before else None
        return nth
    if policy == KEEP_LATEST_BY_HOURS:
        if latest_instant is None:
            return None
        bound = instant_minus_hours(latest_instant, hours_retained)
        return next((c for c in completed if c.timestamp >= bound), None)
    return None


@dataclass
class CleanInputs:
    """What the per-file-group decision needs besides the file groups themselves."""

    policy: str
    earliest_to_retain: Instant | None
    file_versions_retained: int
    savepointed_files: set[str] = field(default_factory=set)
    #: (partition, file_id) -> base instant of the slice the pending compaction reads
    pending_compaction_base: dict[tuple[str, str], str] = field(default_factory=dict)
    #: (partition, file_id) -> the replacecommit that replaced the group
    replaced: dict[tuple[str, str], str] = field(default_factory=dict)
    latest_instant: str | None = None


def _slice_files(slice_: Any) -> list[Any]:
    files = [slice_.base_file] if slice_.base_file is not None else []
    return files + list(slice_.log_files)


def _needed_by_compaction(slice_: Any, inputs: CleanInputs) -> bool:
    """The slice a pending compaction reads, and every later one: the slice it opens holds
    the logs written since it was planned, which no other file carries until it runs (Hudi's
    isFileSliceNeededForPendingMajorCompaction)."""
    base = inputs.pending_compaction_base.get((slice_.partition_path, slice_.file_id))
    return base is not None and slice_.base_instant >= base


def _savepointed(slice_: Any, inputs: CleanInputs) -> bool:
    return slice_.base_file is not None and slice_.base_file.file_name in inputs.savepointed_files


def files_to_clean(file_groups: Iterable[Any], inputs: CleanInputs) -> list[Any]:
    """Base and log files (objects with .path/.file_name/.partition_path) to delete."""
    out: list[Any] = []
    earliest = inputs.earliest_to_retain
    for fg in file_groups:
        slices = sorted(fg.slices, key=lambda s: s.base_instant, reverse=True)
        if not slices:
            continue
        key = (fg.partition_path, fg.file_id)
        if key in inputs.replaced:
            # A replaced group leaves once its replace commit falls out of retention.
            replace_ts = inputs.replaced[key]
            if inputs.policy == KEEP_LATEST_FILE_VERSIONS:
                eligible = inputs.latest_instant is None or replace_ts <= inputs.latest_instant
            else:
                eligible = earliest is not None and replace_ts < earliest.timestamp
            if eligible:
                for s in slices:
                    if not _savepointed(s, inputs):
                        out.extend(_slice_files(s))
            continue
        if inputs.policy == KEEP_LATEST_FILE_VERSIONS:
            keep = inputs.file_versions_retained
            candidates = [s for s in slices if not _needed_by_compaction(s, inputs)]
            if key in inputs.pending_compaction_base:
                keep -= 1
            idx = 0
            while idx < len(candidates) and keep > 0:
                if not _savepointed(candidates[idx], inputs):
                    keep -= 1
                idx += 1
            for s in candidates[idx:]:
                if not _savepointed(s, inputs):
                    out.extend(_slice_files(s))
            continue
        if earliest is None:
            continue
        last_version = slices[0].base_instant
        before_retain = next((s.base_instant for s in slices if s.base_instant < earliest.timestamp), None)
        for s in slices:
            if _savepointed(s, inputs):
                continue
            if s.base_instant in (last_version, before_retain):
                continue
            if not _needed_by_compaction(s, inputs) and s.base_instant < earliest.timestamp:
                out.extend(_slice_files(s))
    return out


def build_cleaner_plan(
    files: Sequence[Any], earliest: Instant | None, last_completed_commit: str | None, policy: str,
    uri_of: Any = lambda p: p,
) -> dict[str, Any]:
    """Hudi's ``HoodieCleanerPlan`` (version 2: full paths per partition)."""
    per_partition: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        per_partition.setdefault(f.partition_path, []).append(
            {"filePath": uri_of(f.path), "isBootstrapBaseFile": False}
        )
    return {
        "earliestInstantToRetain": action_instant(earliest) if earliest else None,
        "lastCompletedCommitTimestamp": last_completed_commit or "",
        "policy": policy,
        "filesToBeDeletedPerPartition": {},
        "version": CLEAN_PLAN_VERSION,
        "filePathsToBeDeletedPerPartition": per_partition,
        "partitionsToBeDeleted": [],
        "extraMetadata": None,
    }


def build_clean_metadata(
    plan: Mapping[str, Any], start_ts: str, results: Sequence[tuple[str, str, bool]], took_ms: int
) -> dict[str, Any]:
    """Hudi's ``HoodieCleanMetadata`` from the plan and per-file (partition, path, ok) results."""
    parts: dict[str, dict[str, Any]] = {}
    for partition in plan["filePathsToBeDeletedPerPartition"]:
        parts[partition] = {"partitionPath": partition, "policy": plan["policy"], "deletePathPatterns": [],
                            "successDeleteFiles": [], "failedDeleteFiles": [], "isPartitionDeleted": False}
    for partition, path, ok in results:
        name = path.rsplit("/", 1)[-1]
        entry = parts[partition]
        entry["deletePathPatterns"].append(name)
        entry["successDeleteFiles" if ok else "failedDeleteFiles"].append(name)
    earliest = plan.get("earliestInstantToRetain")
    return {
        "startCleanTime": start_ts,
        "timeTakenInMillis": took_ms,
        "totalFilesDeleted": sum(1 for _, _, ok in results if ok),
        "earliestCommitToRetain": earliest["timestamp"] if earliest else "",
        "lastCompletedCommitTimestamp": plan.get("lastCompletedCommitTimestamp") or "",
        "partitionMetadata": parts,
        "version": CLEAN_METADATA_VERSION,
        "bootstrapPartitionMetadata": {},
        "extraMetadata": None,
    }


# ======================================================================== table level
def _latest_completed_commit(instants: Sequence[Instant]) -> str | None:
    done = completed_commits(instants)
    return done[-1].timestamp if done else None


def plan_clean(table: HoodieTable, settings: CleanSettings, instant_time: str | None = None) -> tuple[Instant | None, dict[str, Any] | None, str]:
    """Compute the cleaner plan and write ``T.clean.requested``; (None, None, reason) if nothing to do."""

    policy = settings.policy
    tl = table.reload_timeline()
    instants = tl.instants
    latest = instants[-1].timestamp if instants else None
    earliest = earliest_commit_to_retain(instants, policy, settings.commits_retained,
                                         settings.hours_retained, latest)
    if policy != KEEP_LATEST_FILE_VERSIONS and earliest is None:
        keep = (f"{HOURS_RETAINED}={settings.hours_retained}" if policy == KEEP_LATEST_BY_HOURS
                else f"{COMMITS_RETAINED}={settings.commits_retained}")
        return None, None, (f"{policy}: not enough commits to clean yet: {len(completed_commits(instants))} "
                            f"completed commits, all within the retention ({keep})")
    view = table.file_system_view(tl)
    groups = view.service_file_groups()
    inputs = CleanInputs(
        policy, earliest, settings.file_versions_retained,
        savepointed_files=view.savepointed_files(),
        pending_compaction_base={k: op["baseInstantTime"] for k, (_, op) in
                                 view.pending_compaction_operations().items()},
        replaced=view.replace_instants_by_group(), latest_instant=latest,
    )
    # Slices of a pending clustering stay until the replacecommit completes.
    pending_cluster = view.pending_clustering_file_groups()
    files = files_to_clean([fg for k, fg in sorted(groups.items()) if k not in pending_cluster], inputs)
    if not files:
        kept = (f"no file group has more than {FILE_VERSIONS_RETAINED}={settings.file_versions_retained} "
                "file versions" if policy == KEEP_LATEST_FILE_VERSIONS else
                f"no file group has a file slice replaced before the earliest commit to retain, {earliest.timestamp}")
        held = f"; {len(pending_cluster)} file groups wait for a pending clustering" if pending_cluster else ""
        return None, None, f"{policy}: no file slice is out of retention: {len(groups)} file groups, {kept}{held}"
    plan = build_cleaner_plan(files, earliest, _latest_completed_commit(instants), policy,
                              uri_of=lambda p: table.storage.uri(p))
    ts = instant_time or table.new_instant_time()
    instant = Instant(ts, Action.CLEAN, State.REQUESTED)
    table.timeline_writer().create_requested(instant, serialize_plan("HoodieCleanerPlan", plan))
    return instant, plan, f"{len(files)} files to delete"


def _delete_task(base_uri: str, storage_options: Mapping[str, str], item: tuple[str, str]) -> tuple[str, str, bool]:
    """One delete (executor task): (partition, path, ok); a missing file counts as deleted."""

    crash_point("clean.task")
    partition, uri = item
    try:
        storage, path = Storage.for_uri(uri, dict(storage_options) or None)
        storage.delete(path)
        return partition, uri, True
    except Exception:  # noqa: BLE001 - the clean fails on it (execute_clean)
        return partition, uri, False


def execute_clean(table: HoodieTable, instant: Instant, executor: Executor, lock: LockSettings,
                  storage_options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """requested -> inflight -> delete (executor tasks) -> ``T.clean`` (idempotent)."""


    started = time.time()
    tl = table.reload_timeline()
    current = tl.get(instant.timestamp)
    if current is not None and current.state == State.COMPLETED:
        return {"instant": instant.timestamp, "action": Action.CLEAN, "state": "completed", "reason": "already completed"}
    data = tl.read_plan(Instant(instant.timestamp, Action.CLEAN, State.REQUESTED))
    plan = deserialize_plan("HoodieCleanerPlan", data)
    writer = table.timeline_writer()

    crash_point("clean.before_inflight")
    if current is None or current.state == State.REQUESTED:
        writer.transition_to_inflight(Instant(instant.timestamp, Action.CLEAN, State.REQUESTED), data)
    items = [(part, f["filePath"]) for part, fs in sorted((plan.get("filePathsToBeDeletedPerPartition") or {}).items())
             for f in fs]
    results = executor.map(partial(_delete_task, table.base_uri, dict(storage_options or {})), items)
    failed = [uri for _, uri, ok in results if not ok]
    if failed:
        # completed, the clean would let archival drop the replacecommit or the commits that
        # hide a file still there, and readers would take it for live data again (Hudi fails
        # the clean on any error but a missing file, and its retry re-runs the plan)
        raise HoodieIOError(
            f"The clean {instant.timestamp} of {table.base_uri} could not delete {len(failed)} file(s), e.g. "
            f"{failed[0]}; it stays pending. Check the storage (permissions, throttling) and run the clean task "
            "again: it resumes this plan.")
    crash_point("clean.before_commit")
    meta = build_clean_metadata(plan, instant.timestamp, results, int((time.time() - started) * 1000))
    # under the lock: completing runs the metadata table's delta commit (and its compaction),
    # which writers beside us run too
    with transaction_manager_for(table, lock).transaction(f"complete clean {instant.timestamp}"):
        current = table.reload_timeline().get(instant.timestamp)
        if current is not None and current.state == State.COMPLETED:
            return {"instant": instant.timestamp, "action": Action.CLEAN, "state": "completed",
                    "reason": "completed by another task"}
        commit.complete(table, Instant(instant.timestamp, Action.CLEAN, State.INFLIGHT), meta)
    table.reload_timeline()
    return {"instant": instant.timestamp, "action": Action.CLEAN, "state": "completed",
            "files_deleted": meta["totalFilesDeleted"], "failed": sum(1 for r in results if not r[2]),
            "earliest_commit_to_retain": meta["earliestCommitToRetain"], "policy": plan["policy"]}


def run_clean(table: HoodieTable, config: HoodieConfig, executor: Executor,
              storage_options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Finish any pending clean first (Hudi does), else plan a new one and execute it.

    Under ``hoodie.cleaner.policy.failed.writes=LAZY`` (required with optimistic
    concurrency) clean is what rolls back failed writes: those whose heartbeat expired.
    """
    settings = CleanSettings.from_config(config)
    commit.prepare_for_change(table, settings.action.change)
    tm = transaction_manager_for(table, settings.lock)
    if tm.failed_writes_policy == LAZY:
        table.reload_timeline()  # the table may have been loaded long before this clean
        rolled = rollback_failed_writes(table, tm)
    else:
        rolled = []
    tl = table.reload_timeline()
    pending = [i for i in tl.instants if i.action == Action.CLEAN and i.state != State.COMPLETED]
    if pending:
        results = [execute_clean(table, p, executor, settings.lock, storage_options) for p in pending]
        return {**results[-1], "resumed": [p.timestamp for p in pending], "rolled_back_failed_writes": rolled}
    with tm.transaction("schedule a clean"):
        instant, _plan, reason = plan_clean(table, settings)
    if instant is None:
        record_nothing_planned(table.storage, table.base_path, "clean", reason, table.timeline)
        return {"instant": None, "action": Action.CLEAN, "reason": reason, "rolled_back_failed_writes": rolled}
    return {**execute_clean(table, instant, executor, settings.lock, storage_options), "rolled_back_failed_writes": rolled}
