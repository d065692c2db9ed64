"""The table lock behind one small interface, chosen by ``hoodie.write.lock.provider``
with Hudi's class names, so a table shared with real Hudi writers uses the same lock."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import Any, Mapping

from airflow_hoodie.config_keys.locks import (
    DYNAMODB,
    FILESYSTEM,
    IN_PROCESS,
    PROVIDER,
    STORAGE,
    ZOOKEEPER,
)
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.settings.lock import LockSettings

# Hudi's class name -> our implementation (module, class); imported only when chosen,
# so kazoo and boto3 load only for the tables that use them.
_IMPLEMENTATIONS = {
    FILESYSTEM: ("airflow_hoodie.actions.transaction.filesystem_lock", "FileSystemBasedLockProvider"),
    IN_PROCESS: ("airflow_hoodie.actions.transaction.in_process_lock", "InProcessLockProvider"),
    ZOOKEEPER: ("airflow_hoodie.actions.transaction.zookeeper_lock", "ZookeeperBasedLockProvider"),
    DYNAMODB: ("airflow_hoodie.actions.transaction.dynamodb_lock", "DynamoDBBasedLockProvider"),
    STORAGE: ("airflow_hoodie.actions.transaction.storage_based_lock", "StorageBasedLockProvider"),
}


class LockProvider(ABC):
    """One table's lock. ``try_lock`` waits at most ``timeout_s``; ``unlock`` releases
    only a lock this object holds."""

    def __init__(self, settings: LockSettings, base_uri: str, storage_options: Mapping[str, str] | None) -> None:
        self.settings = settings
        self.base_uri = base_uri
        self.storage_options = dict(storage_options or {})

    @abstractmethod
    def try_lock(self, timeout_s: float) -> bool:
        """Take the lock within ``timeout_s``; False if someone else holds it."""

    @abstractmethod
    def unlock(self) -> None:
        """Release the lock we hold (no-op when we hold none)."""

    def ensure_held(self) -> None:
        """Raise :class:`HoodieLockError` unless the lock taken by ``try_lock`` is still ours.
        Called right before an instant is completed: a lock can be lost while held (a
        ZooKeeper session expiring, a DynamoDB lease stolen after a stall), and completing
        after that would race whoever holds it now. Providers whose lock nobody can take
        from a live holder keep this default."""

    def close(self) -> None:
        """Free connections; releases a held lock first."""
        self.unlock()

    @abstractmethod
    def describe(self) -> str:
        """Where the lock lives, for messages."""

    def holder(self) -> str:
        """Who holds the lock now, when the provider can tell."""
        return "unknown"


def lock_provider_for(settings: LockSettings, base_uri: str,
                      storage_options: Mapping[str, str] | None = None) -> LockProvider:
    """The configured provider for the table at ``base_uri``."""
    name = settings.provider
    impl = _IMPLEMENTATIONS.get(name)
    if impl is None:
        known = ", ".join(sorted(_IMPLEMENTATIONS))
        raise HoodieConfigError(f"{PROVIDER}={name!r} is not a lock provider airflow-hoodie has; use one of {known}.")
    module = importlib.import_module(impl[0])
    cls: Any = getattr(module, impl[1])
    return cls(settings, base_uri, storage_options)
