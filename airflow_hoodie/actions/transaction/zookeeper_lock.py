"""Hudi's ZookeeperBasedLockProvider: Curator's ``InterProcessMutex`` protocol at
``<hoodie.write.lock.zookeeper.base_path>/<lock_key>`` (lock_key defaults to the table name),
so our tasks and Hudi's Java writers queue for the same lock."""

from __future__ import annotations

import os
import socket
import threading
import uuid

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.recipe.lock import Lock

from airflow_hoodie.actions.transaction.lock_provider import LockProvider
from airflow_hoodie.config_keys.locks import ZK_SESSION_TIMEOUT_MS
from airflow_hoodie.errors import HoodieLockError
from airflow_hoodie.settings.lock import ZooKeeperLockSettings

# Curator's InterProcessMutex names its nodes "lock-" after the "_c_<uuid>-" of its protected
# mode, and orders them by what follows the last "lock-": the sequence number.
CURATOR_LOCK_NAME = "lock-"
CURATOR_PROTECTED_PREFIX = "_c_"
KAZOO_LOCK_NAME = "__lock__"  # the nodes earlier versions of this provider created


class CuratorMutex(Lock):
    """kazoo's lock recipe creating Curator ``InterProcessMutex`` nodes
    (ephemeral-sequential ``_c_<uuid>-lock-<seq>``) and queueing behind both those and
    kazoo's own ``<hex>__lock__<seq>`` nodes, by sequence number, as Curator does: the
    lowest sequence holds the lock, every other contender watches the one before it."""

    _NODE_NAME = CURATOR_LOCK_NAME
    _EXCLUDE_NAMES = [CURATOR_LOCK_NAME, KAZOO_LOCK_NAME]

    def __init__(self, client: KazooClient, path: str, identifier: str) -> None:
        super().__init__(client, path, identifier)
        self.prefix = f"{CURATOR_PROTECTED_PREFIX}{uuid.uuid4()}-{CURATOR_LOCK_NAME}"
        self.create_path = f"{self.path}/{self.prefix}"

    def forget(self) -> None:
        """Drop a hold whose node the server already deleted with our expired session."""
        self.is_acquired, self.node = False, None


class ZookeeperBasedLockProvider(LockProvider):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        own = self.settings.provider_settings
        assert isinstance(own, ZooKeeperLockSettings)
        hosts = own.hosts
        self.path = own.path
        self.hosts = hosts
        self.client = KazooClient(hosts=hosts, timeout=own.session_timeout_s)
        try:
            self.client.start(timeout=own.connection_timeout_s)
        except KazooTimeoutError as exc:
            raise HoodieLockError(f"Cannot reach ZooKeeper at {hosts} for the table lock: {exc}") from exc
        self.lock = CuratorMutex(self.client, self.path, f"{socket.gethostname()}:{os.getpid()}")
        self._held = False
        self._session_id: int | None = None
        self._session_lost = threading.Event()
        self.client.add_listener(self._on_state)

    def _on_state(self, state: str) -> None:
        """A lost session took our ephemeral node with it: whoever queued next holds the lock now."""
        if state == KazooState.LOST:
            self._session_lost.set()

    def try_lock(self, timeout_s: float) -> bool:
        try:
            self._held = bool(self.lock.acquire(timeout=max(timeout_s, 0.001)))
        except LockTimeout:
            self._held = False
        except KazooException as exc:
            raise HoodieLockError(f"ZooKeeper lock {self.path} at {self.hosts} failed: {exc}") from exc
        if self._held:
            # the session our node lives in (kazoo re-creates the node when a session is
            # replaced while we queue); ensure_held checks the node's owner against it
            self._session_id = self.client.client_id[0] if self.client.client_id else None
            self._session_lost.clear()
        return self._held

    def ensure_held(self) -> None:
        """Our node still exists and belongs to our session: ZooKeeper deletes it when the
        session expires (a stall longer than the session timeout), and then the next
        contender, a Java writer maybe, holds the lock."""
        reason = "it was never taken"
        if self._held:
            reason = "the ZooKeeper session expired"
            if not self._session_lost.is_set():
                try:
                    stat = self.client.exists(f"{self.path}/{self.lock.node}")
                except KazooException as exc:
                    stat, reason = None, f"ZooKeeper cannot confirm it ({type(exc).__name__})"
                if stat is not None and stat.ephemeralOwner == self._session_id:
                    return
        raise HoodieLockError(
            f"The {self.describe()} is no longer ours: {reason}, and another writer may hold it. Nothing was "
            f"completed; retry the task. If this process stalls often, raise {ZK_SESSION_TIMEOUT_MS}.")

    def unlock(self) -> None:
        if self._held:
            self._held = False
            if self._session_lost.is_set():
                self.lock.forget()
                return
            try:
                self.lock.release()
            except KazooException as exc:
                raise HoodieLockError(f"Releasing the {self.describe()} failed: {exc}; ZooKeeper releases it "
                                      f"when this session ends ({ZK_SESSION_TIMEOUT_MS}).") from exc

    def close(self) -> None:
        try:
            self.unlock()
        finally:
            self.client.remove_listener(self._on_state)
            self.client.stop()
            self.client.close()

    def describe(self) -> str:
        return f"ZooKeeper lock {self.path} at {self.hosts}"

    def holder(self) -> str:
        try:
            return ", ".join(self.lock.contenders()) or "nobody"
        except KazooException:
            return "unknown"
