"""The table lock behind one small interface, chosen by ``hoodie.write.lock.provider``
with Hudi's class names, so a table shared with real Hudi writers uses the same lock."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import Any, Mapping

from airflow_hoodie.config import ConfigKey, HoodieConfig, register
from airflow_hoodie.errors import HoodieConfigError

PROVIDER = "hoodie.write.lock.provider"
WAIT_TIME_MS = "hoodie.write.lock.wait_time_ms"
NUM_RETRIES = "hoodie.write.lock.num_retries"
RETRY_WAIT_MS = "hoodie.write.lock.wait_time_ms_between_retry"
RETRY_MAX_WAIT_MS = "hoodie.write.lock.max_wait_time_ms_between_retry"
CLIENT_NUM_RETRIES = "hoodie.write.lock.client.num_retries"
CLIENT_RETRY_WAIT_MS = "hoodie.write.lock.client.wait_time_ms_between_retry"

ZOOKEEPER = "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"
FILESYSTEM = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
IN_PROCESS = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"
DYNAMODB = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"

# Hudi's class name -> our implementation (module, class); imported only when chosen,
# so kazoo and boto3 load only for the tables that use them.
_IMPLEMENTATIONS = {
    FILESYSTEM: ("airflow_hoodie.actions.transaction.filesystem_lock", "FileSystemBasedLockProvider"),
    IN_PROCESS: ("airflow_hoodie.actions.transaction.in_process_lock", "InProcessLockProvider"),
    ZOOKEEPER: ("airflow_hoodie.actions.transaction.zookeeper_lock", "ZookeeperBasedLockProvider"),
    DYNAMODB: ("airflow_hoodie.actions.transaction.dynamodb_lock", "DynamoDBBasedLockProvider"),
}

register(
    ConfigKey(PROVIDER, ZOOKEEPER, "Lock provider class (Hudi's class names)"),
    ConfigKey(WAIT_TIME_MS, "60000", "Timeout of one lock acquire call at the provider"),
    ConfigKey(NUM_RETRIES, "3", "Retries of a lock acquire at the provider"),
    ConfigKey(RETRY_WAIT_MS, "5000", "Initial wait between provider retries"),
    ConfigKey(RETRY_MAX_WAIT_MS, "5000", "Maximum wait between provider retries"),
    ConfigKey(CLIENT_NUM_RETRIES, "0", "Additional acquire attempts by the lock manager"),
    ConfigKey(CLIENT_RETRY_WAIT_MS, "10000", "Wait between the lock manager's attempts"),
    ConfigKey("hoodie.write.lock.conflict.resolution.strategy",
              "org.apache.hudi.client.transaction.SimpleConcurrentFileWritesConflictResolutionStrategy",
              "Only Hudi's default file-group overlap strategy is implemented"),
)


class LockProvider(ABC):
    """One table's lock. ``try_lock`` waits at most ``timeout_s``; ``unlock`` releases
    only a lock this object holds."""

    def __init__(self, config: HoodieConfig, base_uri: str, storage_options: Mapping[str, str] | None) -> None:
        self.config = config
        self.base_uri = base_uri
        self.storage_options = dict(storage_options or {})

    @abstractmethod
    def try_lock(self, timeout_s: float) -> bool:
        """Take the lock within ``timeout_s``; False if someone else holds it."""

    @abstractmethod
    def unlock(self) -> None:
        """Release the lock we hold (no-op when we hold none)."""

    def close(self) -> None:
        """Free connections; releases a held lock first."""
        self.unlock()

    @abstractmethod
    def describe(self) -> str:
        """Where the lock lives, for messages."""

    def holder(self) -> str:
        """Who holds the lock now, when the provider can tell."""
        return "unknown"


def lock_provider_for(config: HoodieConfig, base_uri: str,
                      storage_options: Mapping[str, str] | None = None) -> LockProvider:
    """The configured provider for the table at ``base_uri``."""
    name = config.get(PROVIDER) or ZOOKEEPER
    impl = _IMPLEMENTATIONS.get(name)
    if impl is None:
        known = ", ".join(sorted(_IMPLEMENTATIONS))
        raise HoodieConfigError(f"{PROVIDER}={name!r} is not a lock provider airflow-hoodie has; use one of {known}.")
    module = importlib.import_module(impl[0])
    cls: Any = getattr(module, impl[1])
    return cls(config, base_uri, storage_options)
