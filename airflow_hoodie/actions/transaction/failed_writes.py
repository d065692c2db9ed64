"""Which pending writes have failed, and rolling them back safely.

A pending write is failed only when its heartbeat expired: a writer that is merely slow
keeps beating and is left alone. The decision is re-made under the table lock right
before the rollback, so an instant that completed meanwhile is never touched.
"""

from __future__ import annotations

from airflow_hoodie.actions.transaction.transaction_manager import TransactionManager
from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.timeline.instant import Instant


def pending_writes(table: HoodieTable) -> list[Instant]:
    """Pending commits, deltacommits and non-clustering replacecommits (services excluded:
    their plans are re-executed, never rolled back by a writer)."""
    from airflow_hoodie.actions.rollback import is_rollbackable_pending_write  # noqa: PLC0415 - rollback imports us

    return [i for i in table.timeline.pending().instants if is_rollbackable_pending_write(table, i)]


def live_writes(table: HoodieTable, tm: TransactionManager, exclude: str | None = None) -> list[Instant]:
    return [i for i in pending_writes(table)
            if i.timestamp != exclude and not tm.heartbeats.is_expired(i.timestamp)]


def failed_writes(table: HoodieTable, tm: TransactionManager) -> list[Instant]:
    return [i for i in pending_writes(table) if tm.heartbeats.is_expired(i.timestamp)]


def rollback_failed_writes(table: HoodieTable, tm: TransactionManager) -> list[str]:
    """Roll back every failed write; returns their instant times."""
    from airflow_hoodie.actions.rollback import rollback_instant  # noqa: PLC0415 - rollback imports us

    done = []  # judged on the caller's timeline; each candidate is judged again under the lock
    for candidate in failed_writes(table, tm):
        with tm.transaction(f"roll back failed write {candidate.timestamp}"):
            table.reload_timeline()
            current = table.timeline.get(candidate.timestamp)
            if current is None or current.is_completed or not tm.heartbeats.is_expired(candidate.timestamp):
                continue  # completed, rolled back or revived meanwhile
            try:
                rollback_instant(table, candidate.timestamp, pending_only=True)
            except HoodieTimelineError:
                continue  # completed after all (without a lock, SINGLE_WRITER): it stays
        tm.heartbeats.stop(candidate.timestamp)
        done.append(candidate.timestamp)
    if done:
        table.reload_timeline()
    return done
