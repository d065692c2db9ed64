"""Concurrency for table services: plans are scheduled under the table lock, and one plan
is executed by one task at a time (the executor holds the plan instant's heartbeat)."""

from __future__ import annotations

import secrets
from contextlib import contextmanager
from typing import Any, Iterator

from airflow_hoodie.actions.transaction.transaction_manager import TransactionManager
from airflow_hoodie.errors import HoodieConcurrentWriterError, HoodieLockError
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.table.hoodie_table import HoodieTable


def transaction_manager_for(table: HoodieTable, settings: LockSettings) -> TransactionManager:
    """The table's lock and heartbeats, with the concurrency settings the service's job gave."""
    return TransactionManager(settings, table.base_uri, table.storage, table.base_path,
                              getattr(table, "storage_options", None))


@contextmanager
def executing(tm: TransactionManager, kind: str, instant_time: str) -> Iterator[str]:
    """Claim the execution of plan ``instant_time``: refused while another task's
    heartbeat on it is live; the heartbeat goes when we are done, however we end.
    Yields the claim's token, which :func:`complete_once` checks."""
    with tm.transaction(f"start {kind} {instant_time}"):
        token = tm.heartbeats.claim(instant_time)
    if token is None:
        raise HoodieConcurrentWriterError(
            f"{kind} {instant_time} is being executed by another task (its heartbeat is live). Nothing was "
            "done; wait for that task, or retry this one after it ends — a dead executor's plan is taken over "
            "once its heartbeat expires.")
    try:
        yield token
    finally:
        tm.heartbeats.stop(instant_time)


def execution_stage() -> int:
    """An offset for the stage id in the write tokens of one execution of a plan. File
    names of a plan are otherwise the same in every execution (file id, task index,
    instant), so a stalled executor cleaning up its output would delete the files of the
    task that took its plan over and committed them."""
    return secrets.randbelow(1 << 20) * 1000 + 1000


def complete_once(tm: TransactionManager, table: HoodieTable, instant_time: str, action: str,
                  written: list[str], complete: Any, token: str | None = None) -> bool:
    """Run ``complete`` under the lock unless the plan completed meanwhile, or another
    task took it over (``token`` no longer on its heartbeat: we stalled past the expiry);
    then our own output files are deleted so none of them is ever visible. Returns
    whether we completed it; raises when the plan is another task's now, or when our
    lock was lost before we could complete (the plan stays pending for a retry)."""
    taken_over = False
    lost: HoodieLockError | None = None
    with tm.transaction(f"complete {action} {instant_time}"):
        current = table.reload_timeline().get(instant_time, action)
        if current is not None and not current.is_completed:
            if token is None or tm.heartbeats.owns(instant_time, token):
                try:
                    tm.ensure_lock_held()  # a lock lost meanwhile stops us before completing, never after
                except HoodieLockError as exc:
                    lost = exc
                else:
                    complete()
                    return True
            else:
                taken_over = True
    for rel in written:
        table.storage.delete(table.storage.join(table.base_path, rel))
    if lost is not None:
        raise lost
    if taken_over:
        raise HoodieConcurrentWriterError(
            f"{action} {instant_time} was taken over by another task while this one stalled past its heartbeat "
            "expiry; this task's output was deleted and nothing was committed. The other task completes the "
            "plan; nothing to retry.")
    return False
