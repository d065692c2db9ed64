"""Keys of the table lock: the provider, its retries, and the settings of each provider
(Hudi's HoodieLockConfig, DynamoDbBasedLockConfig), under Hudi's class names.

Declared apart from the providers, so knowing a key never imports kazoo or boto3."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

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
STORAGE = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"

LOCK_PATH = "hoodie.write.lock.filesystem.path"
LOCK_EXPIRE_MIN = "hoodie.write.lock.filesystem.expire"

ZK_URL = "hoodie.write.lock.zookeeper.url"
ZK_PORT = "hoodie.write.lock.zookeeper.port"
ZK_BASE_PATH = "hoodie.write.lock.zookeeper.base_path"
ZK_LOCK_KEY = "hoodie.write.lock.zookeeper.lock_key"
ZK_SESSION_TIMEOUT_MS = "hoodie.write.lock.zookeeper.session_timeout_ms"
ZK_CONNECTION_TIMEOUT_MS = "hoodie.write.lock.zookeeper.connection_timeout_ms"

STORAGE_VALIDITY_TIMEOUT_SECS = "hoodie.write.lock.storage.validity.timeout.secs"
STORAGE_HEARTBEAT_POLL_SECS = "hoodie.write.lock.storage.heartbeat.poll.secs"

DDB_TABLE = "hoodie.write.lock.dynamodb.table"
DDB_PARTITION_KEY = "hoodie.write.lock.dynamodb.partition_key"
DDB_REGION = "hoodie.write.lock.dynamodb.region"
DDB_BILLING_MODE = "hoodie.write.lock.dynamodb.billing_mode"
DDB_READ_CAPACITY = "hoodie.write.lock.dynamodb.read_capacity"
DDB_WRITE_CAPACITY = "hoodie.write.lock.dynamodb.write_capacity"
DDB_TABLE_CREATION_TIMEOUT = "hoodie.write.lock.dynamodb.table_creation_timeout"
DDB_ENDPOINT_URL = "hoodie.write.lock.dynamodb.endpoint_url"

register(
    ConfigKey(PROVIDER, ZOOKEEPER, "Lock provider class (Hudi's class names)"),
    ConfigKey(WAIT_TIME_MS, "60000", "Timeout of one lock acquire call at the provider; with DynamoDB also the "
              "lock's lease duration, renewed every third of it (as Hudi configures AmazonDynamoDBLockClient)"),
    ConfigKey(NUM_RETRIES, "3", "Retries of a lock acquire at the provider"),
    ConfigKey(RETRY_WAIT_MS, "5000", "Initial wait between provider retries"),
    ConfigKey(RETRY_MAX_WAIT_MS, "5000", "Maximum wait between provider retries"),
    ConfigKey(CLIENT_NUM_RETRIES, "0", "Additional acquire attempts by the lock manager"),
    ConfigKey(CLIENT_RETRY_WAIT_MS, "10000", "Wait between the lock manager's attempts"),
    ConfigKey("hoodie.write.lock.conflict.resolution.strategy",
              "org.apache.hudi.client.transaction.SimpleConcurrentFileWritesConflictResolutionStrategy",
              "Only Hudi's default file-group overlap strategy is implemented"),
    ConfigKey(LOCK_PATH, None, "Directory of the file-system lock (default: the table's .hoodie)"),
    ConfigKey(LOCK_EXPIRE_MIN, "0", "Minutes after which a file-system lock is stale (0 = never)"),
    ConfigKey(ZK_URL, None, "ZooKeeper quorum (host or host:port list)"),
    ConfigKey(ZK_PORT, None, "ZooKeeper port, when the url has none"),
    ConfigKey(ZK_BASE_PATH, None, "Base znode for the table locks"),
    ConfigKey(ZK_LOCK_KEY, None, "Lock znode name (default: hoodie.table.name)"),
    ConfigKey(ZK_SESSION_TIMEOUT_MS, "60000", ""),
    ConfigKey(ZK_CONNECTION_TIMEOUT_MS, "15000", ""),
    ConfigKey(STORAGE_VALIDITY_TIMEOUT_SECS, "300", "Lease of the storage-based lock (RFC-91), renewed by its "
              "heartbeat; at least 10 s and 10x the heartbeat"),
    ConfigKey(STORAGE_HEARTBEAT_POLL_SECS, "30", "Seconds between renewals of the storage-based lock's lease"),
    ConfigKey(DDB_TABLE, None, "DynamoDB table holding the locks"),
    ConfigKey(DDB_PARTITION_KEY, None, "Lock item key (default: hoodie.table.name)"),
    ConfigKey(DDB_REGION, None, "AWS region (default: AWS_REGION, else us-east-1, as in Hudi)"),
    ConfigKey(DDB_BILLING_MODE, "PAY_PER_REQUEST", ""),
    ConfigKey(DDB_READ_CAPACITY, "20", ""),
    ConfigKey(DDB_WRITE_CAPACITY, "10", ""),
    ConfigKey(DDB_TABLE_CREATION_TIMEOUT, "600000", ""),
    ConfigKey(DDB_ENDPOINT_URL, None, "DynamoDB endpoint (tests, VPC endpoints)"),
)
