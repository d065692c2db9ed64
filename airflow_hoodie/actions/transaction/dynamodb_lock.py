"""Hudi's DynamoDBBasedLockProvider: the lock item and lease protocol of
AmazonDynamoDBLockClient (the library Hudi's Java provider uses), in the table Hudi creates
(hash key ``key``), so our tasks and Hudi's Java writers take the same lock."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from airflow_hoodie.actions.transaction.lock_provider import LockProvider
from airflow_hoodie.config_keys.locks import WAIT_TIME_MS
from airflow_hoodie.errors import HoodieLockError
from airflow_hoodie.settings.lock import DynamoDBLockSettings

KEY_ATTRIBUTE = "key"


# AmazonDynamoDBLockClient's attribute names and values
OWNER_NAME = "ownerName"
LEASE_DURATION = "leaseDuration"
RECORD_VERSION_NUMBER = "recordVersionNumber"
IS_RELEASED = "isReleased"
IS_RELEASED_VALUE = "1"
DATA = "data"
REFRESH_S = 1.0  # the Java client's default pause between looks at a held lock


class DynamoDBBasedLockProvider(LockProvider):
    """One AmazonDynamoDBLockClient lock item per table, written and judged exactly as Hudi's
    Java provider does, so a Java writer and our task exclude each other.

    The item (partition attribute ``key`` = the table's partition key) carries ``ownerName``,
    ``leaseDuration`` (ms, as a string), a random ``recordVersionNumber`` and, once released
    without delete, ``isReleased``. Nobody trusts clocks: a waiter deems a lock stale only
    after watching its ``recordVersionNumber`` stay the same for the item's
    ``leaseDuration``, and then takes it with a put conditioned on that number. The holder
    proves it is alive by changing the number every heartbeat period (Hudi: lease / 3).
    Hudi makes the lease ``hoodie.write.lock.wait_time_ms``; so do we."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        own = self.settings.provider_settings
        assert isinstance(own, DynamoDBLockSettings)
        self.own = own
        self.table, self.item_key = own.table, own.item_key
        self.client = boto3.client("dynamodb", region_name=own.region, endpoint_url=own.endpoint_url)
        self.lease_ms = int(self.settings.wait_s * 1000)
        self.heartbeat_s = self.lease_ms / 3 / 1000
        # AmazonDynamoDBLockClient's default owner: host name followed by a random UUID
        self.owner = f"{socket.gethostname()}{uuid.uuid4()}"
        self._held: _Held | None = None
        self._mutex = threading.Lock()  # one DynamoDB write about our item at a time
        self._stop = threading.Event()
        self._beater: threading.Thread | None = None
        self._ensure_table()

    # ------------------------------------------------------------------ table
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
        if self.own.provisioned is not None:
            args["BillingMode"] = "PROVISIONED"
            args["ProvisionedThroughput"] = {"ReadCapacityUnits": self.own.provisioned[0],
                                             "WriteCapacityUnits": self.own.provisioned[1]}
        else:
            args["BillingMode"] = "PAY_PER_REQUEST"
        try:
            self.client.create_table(**args)
        except self.client.exceptions.ResourceInUseException:
            pass  # created by a concurrent writer
        waiter = self.client.get_waiter("table_exists")
        waiter.wait(TableName=self.table, WaiterConfig={
            "Delay": 1, "MaxAttempts": max(1, self.own.creation_timeout_ms // 1000)})

    # ------------------------------------------------------------ DynamoDB calls
    def _read(self) -> dict[str, Any] | None:
        try:
            return self.client.get_item(TableName=self.table, Key={KEY_ATTRIBUTE: {"S": self.item_key}},
                                        ConsistentRead=True).get("Item")
        except (ClientError, BotoCoreError) as exc:
            raise HoodieLockError(f"Reading the {self.describe()} failed: {exc}") from exc

    def _put(self, condition: str, names: dict[str, str], values: dict[str, Any]) -> _Held | None:
        """Write a fresh item of ours if ``condition`` holds; None when it does not."""
        rvn = str(uuid.uuid4())
        item = {KEY_ATTRIBUTE: {"S": self.item_key}, OWNER_NAME: {"S": self.owner},
                LEASE_DURATION: {"S": str(self.lease_ms)}, RECORD_VERSION_NUMBER: {"S": rvn},
                DATA: {"B": json.dumps({"host": socket.gethostname(), "pid": os.getpid()}).encode()}}
        # count the lease from before the call, as the Java client does: err towards expiring early
        sent = time.monotonic()
        args: dict[str, Any] = {"TableName": self.table, "Item": item, "ConditionExpression": condition,
                                "ExpressionAttributeNames": {"#pk": KEY_ATTRIBUTE, **names}}
        if values:
            args["ExpressionAttributeValues"] = values
        try:
            self.client.put_item(**args)
        except self.client.exceptions.ConditionalCheckFailedException:
            return None
        except (ClientError, BotoCoreError) as exc:
            raise HoodieLockError(f"Taking the {self.describe()} failed: {exc}") from exc
        return _Held(rvn, sent)

    def _beat(self, confirm: bool = False) -> bool:
        """One heartbeat: a new record version number, conditioned on the one we wrote
        last and on our owner name. False when the lock is no longer ours (stolen after
        our lease ran out, or our local lease already ran out, which the Java client
        treats the same way: a waiter may be taking it right now). A failed call is
        not a lost lock (the next beat or the lease decides) unless ``confirm`` asks
        for a heartbeat that landed."""
        with self._mutex:
            held = self._held
            if held is None or held.lost:
                return False
            if time.monotonic() - held.renewed > self.lease_ms / 1000:
                held.lost = True
                return False
            rvn = str(uuid.uuid4())
            sent = time.monotonic()
            try:
                self.client.update_item(
                    TableName=self.table, Key={KEY_ATTRIBUTE: {"S": self.item_key}},
                    UpdateExpression="SET #ld = :ld, #rvn = :newRvn",
                    ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn AND #on = :on",
                    ExpressionAttributeNames={"#pk": KEY_ATTRIBUTE, "#ld": LEASE_DURATION,
                                              "#rvn": RECORD_VERSION_NUMBER, "#on": OWNER_NAME},
                    ExpressionAttributeValues={":ld": {"S": str(self.lease_ms)}, ":newRvn": {"S": rvn},
                                               ":rvn": {"S": held.rvn}, ":on": {"S": self.owner}})
            except self.client.exceptions.ConditionalCheckFailedException:
                held.lost = True
                return False
            except (ClientError, BotoCoreError):
                return not confirm
            held.rvn, held.renewed = rvn, sent
            return True

    def _heartbeats(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            if not self._beat():
                return

    # ------------------------------------------------------------------ the lock
    def try_lock(self, timeout_s: float) -> bool:
        """AmazonDynamoDBLockClient.acquireLock with ``timeout_s`` as the additional wait:
        a lock someone holds costs at least its lease duration of watching first."""
        started = time.monotonic()
        budget = max(timeout_s, 0.0)
        refresh = min(REFRESH_S, self.heartbeat_s)
        watched: tuple[str, float, float] | None = None  # (rvn, seen at, its lease in s)
        while True:
            item = self._read()
            held: _Held | None = None
            if item is None:
                held = self._put("attribute_not_exists(#pk)", {}, {})
            elif IS_RELEASED in item:
                held = self._put("attribute_exists(#pk) AND #ir = :ir", {"#ir": IS_RELEASED},
                                 {":ir": {"S": IS_RELEASED_VALUE}})
            else:
                version_attr, version, lease_s = _version_and_lease(item)
                if watched is None:
                    watched = (version, time.monotonic(), lease_s)
                    budget += lease_s
                elif watched[0] != version:
                    watched = (version, time.monotonic(), lease_s)  # its holder is alive: start over
                elif time.monotonic() - watched[1] > watched[2]:
                    # unchanged for a whole lease: its holder is gone; take it over that exact version
                    held = self._put("attribute_exists(#pk) AND #v = :v", {"#v": version_attr},
                                     {":v": item[version_attr]})
            if held is not None:
                self._start(held)
                return True
            if time.monotonic() - started > budget:
                return False
            time.sleep(refresh)

    def _start(self, held: _Held) -> None:
        with self._mutex:
            self._held = held
        self._stop.clear()
        self._beater = threading.Thread(target=self._heartbeats, name="hoodie-dynamodb-lock-heartbeat", daemon=True)
        self._beater.start()

    def ensure_held(self) -> None:
        """A heartbeat now: if it lands, nobody can take the lock for a whole lease from now."""
        if self._held is None or not self._beat(confirm=True):
            raise HoodieLockError(
                f"The {self.describe()} is no longer ours, or DynamoDB could not confirm it: its lease ran out "
                f"(this process stalled longer than {self.lease_ms} ms, {WAIT_TIME_MS}) or the heartbeat failed, and "
                "another writer may have taken it. Nothing was completed; retry the task.")

    def unlock(self) -> None:
        """Delete our item, conditioned on our owner name and current version (the Java
        client's release with deleteLockOnRelease, Hudi's setting); a stolen lock is left alone."""
        if self._beater is None:
            return
        self._stop.set()
        self._beater.join()
        self._beater = None
        with self._mutex:
            held, self._held = self._held, None
        if held is None or held.lost:
            return
        try:
            self.client.delete_item(
                TableName=self.table, Key={KEY_ATTRIBUTE: {"S": self.item_key}},
                ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn AND #on = :on",
                ExpressionAttributeNames={"#pk": KEY_ATTRIBUTE, "#rvn": RECORD_VERSION_NUMBER, "#on": OWNER_NAME},
                ExpressionAttributeValues={":rvn": {"S": held.rvn}, ":on": {"S": self.owner}})
        except self.client.exceptions.ConditionalCheckFailedException:
            pass  # the lease ran out and someone else holds it now
        except (ClientError, BotoCoreError) as exc:
            raise HoodieLockError(f"Releasing the {self.describe()} failed: {exc}; it frees itself after "
                                  f"{self.lease_ms} ms without heartbeats.") from exc

    def describe(self) -> str:
        return f"DynamoDB lock item {KEY_ATTRIBUTE}={self.item_key!r} in table {self.table}"

    def holder(self) -> str:
        item = self._read()
        if item is None or IS_RELEASED in item:
            return "nobody"
        owner = item.get(OWNER_NAME) or item.get("owner") or {"S": "unknown"}
        return owner["S"]


class _Held:
    """Our item as we last wrote it: its version number and when we sent that write."""

    def __init__(self, rvn: str, renewed: float) -> None:
        self.rvn = rvn
        self.renewed = renewed
        self.lost = False


# Before they followed AmazonDynamoDBLockClient, airflow-hoodie's tasks held the item as
# ``owner`` + ``leaseUntil`` (epoch ms, rewritten every 20 s of a 60 s lease). A task of that
# version may still hold it during an upgrade: its renewals play the version number's part.
OLD_VERSION_ATTRIBUTE = "leaseUntil"
OLD_LEASE_S = 60.0


def _version_and_lease(item: dict[str, Any]) -> tuple[str, Any, float]:
    """The attribute whose change proves the holder alive, its value, and the lease in s."""
    if RECORD_VERSION_NUMBER in item and LEASE_DURATION in item:
        return RECORD_VERSION_NUMBER, item[RECORD_VERSION_NUMBER]["S"], int(item[LEASE_DURATION]["S"]) / 1000
    if OLD_VERSION_ATTRIBUTE in item:
        return OLD_VERSION_ATTRIBUTE, item[OLD_VERSION_ATTRIBUTE]["N"], OLD_LEASE_S
    raise HoodieLockError(
        f"The DynamoDB lock item {KEY_ATTRIBUTE}={item.get(KEY_ATTRIBUTE)} has neither {RECORD_VERSION_NUMBER} "
        f"and {LEASE_DURATION} (AmazonDynamoDBLockClient, Hudi's) nor {OLD_VERSION_ATTRIBUTE}: something else "
        "writes to this lock table. Use a table only Hudi lock providers write to (hoodie.write.lock.dynamodb.table).")
