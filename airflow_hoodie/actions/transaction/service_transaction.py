"""Concurrency for table services: plans are scheduled under the table lock, and one plan
is executed by one task at a time (the executor holds the plan instant's heartbeat)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from airflow_hoodie.actions.transaction.transaction_manager import TransactionManager
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConcurrentWriterError
from airflow_hoodie.table.timeline.instant import is_utc_timeline


def transaction_manager_for(table: Any, config: HoodieConfig | None) -> TransactionManager:
    """The table's concurrency settings as the service's job configured them."""
    props = dict(table.config.items()) if hasattr(table.config, "items") else {}
    return TransactionManager(config or HoodieConfig({}), table.base_uri, table.storage, table.base_path,
                              getattr(table, "storage_options", None), is_utc_timeline(props))


@contextmanager
def executing(tm: TransactionManager, kind: str, instant_time: str) -> Iterator[None]:
    """Claim the execution of plan ``instant_time``: refused while another task's
    heartbeat on it is live; the heartbeat goes when we are done, however we end."""
    with tm.transaction(f"start {kind} {instant_time}"):
        claimed = tm.heartbeats.claim(instant_time)
    if not claimed:
        raise HoodieConcurrentWriterError(
            f"{kind} {instant_time} is being executed by another task (its heartbeat is live). Nothing was "
            "done; wait for that task, or retry this one after it ends — a dead executor's plan is taken over "
            "once its heartbeat expires.")
    try:
        yield
    finally:
        tm.heartbeats.stop(instant_time)


def complete_once(tm: TransactionManager, table: Any, instant_time: str, action: str,
                  written: list[str], complete: Any) -> bool:
    """Run ``complete`` under the lock unless the plan completed meanwhile (an executor
    that lost its heartbeat and was taken over); then our own output files are deleted so
    none of them is ever visible. Returns whether we completed it."""
    with tm.transaction(f"complete {action} {instant_time}"):
        current = table.reload_timeline().get(instant_time, action)
        if current is not None and not current.is_completed:
            complete()
            return True
    for rel in written:
        table.storage.delete(table.storage.join(table.base_path, rel))
    return False
