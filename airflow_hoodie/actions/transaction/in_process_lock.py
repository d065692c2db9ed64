"""Hudi's InProcessLockProvider: one lock per table path inside this process, for
several writers (threads) of one driver."""

from __future__ import annotations

import threading

from airflow_hoodie.actions.transaction.lock_provider import LockProvider

_LOCKS: dict[str, threading.Lock] = {}
_GUARD = threading.Lock()


def _table_lock(base_uri: str) -> threading.Lock:
    with _GUARD:
        return _LOCKS.setdefault(base_uri.rstrip("/"), threading.Lock())


class InProcessLockProvider(LockProvider):
    _held = False

    def try_lock(self, timeout_s: float) -> bool:
        self._held = _table_lock(self.base_uri).acquire(timeout=max(timeout_s, 0))
        return self._held

    def unlock(self) -> None:
        if self._held:
            self._held = False
            _table_lock(self.base_uri).release()

    def describe(self) -> str:
        return f"in-process lock of {self.base_uri}"
