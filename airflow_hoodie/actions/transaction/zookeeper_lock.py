"""Hudi's ZookeeperBasedLockProvider: a ZooKeeper lock recipe at
``<hoodie.write.lock.zookeeper.base_path>/<lock_key>`` (lock_key defaults to the table name)."""

from __future__ import annotations

import os
import socket

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.handlers.threading import KazooTimeoutError

from airflow_hoodie.actions.transaction.lock_provider import LockProvider
from airflow_hoodie.config import ConfigKey, register
from airflow_hoodie.errors import HoodieConfigError, HoodieLockError

ZK_URL = "hoodie.write.lock.zookeeper.url"
ZK_PORT = "hoodie.write.lock.zookeeper.port"
ZK_BASE_PATH = "hoodie.write.lock.zookeeper.base_path"
ZK_LOCK_KEY = "hoodie.write.lock.zookeeper.lock_key"
ZK_SESSION_TIMEOUT_MS = "hoodie.write.lock.zookeeper.session_timeout_ms"
ZK_CONNECTION_TIMEOUT_MS = "hoodie.write.lock.zookeeper.connection_timeout_ms"

register(
    ConfigKey(ZK_URL, None, "ZooKeeper quorum (host or host:port list)"),
    ConfigKey(ZK_PORT, None, "ZooKeeper port, when the url has none"),
    ConfigKey(ZK_BASE_PATH, None, "Base znode for the table locks"),
    ConfigKey(ZK_LOCK_KEY, None, "Lock znode name (default: hoodie.table.name)"),
    ConfigKey(ZK_SESSION_TIMEOUT_MS, "60000", ""),
    ConfigKey(ZK_CONNECTION_TIMEOUT_MS, "15000", ""),
)


class ZookeeperBasedLockProvider(LockProvider):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        url, base = self.config.get(ZK_URL), self.config.get(ZK_BASE_PATH)
        key = self.config.get(ZK_LOCK_KEY) or self.config.get("hoodie.table.name")
        if not url or not base or not key:
            raise HoodieConfigError(
                f"ZookeeperBasedLockProvider needs {ZK_URL}, {ZK_BASE_PATH} and {ZK_LOCK_KEY} "
                "(or hoodie.table.name); set them with the job's --hoodie-conf.")
        port = self.config.get(ZK_PORT)
        hosts = ",".join(h if ":" in h or not port else f"{h}:{port}" for h in url.split(","))
        self.path = "/" + "/".join(p for p in (base.strip("/"), key) if p)
        self.hosts = hosts
        self.client = KazooClient(hosts=hosts, timeout=int(self.config.get(ZK_SESSION_TIMEOUT_MS)) / 1000)
        try:
            self.client.start(timeout=int(self.config.get(ZK_CONNECTION_TIMEOUT_MS)) / 1000)
        except KazooTimeoutError as exc:
            raise HoodieLockError(f"Cannot reach ZooKeeper at {hosts} for the table lock: {exc}") from exc
        self.lock = self.client.Lock(self.path, f"{socket.gethostname()}:{os.getpid()}")
        self._held = False

    def try_lock(self, timeout_s: float) -> bool:
        try:
            self._held = bool(self.lock.acquire(timeout=max(timeout_s, 0.001)))
        except LockTimeout:
            self._held = False
        except KazooException as exc:
            raise HoodieLockError(f"ZooKeeper lock {self.path} at {self.hosts} failed: {exc}") from exc
        return self._held

    def unlock(self) -> None:
        if self._held:
            self._held = False
            self.lock.release()

    def close(self) -> None:
        try:
            self.unlock()
        finally:
            self.client.stop()
            self.client.close()

    def describe(self) -> str:
        return f"ZooKeeper lock {self.path} at {self.hosts}"

    def holder(self) -> str:
        try:
            return ", ".join(self.lock.contenders()) or "nobody"
        except KazooException:
            return "unknown"
