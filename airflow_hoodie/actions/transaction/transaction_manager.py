"""Which concurrency mode a table runs in, and the table lock around the moments that
must not interleave (scheduling a plan, deciding a rollback, checking and committing).

``hoodie.write.concurrency.mode``: SINGLE_WRITER (Hudi's default) takes no lock and
refuses to start beside another live writer; OPTIMISTIC_CONCURRENCY_CONTROL lets
writers overlap and serializes only their commits, each checked for conflicts;
NON_BLOCKING_CONCURRENCY_CONTROL takes the lock for the same timeline steps but checks
no conflicts between writers (:mod:`~airflow_hoodie.actions.transaction.nbcc`).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Mapping

from airflow_hoodie.actions.transaction import lock_provider as lp
from airflow_hoodie.actions.transaction.heartbeat import Heartbeats
from airflow_hoodie.config_keys.locks import NUM_RETRIES, WAIT_TIME_MS
from airflow_hoodie.errors import HoodieLockError
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.table.storage.storage import Storage

# The table locks this thread (task) holds now, innermost last: what a completion checks.
_HELD: ContextVar[tuple[lp.LockProvider, ...]] = ContextVar("hoodie_held_locks", default=())


def ensure_locks_held() -> None:
    """Raise :class:`HoodieLockError` if a table lock this task holds was lost meanwhile
    (ZooKeeper session expired, DynamoDB lease taken over after a stall). Completions run
    it right before writing the completed instant: after that write it is too late,
    before it the instant can still be rolled back. No-op when no lock is held (single
    writer, or a step that runs outside the lock)."""
    for provider in _HELD.get():
        provider.ensure_held()


def _table_key(base_uri: str) -> str:
    return base_uri.rstrip("/")


class TransactionManager:
    """Concurrency settings, heartbeats and the lock of one table, for one client."""

    def __init__(self, settings: LockSettings, base_uri: str, storage: Storage, base_path: str,
                 storage_options: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self.mode = settings.mode
        self.failed_writes_policy = settings.failed_writes_policy
        self.base_uri = base_uri
        self.storage_options = dict(storage_options or {})
        self.heartbeats = Heartbeats(storage, base_path, settings)

    @property
    def is_occ(self) -> bool:
        return self.settings.is_occ

    @property
    def is_nbcc(self) -> bool:
        return self.settings.is_nbcc

    @property
    def is_multi_writer(self) -> bool:
        """OCC or NBCC: the timeline steps run under the table lock."""
        return self.settings.is_multi_writer

    @contextmanager
    def transaction(self, purpose: str) -> Iterator[None]:
        """Hold the table lock (with several writers; a single writer needs none) for ``purpose``;
        released on every exit, exceptions and SIGTERM-turned-SystemExit included."""
        if not self.is_multi_writer or self.holds_lock():
            # a step inside a transaction of this table (an aborted commit's rollback): the
            # one lock scope covers it; taking the lock again would wait for ourselves
            yield
            return
        provider = lp.lock_provider_for(self.settings, self.base_uri, self.storage_options)
        try:
            self._acquire(provider, purpose)
            held = _HELD.set(_HELD.get() + (provider,))
            try:
                yield
            finally:
                _HELD.reset(held)
                provider.unlock()
        finally:
            provider.close()

    def holds_lock(self) -> bool:
        """Whether this task holds this table's lock now (taken by any manager of the table)."""
        mine = _table_key(self.base_uri)
        return any(_table_key(p.base_uri) == mine for p in _HELD.get())

    def ensure_lock_held(self) -> None:
        """:func:`ensure_locks_held`, for callers that have the manager at hand."""
        ensure_locks_held()

    def _acquire(self, provider: lp.LockProvider, purpose: str) -> None:
        s = self.settings
        wait_s, retries, retry_wait_s, max_wait_s = s.wait_s, s.retries, s.retry_wait_s, s.max_retry_wait_s
        client_retries, client_wait_s = s.client_retries, s.client_retry_wait_s
        for client_attempt in range(client_retries + 1):
            for attempt in range(retries + 1):
                if provider.try_lock(wait_s):
                    return
                if attempt < retries:
                    time.sleep(min(retry_wait_s * (2 ** attempt), max_wait_s))
            if client_attempt < client_retries:
                time.sleep(client_wait_s)
        raise HoodieLockError(
            f"Could not take the {provider.describe()} to {purpose} on {self.base_uri} "
            f"(held by {provider.holder()}). Another task holds it; retry the task, or raise "
            f"{WAIT_TIME_MS} / {NUM_RETRIES} if commits on this table are long.")
