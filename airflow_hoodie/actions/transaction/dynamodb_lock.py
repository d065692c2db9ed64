"""Hudi's DynamoDBBasedLockProvider: one item per table in a DynamoDB table (partition
attribute ``key``), taken with a conditional put and held by a renewed lease, so a
crashed holder frees the lock when its lease runs out."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from airflow_hoodie.actions.transaction.lock_provider import LockProvider
from airflow_hoodie.config import ConfigKey, register
from airflow_hoodie.errors import HoodieConfigError, HoodieLockError

DDB_TABLE = "hoodie.write.lock.dynamodb.table"
DDB_PARTITION_KEY = "hoodie.write.lock.dynamodb.partition_key"
DDB_REGION = "hoodie.write.lock.dynamodb.region"
DDB_BILLING_MODE = "hoodie.write.lock.dynamodb.billing_mode"
DDB_READ_CAPACITY = "hoodie.write.lock.dynamodb.read_capacity"
DDB_WRITE_CAPACITY = "hoodie.write.lock.dynamodb.write_capacity"
DDB_TABLE_CREATION_TIMEOUT = "hoodie.write.lock.dynamodb.table_creation_timeout"
DDB_ENDPOINT_URL = "hoodie.write.lock.dynamodb.endpoint_url"
KEY_ATTRIBUTE = "key"
LEASE_S = 60.0  # renewed every LEASE_S / 3 while held

register(
    ConfigKey(DDB_TABLE, None, "DynamoDB table holding the locks"),
    ConfigKey(DDB_PARTITION_KEY, None, "Lock item key (default: hoodie.table.name)"),
    ConfigKey(DDB_REGION, None, "AWS region (default: AWS_REGION)"),
    ConfigKey(DDB_BILLING_MODE, "PAY_PER_REQUEST", ""),
    ConfigKey(DDB_READ_CAPACITY, "20", ""),
    ConfigKey(DDB_WRITE_CAPACITY, "10", ""),
    ConfigKey(DDB_TABLE_CREATION_TIMEOUT, "600000", ""),
    ConfigKey(DDB_ENDPOINT_URL, None, "DynamoDB endpoint (tests, VPC endpoints)"),
)


class DynamoDBBasedLockProvider(LockProvider):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.table = self.config.get(DDB_TABLE)
        self.item_key = self.config.get(DDB_PARTITION_KEY) or self.config.get("hoodie.table.name")
        if not self.table or not self.item_key:
            raise HoodieConfigError(f"DynamoDBBasedLockProvider needs {DDB_TABLE} and {DDB_PARTITION_KEY} "
                                    "(or hoodie.table.name).")
        region = self.config.get(DDB_REGION) or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        self.client = boto3.client("dynamodb", region_name=region, endpoint_url=self.config.get(DDB_ENDPOINT_URL))
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        self._renewer: threading.Thread | None = None
        self._stop = threading.Event()
        self._ensure_table()

    def _ensure_table(self) -> None:
        try:
            self.client.describe_table(TableName=self.table)
            return
        except self.client.exceptions.ResourceNotFoundException:
            pass
        except (ClientError, BotoCoreError) as exc:
            raise HoodieLockError(f"Cannot reach DynamoDB table {self.table} for the table lock: {exc}") from exc
        args = {"TableName": self.table, "KeySchema": [{"AttributeName": KEY_ATTRIBUTE, "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": KEY_ATTRIBUTE, "AttributeType": "S"}]}
        if (self.config.get(DDB_BILLING_MODE) or "PAY_PER_REQUEST") == "PROVISIONED":
            args["ProvisionedThroughput"] = {"ReadCapacityUnits": int(self.config.get(DDB_READ_CAPACITY)),
                                             "WriteCapacityUnits": int(self.config.get(DDB_WRITE_CAPACITY))}
        else:
            args["BillingMode"] = "PAY_PER_REQUEST"
        try:
            self.client.create_table(**args)
        except self.client.exceptions.ResourceInUseException:
            pass  # created by a concurrent writer
        waiter = self.client.get_waiter("table_exists")
        waiter.wait(TableName=self.table, WaiterConfig={
            "Delay": 1, "MaxAttempts": max(1, int(self.config.get(DDB_TABLE_CREATION_TIMEOUT)) // 1000)})

    def _put(self) -> bool:
        now_ms = int(time.time() * 1000)
        try:
            self.client.put_item(
                TableName=self.table,
                Item={KEY_ATTRIBUTE: {"S": self.item_key}, "owner": {"S": self.owner},
                      "leaseUntil": {"N": str(now_ms + int(LEASE_S * 1000))}},
                ConditionExpression="attribute_not_exists(#k) OR leaseUntil < :now OR #o = :me",
                ExpressionAttributeNames={"#k": KEY_ATTRIBUTE, "#o": "owner"},
                ExpressionAttributeValues={":now": {"N": str(now_ms)}, ":me": {"S": self.owner}})
            return True
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        except (ClientError, BotoCoreError) as exc:
            raise HoodieLockError(f"DynamoDB lock {self.table}/{self.item_key} failed: {exc}") from exc

    def _renew(self) -> None:
        while not self._stop.wait(LEASE_S / 3):
            if not self._put():
                return  # lost the lease: the commit path re-checks the timeline under the lock anyway

    def try_lock(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + max(timeout_s, 0)
        pause = 0.05
        while not self._put():
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
            pause = min(pause * 2, 1.0)
        self._stop.clear()
        self._renewer = threading.Thread(target=self._renew, name="hoodie-dynamodb-lock-lease", daemon=True)
        self._renewer.start()
        return True

    def unlock(self) -> None:
        if self._renewer is None:
            return
        self._stop.set()
        self._renewer.join()
        self._renewer = None
        try:
            self.client.delete_item(
                TableName=self.table, Key={KEY_ATTRIBUTE: {"S": self.item_key}},
                ConditionExpression="#o = :me", ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={":me": {"S": self.owner}})
        except self.client.exceptions.ConditionalCheckFailedException:
            pass  # the lease ran out and someone else holds it now

    def describe(self) -> str:
        return f"DynamoDB lock item {self.item_key!r} in table {self.table}"

    def holder(self) -> str:
        item = self.client.get_item(TableName=self.table, Key={KEY_ATTRIBUTE: {"S": self.item_key}}).get("Item")
        return item["owner"]["S"] if item else "nobody"
