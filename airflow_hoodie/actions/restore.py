"""Restore: bring a table back to a completed commit by rolling back everything after it.

Hudi's restore writes ``R.restore.requested`` (Avro ``HoodieRestorePlan`` listing the
instants to undo, newest first), goes inflight, rolls each back (the upsert helper's
rollback action, one rollback instant each, so every step is itself resumable) and
completes ``R.restore`` with ``HoodieRestoreMetadata``. Cleans after the target stay (the
files they removed were older than the target's slices). A rerun after a crash resumes
the same plan and skips what is already gone.
"""

from __future__ import annotations

import time
from typing import Any

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.rollback import rollback_instant, rollback_that_removed
from airflow_hoodie.actions.service_common import (
    deserialize_plan,
    find_instant,
    serialize_plan,
)
from airflow_hoodie.actions.transaction.failed_writes import live_writes
from airflow_hoodie.actions.transaction.service_transaction import (
    transaction_manager_for,
)
from airflow_hoodie.actions.transaction.transaction_manager import ensure_locks_held
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConcurrentWriterError, HoodieConfigError
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.timeline.clean_horizon import clean_horizon
from airflow_hoodie.table.timeline.instant import Action, Instant, State

#: the instants a restore undoes after its point: writes and services in every state; Hudi 1.x
#: (versions 8/9) gives a pending clustering its own action, which must go too, or its plan
#: is left naming files the restore removed
UNDOABLE = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION, Action.LOG_COMPACTION,
            Action.CLUSTERING)


#: Hudi 0.14's HoodieRestorePlan version (with savepointToRestoreTimestamp)
RESTORE_PLAN_VERSION = 2


def restore_to(table: HoodieTable, instant_time: str, config: HoodieConfig | None = None) -> dict[str, Any]:
    """Decided and done under the table lock; refused while a task still runs on an
    instant it would undo (a live heartbeat): that task would go on writing into a table
    that no longer has its instant."""
    settings = ActionSettings.from_config(config)
    commit.prepare_for_change(table, settings.change, restoring=True)
    tm = transaction_manager_for(table, settings.lock)
    with tm.transaction(f"restore to {instant_time}"):
        _refuse_beside_running_tasks(table, tm, instant_time)
        return _restore(table, instant_time)


def _refuse_beside_running_tasks(table: HoodieTable, tm: Any, instant_time: str) -> None:
    live_writers = {i.timestamp for i in live_writes(table, tm)}
    for inst in table.reload_timeline().instants:
        if inst.is_completed or inst.timestamp <= instant_time or inst.action not in UNDOABLE:
            continue
        running = inst.timestamp in live_writers or (
            tm.heartbeats.last_beat(inst.timestamp) is not None and not tm.heartbeats.is_expired(inst.timestamp))
        if running:
            raise HoodieConcurrentWriterError(
                f"Cannot restore {table.base_uri} to {instant_time}: {inst.action} {inst.timestamp} is pending and "
                "the task running it is alive (live heartbeat). Nothing was changed; stop that task (or wait for "
                "it), then run the restore again.")


def _restore(table: HoodieTable, instant_time: str) -> dict[str, Any]:

    started = time.time()
    tl = table.reload_timeline()
    writer = table.timeline_writer()
    pending = [i for i in tl.instants if i.action == Action.RESTORE and i.state != State.COMPLETED]
    if pending:
        restore = pending[0]
        plan = deserialize_plan("HoodieRestorePlan", tl.read_plan(restore))
    else:
        target = find_instant(tl, instant_time, Action.COMMITS)
        if target is None or target.state != State.COMPLETED:
            raise HoodieConfigError(
                f"Cannot restore to {instant_time}: it is not a completed commit on the active timeline."
            )
        horizon = clean_horizon(tl)
        if horizon is not None:
            earliest = horizon.earliest_commit_to_retain
            sp = find_instant(tl, instant_time, [Action.SAVEPOINT])
            if earliest and instant_time < earliest and sp is None:
                raise HoodieConfigError(
                    f"Cannot restore to {instant_time}: cleaning removed its files (earliestCommitToRetain "
                    f"{earliest}) and no savepoint holds them."
                )
        undo = [i for i in tl.instants if i.timestamp > instant_time and i.action in UNDOABLE]
        undo.sort(key=lambda i: i.sort_key, reverse=True)
        savepoint = find_instant(tl, instant_time, [Action.SAVEPOINT])
        plan = {"instantsToRollback": [{"commitTime": i.timestamp, "action": i.action} for i in undo],
                "version": RESTORE_PLAN_VERSION,
                "savepointToRestoreTimestamp": instant_time if savepoint is not None else None}
        ts = table.new_instant_time()
        restore = writer.create_requested(Instant(ts, Action.RESTORE, State.REQUESTED),
                                          serialize_plan("HoodieRestorePlan", plan))
    ts = restore.timestamp
    if restore.state == State.REQUESTED:
        writer.transition_to_inflight(Instant(ts, Action.RESTORE, State.REQUESTED))
    rollbacks: dict[str, list[dict[str, Any]]] = {}
    for info in plan["instantsToRollback"]:
        target_ts = info["commitTime"]
        cur = table.reload_timeline()
        still = [i for i in cur.instants if i.timestamp == target_ts and i.action in UNDOABLE]
        # a resumed restore: a target an earlier attempt rolled back keeps that rollback,
        # recorded here and tidied away with the others
        rb_ts = rollback_instant(table, target_ts) if still else rollback_that_removed(table, target_ts)
        if rb_ts is None:
            continue
        rb = find_instant(table.reload_timeline(), rb_ts, [Action.ROLLBACK])
        rollbacks[target_ts] = [deserialize_plan("HoodieRollbackMetadata", table.timeline.read_details(rb))]
    meta = {
        "startRestoreTime": ts, "timeTakenInMillis": int((time.time() - started) * 1000),
        "instantsToRollback": [i["commitTime"] for i in plan["instantsToRollback"]],
        "hoodieRestoreMetadata": rollbacks, "version": 1,
        "restoreInstantInfo": plan["instantsToRollback"],
    }
    commit.complete(table, Instant(ts, Action.RESTORE, State.INFLIGHT), meta, ensure_locks_held)
    # Hudi 0.14 keeps the rollbacks only inside the restore metadata, not on the timeline
    for metas in rollbacks.values():
        for rb_meta in metas:
            # completed file last: a task killed here leaves a finished rollback, never a
            # pending one whose target is gone (it would hold the metadata table's compaction)
            writer.delete_instant_files(rb_meta["startRollbackTime"], Action.ROLLBACK, completed_first=False)
    table.reload_timeline()
    return {"instant": ts, "action": Action.RESTORE, "state": "completed", "restored_to": instant_time,
            "rolled_back": meta["instantsToRollback"]}
