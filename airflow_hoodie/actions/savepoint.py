"""Savepoints: pin a completed commit so cleaning and archival keep what it needs.

A savepoint ``T.savepoint`` (inflight then completed; Hudi writes no requested file)
holds the Avro ``HoodieSavepointMetadata``: per partition, the base files of the latest
slices as of ``T``. The cleaner never deletes those files and the archiver stops before
the first savepoint, so ``as_of=T`` reads keep working (and a restore could go back).
"""

from __future__ import annotations

import time
from typing import Any

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.service_common import find_instant
from airflow_hoodie.actions.transaction.service_transaction import (
    transaction_manager_for,
)
from airflow_hoodie.actions.transaction.transaction_manager import ensure_locks_held
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.timeline.clean_horizon import (
    clean_horizon,
    files_cleaned_from,
)
from airflow_hoodie.table.timeline.instant import Action, Instant, State


def savepoint_files(table: HoodieTable, instant_time: str) -> dict[str, list[str]]:
    """partition -> base file names a reader as of ``instant_time`` uses."""
    return table.file_system_view().savepoint_files(instant_time)


def create_savepoint(table: HoodieTable, instant_time: str, user: str = "", comments: str = "",
                     config: HoodieConfig | None = None) -> dict[str, Any]:
    """Savepoint the completed commit ``instant_time`` (idempotent: an existing one is
    reported). Under the table lock, so a clean planned meanwhile either sees the
    savepoint or ran entirely before it (and then the check below refuses)."""
    settings = ActionSettings.from_config(config)
    commit.prepare_for_change(table, settings.change)
    with transaction_manager_for(table, settings.lock).transaction(f"savepoint {instant_time}"):
        return _create_savepoint(table, instant_time, user, comments)


def _create_savepoint(table: HoodieTable, instant_time: str, user: str, comments: str) -> dict[str, Any]:


    tl = table.reload_timeline()

    existing = find_instant(tl, instant_time, [Action.SAVEPOINT])
    if existing is not None and existing.state == State.COMPLETED:
        return {"instant": instant_time, "action": Action.SAVEPOINT, "state": "completed",
                "reason": "savepoint already exists"}
    inst = find_instant(tl, instant_time, Action.COMMITS)
    if inst is None or inst.state != State.COMPLETED:
        raise HoodieConfigError(
            f"Cannot savepoint {instant_time}: it is not a completed commit on the active timeline of "
            f"{table.base_uri}. Pick one listed by `airflow-hoodie timeline`."
        )
    horizon = clean_horizon(tl)
    if horizon is not None:
        earliest = horizon.earliest_commit_to_retain
        if earliest and instant_time < earliest:
            raise HoodieConfigError(
                f"Cannot savepoint {instant_time}: the last clean already removed files older than "
                f"{earliest} (its earliestCommitToRetain). Savepoint a later commit."
            )
    lost = files_cleaned_from(tl, table.file_system_view(), instant_time)
    if lost:
        raise HoodieConfigError(
            f"Cannot savepoint {instant_time}: a clean already removed {len(lost)} file(s) a read as of it needs "
            f"(e.g. {lost[0]}), so a restore to it would lose rows. Savepoint a later commit.")
    files = savepoint_files(table, instant_time)
    meta = {
        "savepointedBy": user, "savepointedAt": int(time.time() * 1000), "comments": comments,
        "partitionMetadata": {p: {"partitionPath": p, "savepointDataFile": names} for p, names in files.items()},
        "version": 1,
    }
    writer = table.timeline_writer()
    sp = Instant(instant_time, Action.SAVEPOINT, State.INFLIGHT)
    if not table.storage.exists(writer.path_of(sp)):
        writer.create_inflight(sp)
    commit.complete(table, sp, meta, ensure_locks_held, changes_listing=False)
    table.reload_timeline()
    return {"instant": instant_time, "action": Action.SAVEPOINT, "state": "completed",
            "files": sum(len(v) for v in files.values()), "partitions": len(files)}


def delete_savepoint(table: HoodieTable, instant_time: str, config: HoodieConfig | None = None) -> dict[str, Any]:
    """Remove the savepoint at ``instant_time`` (idempotent), under the table lock."""
    settings = ActionSettings.from_config(config)
    commit.prepare_for_change(table, settings.change)
    with transaction_manager_for(table, settings.lock).transaction(f"delete savepoint {instant_time}"):
        return _delete_savepoint(table, instant_time)


def _delete_savepoint(table: HoodieTable, instant_time: str) -> dict[str, Any]:


    deleted = table.timeline_writer().delete_instant_files(
        instant_time, Action.SAVEPOINT, completed_first=True)
    table.reload_timeline()
    if not deleted:
        return {"instant": None, "action": Action.SAVEPOINT, "reason": f"no savepoint at {instant_time}"}
    return {"instant": instant_time, "action": Action.SAVEPOINT, "state": "deleted", "files": deleted}
