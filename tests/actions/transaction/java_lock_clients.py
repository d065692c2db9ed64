"""The other side of the lock interop tests: small clients that follow the published
protocols of the Java libraries Hudi's lock providers use, written from their documented
behaviour and independent of our providers.

- :class:`CuratorMutex`: Curator's ``InterProcessMutex`` (``LockInternals`` +
  ``StandardLockInternalsDriver``): an ephemeral-sequential node ``_c_<uuid>-lock-<seq>``
  (protected mode) under the lock path; children are sorted by what follows the last
  ``lock-``; the first holds the lock, any other watches the child just before it.
- :class:`DynamoDBLockClient`: ``AmazonDynamoDBLockClient`` as Hudi configures it (lease =
  ``hoodie.write.lock.wait_time_ms``, heartbeat = lease / 3, delete on release): a held item
  is only taken over after its ``recordVersionNumber`` stayed the same for its
  ``leaseDuration``, with a put conditioned on that number.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

LOCK_NAME = "lock-"


def curator_sort_key(child: str) -> str:
    """StandardLockInternalsDriver.fixForSorting: the part after the last ``lock-``."""
    index = child.rfind(LOCK_NAME)
    return child[index + len(LOCK_NAME):] if index >= 0 else child


class CuratorMutex:
    def __init__(self, client: KazooClient, path: str) -> None:
        self.client = client
        self.path = path
        self.node: str | None = None

    def acquire(self, timeout_s: float) -> bool:
        self.client.ensure_path(self.path)
        created = self.client.create(f"{self.path}/_c_{uuid.uuid4()}-{LOCK_NAME}", b"127.0.0.1",
                                     ephemeral=True, sequence=True)
        name = created.rsplit("/", 1)[1]
        deadline = time.monotonic() + timeout_s
        while True:
            children = sorted(self.client.get_children(self.path), key=curator_sort_key)
            index = children.index(name)
            if index == 0:
                self.node = created
                return True
            woken = threading.Event()
            try:
                self.client.get(f"{self.path}/{children[index - 1]}", watch=lambda _event: woken.set())
            except NoNodeError:
                continue  # released meanwhile: look again
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not woken.wait(remaining):
                self.client.delete(created)  # timed out: Curator deletes its node
                return False

    def release(self) -> None:
        assert self.node is not None
        self.client.delete(self.node)
        self.node = None


class DynamoDBLockClient:
    REFRESH_S = 1.0  # the Java client's default refresh period

    def __init__(self, ddb: Any, table: str, lease_ms: int) -> None:
        self.ddb = ddb
        self.table = table
        self.lease_ms = lease_ms
        self.owner = f"{socket.gethostname()}{uuid.uuid4()}"
        self.key: str | None = None
        self.rvn: str | None = None
        self._stop = threading.Event()
        self._beater: threading.Thread | None = None

    def _put(self, key: str, condition: str, names: dict[str, str], values: dict[str, Any]) -> bool:
        rvn = str(uuid.uuid4())
        args: dict[str, Any] = {
            "TableName": self.table, "ConditionExpression": condition,
            "Item": {"key": {"S": key}, "ownerName": {"S": self.owner}, "leaseDuration": {"S": str(self.lease_ms)},
                     "recordVersionNumber": {"S": rvn}},
            "ExpressionAttributeNames": {"#pk": "key", **names}}
        if values:
            args["ExpressionAttributeValues"] = values
        try:
            self.ddb.put_item(**args)
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False
        self.key, self.rvn = key, rvn
        return True

    def acquire(self, key: str, additional_wait_ms: int) -> bool:
        started = time.monotonic()
        wait_s = additional_wait_ms / 1000
        watching: tuple[str, float, float] | None = None
        while True:
            item = self.ddb.get_item(TableName=self.table, Key={"key": {"S": key}}, ConsistentRead=True).get("Item")
            got = False
            if item is None:
                got = self._put(key, "attribute_not_exists(#pk)", {}, {})
            elif "isReleased" in item:
                got = self._put(key, "attribute_exists(#pk) AND #ir = :ir", {"#ir": "isReleased"},
                                {":ir": {"S": "1"}})
            else:
                rvn, lease_s = item["recordVersionNumber"]["S"], int(item["leaseDuration"]["S"]) / 1000
                if watching is None:
                    watching = (rvn, time.monotonic(), lease_s)
                    wait_s += lease_s
                elif watching[0] != rvn:
                    watching = (rvn, time.monotonic(), lease_s)
                elif time.monotonic() - watching[1] > watching[2]:
                    got = self._put(key, "attribute_exists(#pk) AND #rvn = :rvn", {"#rvn": "recordVersionNumber"},
                                    {":rvn": {"S": rvn}})
            if got:
                self._stop.clear()
                self._beater = threading.Thread(target=self._heartbeats, daemon=True)
                self._beater.start()
                return True
            if time.monotonic() - started > wait_s:
                return False
            time.sleep(self.REFRESH_S)

    def _heartbeats(self) -> None:
        while not self._stop.wait(self.lease_ms / 3 / 1000):
            rvn = str(uuid.uuid4())
            try:
                self.ddb.update_item(
                    TableName=self.table, Key={"key": {"S": self.key}},
                    UpdateExpression="SET #ld = :ld, #rvn = :newRvn",
                    ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn AND #on = :on",
                    ExpressionAttributeNames={"#pk": "key", "#ld": "leaseDuration", "#rvn": "recordVersionNumber",
                                              "#on": "ownerName"},
                    ExpressionAttributeValues={":ld": {"S": str(self.lease_ms)}, ":newRvn": {"S": rvn},
                                               ":rvn": {"S": self.rvn}, ":on": {"S": self.owner}})
            except self.ddb.exceptions.ConditionalCheckFailedException:
                return
            self.rvn = rvn

    def stop_heartbeats(self) -> None:
        """What a crashed or stalled Java process looks like from outside."""
        self._stop.set()
        if self._beater is not None:
            self._beater.join()
            self._beater = None

    def release(self, delete: bool = True) -> bool:
        """Hudi releases with the default deleteLockOnRelease (the item goes); without it the
        item stays, marked ``isReleased``."""
        self.stop_heartbeats()
        condition = "attribute_exists(#pk) AND #rvn = :rvn AND #on = :on"
        names = {"#pk": "key", "#rvn": "recordVersionNumber", "#on": "ownerName"}
        values = {":rvn": {"S": self.rvn}, ":on": {"S": self.owner}}
        key = {"key": {"S": self.key}}
        try:
            if delete:
                self.ddb.delete_item(TableName=self.table, Key=key, ConditionExpression=condition,
                                     ExpressionAttributeNames=names, ExpressionAttributeValues=values)
            else:
                self.ddb.update_item(TableName=self.table, Key=key, UpdateExpression="SET #ir = :ir",
                                     ConditionExpression=condition,
                                     ExpressionAttributeNames={**names, "#ir": "isReleased"},
                                     ExpressionAttributeValues={**values, ":ir": {"S": "1"}})
        except self.ddb.exceptions.ConditionalCheckFailedException:
            return False  # stolen
        return True
