"""The concurrency settings of one action: mode, failed-writes policy, heartbeats and lock.

Read once per action from the job's config (Hudi's HoodieWriteConfig, HoodieLockConfig and
the provider configs); the transaction manager, the heartbeats and the chosen lock provider
take them from here. Only the chosen provider's keys are parsed, as Hudi builds only that
provider: a broken ZooKeeper setting must not stop a table locked through DynamoDB.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys import locks as k
from airflow_hoodie.config_keys.concurrency import (
    CONCURRENCY_MODE,
    EAGER,
    FAILED_WRITES_POLICY,
    FAILED_WRITES_POLICY_1X,
    INTERVAL_MS,
    LAZY,
    MULTI_WRITER_MODES,
    NBCC,
    OCC,
    SINGLE_WRITER,
    TOLERABLE_MISSES,
)
from airflow_hoodie.errors import HoodieConfigError

#: Hudi's DynamoDB region when neither the key nor AWS_REGION is set
DEFAULT_DYNAMODB_REGION = "us-east-1"

#: the lock directory under the table's base path when hoodie.write.lock.filesystem.path is unset
#: (Hudi's FileSystemBasedLockProvider constructor: ``<base>/.hoodie``)
META_FOLDER = ".hoodie"
#: Hudi's ``FileSystemBasedLockProvider.getLockConfig(basePath)``, what Flink's writers (FlinkWriteClients
#: / OptionsResolver.isLockRequired: several writers or the metadata table on) and Spark's procedures
#: use when no provider is named: the lock under ``<base>/.hoodie/.aux``, expiring after 1 minute,
#: 2 s per acquire call, 30 retries by the lock manager
ENGINE_DEFAULT_LOCK_DIR = ".hoodie/.aux"
ENGINE_DEFAULT_LOCK_EXPIRE_MIN = 1
ENGINE_DEFAULT_LOCK_WAIT_MS = 2000
ENGINE_DEFAULT_LOCK_CLIENT_RETRIES = 30


@dataclass(frozen=True)
class FileSystemLockSettings:
    #: the lock's directory; None: ``default_dir`` under the table's base path
    path: str | None
    #: seconds after which a lock file is stale (0: never)
    expire_s: int
    #: the directory under the base path when ``path`` is None: ``.hoodie`` as Hudi's provider
    #: defaults it, ``.hoodie/.aux`` for the engines' default lock (:meth:`engine_default`)
    default_dir: str = META_FOLDER

    @classmethod
    def from_config(cls, config: HoodieConfig) -> FileSystemLockSettings:
        return cls(config.get(k.LOCK_PATH) or None, config.get_int(k.LOCK_EXPIRE_MIN, 0) * 60)

    @classmethod
    def engine_default(cls, config: HoodieConfig) -> FileSystemLockSettings:
        """The lock Flink's NBCC writers take when none is configured (``getLockConfig``): the
        same file, so they and we exclude each other."""
        expire_min = config.get_int(k.LOCK_EXPIRE_MIN) if k.LOCK_EXPIRE_MIN in config else ENGINE_DEFAULT_LOCK_EXPIRE_MIN
        return cls(config.get(k.LOCK_PATH) or None, expire_min * 60, ENGINE_DEFAULT_LOCK_DIR)


@dataclass(frozen=True)
class ZooKeeperLockSettings:
    hosts: str
    #: the lock znode: base path and lock key
    path: str
    session_timeout_s: float
    connection_timeout_s: float

    @classmethod
    def from_config(cls, config: HoodieConfig) -> ZooKeeperLockSettings:
        url, base = config.get(k.ZK_URL), config.get(k.ZK_BASE_PATH)
        key = config.get(k.ZK_LOCK_KEY) or config.get("hoodie.table.name")
        if not url or not base or not key:
            raise HoodieConfigError(
                f"ZookeeperBasedLockProvider needs {k.ZK_URL}, {k.ZK_BASE_PATH} and {k.ZK_LOCK_KEY} "
                "(or hoodie.table.name); set them with the job's --hoodie-conf.")
        port = config.get(k.ZK_PORT)
        hosts = ",".join(h if ":" in h or not port else f"{h}:{port}" for h in url.split(","))
        return cls(hosts, "/" + "/".join(p for p in (base.strip("/"), key) if p),
                   config.get_int(k.ZK_SESSION_TIMEOUT_MS) / 1000, config.get_int(k.ZK_CONNECTION_TIMEOUT_MS) / 1000)


@dataclass(frozen=True)
class StorageLockSettings:
    validity_s: int
    poll_s: int

    @classmethod
    def from_config(cls, config: HoodieConfig) -> StorageLockSettings:
        validity_s, poll_s = config.get_int(k.STORAGE_VALIDITY_TIMEOUT_SECS), config.get_int(k.STORAGE_HEARTBEAT_POLL_SECS)
        if poll_s < 1:
            raise HoodieConfigError(f"{k.STORAGE_HEARTBEAT_POLL_SECS} must be at least 1 second.")
        if validity_s < 10 or validity_s < 10 * poll_s:
            raise HoodieConfigError(
                f"{k.STORAGE_VALIDITY_TIMEOUT_SECS}={validity_s} must be at least 10 seconds and at least 10 "
                f"times {k.STORAGE_HEARTBEAT_POLL_SECS}={poll_s} (Hudi's rule: a lease survives missed renewals).")
        return cls(validity_s, poll_s)


@dataclass(frozen=True)
class DynamoDBLockSettings:
    table: str
    item_key: str
    region: str
    endpoint_url: str | None
    #: None: PAY_PER_REQUEST; else (read, write) capacity units of a PROVISIONED table
    provisioned: tuple[int, int] | None
    creation_timeout_ms: int

    @classmethod
    def from_config(cls, config: HoodieConfig) -> DynamoDBLockSettings:
        table = config.get(k.DDB_TABLE)
        item_key = config.get(k.DDB_PARTITION_KEY) or config.get("hoodie.table.name")
        if not table or not item_key:
            raise HoodieConfigError(f"DynamoDBBasedLockProvider needs {k.DDB_TABLE} and {k.DDB_PARTITION_KEY} "
                                    "(or hoodie.table.name).")
        region = (config.get(k.DDB_REGION) or os.environ.get("AWS_REGION")
                  or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_DYNAMODB_REGION)
        provisioned = None
        if (config.get(k.DDB_BILLING_MODE) or "PAY_PER_REQUEST") == "PROVISIONED":
            provisioned = (config.get_int(k.DDB_READ_CAPACITY), config.get_int(k.DDB_WRITE_CAPACITY))
        return cls(table, item_key, region, config.get(k.DDB_ENDPOINT_URL), provisioned,
                   config.get_int(k.DDB_TABLE_CREATION_TIMEOUT))


_PROVIDER_SETTINGS = {
    k.FILESYSTEM: FileSystemLockSettings,
    k.ZOOKEEPER: ZooKeeperLockSettings,
    k.STORAGE: StorageLockSettings,
    k.DYNAMODB: DynamoDBLockSettings,
}


@dataclass(frozen=True)
class LockSettings:
    """How an action takes part in concurrency control on one table."""

    mode: str
    failed_writes_policy: str
    #: the lock provider's class name (Hudi's), checked against ours when a lock is taken
    provider: str
    #: one acquire call at the provider; with DynamoDB also the lease
    wait_s: float
    retries: int
    retry_wait_s: float
    max_retry_wait_s: float
    client_retries: int
    client_retry_wait_s: float
    heartbeat_interval_s: float
    heartbeat_expiry_s: float
    #: the chosen provider's own settings (None for the in-process lock)
    provider_settings: object = None

    @classmethod
    def from_config(cls, config: HoodieConfig | None) -> LockSettings:
        config = config or HoodieConfig({})
        mode = (config.get(CONCURRENCY_MODE) or SINGLE_WRITER).upper()
        if mode not in (SINGLE_WRITER, *MULTI_WRITER_MODES):
            raise HoodieConfigError(
                f"{CONCURRENCY_MODE}={mode!r} is not supported; use {SINGLE_WRITER}, {OCC} or {NBCC}.")
        named = [key for key in (FAILED_WRITES_POLICY, FAILED_WRITES_POLICY_1X) if key in config]
        policy = (config.get(named[0]) or "").upper() if named else ""
        if mode in MULTI_WRITER_MODES and policy == EAGER:
            # Hudi 1.x silently turns EAGER into LAZY for these modes; an explicit EAGER is a
            # setting that cannot hold, so it is refused by name instead of overridden
            raise HoodieConfigError(
                f"{CONCURRENCY_MODE}={mode} needs {FAILED_WRITES_POLICY}=LAZY: with several writers a write may not "
                "roll back the others' pending instants; failed writes are rolled back by clean once their "
                "heartbeat expired. Drop the EAGER setting.")
        if policy and policy not in (EAGER, LAZY):
            raise HoodieConfigError(f"{FAILED_WRITES_POLICY}={policy!r} is not EAGER or LAZY.")
        interval_s = config.get_int(INTERVAL_MS, 60000) / 1000
        engine_default_lock = mode == NBCC and k.PROVIDER not in config
        provider = k.FILESYSTEM if engine_default_lock else (config.get(k.PROVIDER) or k.ZOOKEEPER)
        # a single writer takes no lock: its provider's keys matter only when named
        parse = _PROVIDER_SETTINGS.get(provider) if mode != SINGLE_WRITER or k.PROVIDER in config else None
        own = (FileSystemLockSettings.engine_default(config) if engine_default_lock
               else parse.from_config(config) if parse is not None else None)
        wait_ms = (config.get_int(k.WAIT_TIME_MS) if k.WAIT_TIME_MS in config or not engine_default_lock
                   else ENGINE_DEFAULT_LOCK_WAIT_MS)
        client_retries = (config.get_int(k.CLIENT_NUM_RETRIES) if k.CLIENT_NUM_RETRIES in config or not engine_default_lock
                          else ENGINE_DEFAULT_LOCK_CLIENT_RETRIES)
        return cls(
            mode=mode, failed_writes_policy=policy or (LAZY if mode in MULTI_WRITER_MODES else EAGER),
            provider=provider,
            wait_s=wait_ms / 1000, retries=config.get_int(k.NUM_RETRIES),
            retry_wait_s=config.get_int(k.RETRY_WAIT_MS) / 1000,
            max_retry_wait_s=config.get_int(k.RETRY_MAX_WAIT_MS) / 1000,
            client_retries=client_retries,
            client_retry_wait_s=config.get_int(k.CLIENT_RETRY_WAIT_MS) / 1000,
            heartbeat_interval_s=interval_s, heartbeat_expiry_s=interval_s * config.get_int(TOLERABLE_MISSES, 2),
            provider_settings=own)

    @property
    def is_occ(self) -> bool:
        return self.mode == OCC

    @property
    def is_nbcc(self) -> bool:
        """Non-blocking concurrency control: writers overlap without a conflict check (their
        logs are sliced by completion time); only timeline steps take the lock."""
        return self.mode == NBCC

    @property
    def is_multi_writer(self) -> bool:
        """Several writers may run at once: the timeline steps take the table lock, failed writes
        are left to clean (Hudi's WriteConcurrencyMode.supportsMultiWriter)."""
        return self.mode in MULTI_WRITER_MODES
