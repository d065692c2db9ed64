"""Our lock providers beside Hudi's Java ones, on the real servers (ZooKeeper from
Debian's package, DynamoDB through moto's server): a lock the Java protocol holds excludes
us, ours excludes it, and a release lets the other in. The Java side is played by the
protocol clients in ``java_lock_clients``. Then the lost lock: a writer that stalls while
holding it (SIGSTOP: its ZooKeeper session expires, its DynamoDB lease is taken over) must
abort before it completes its instant, never complete it after."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import boto3
import pyarrow as pa
import pytest
from kazoo.client import KazooClient

from airflow_hoodie.config_keys import locks as lock_keys
from airflow_hoodie.actions.compaction import execute_pending_compactions, schedule_compaction
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.transaction import lock_provider as lp
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieLockError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.transaction.java_lock_clients import CuratorMutex, DynamoDBLockClient

ZK_BASE = "/hudi-locks"
LOCK_TABLE = "hudi_locks"
CURATOR_NODE = re.compile(r"^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}$")


def _name() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def _zk_settings(zookeeper: str, table: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": table, lp.PROVIDER: lp.ZOOKEEPER, "hoodie.write.lock.zookeeper.url": zookeeper,
            "hoodie.write.lock.zookeeper.base_path": ZK_BASE, **extra}


def _ddb_settings(endpoint: str, table: str, lease_ms: int, **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": table, lp.PROVIDER: lp.DYNAMODB, lock_keys.WAIT_TIME_MS: str(lease_ms),
            "hoodie.write.lock.dynamodb.table": LOCK_TABLE, "hoodie.write.lock.dynamodb.region": "us-east-1",
            "hoodie.write.lock.dynamodb.endpoint_url": endpoint, **extra}


@pytest.fixture()
def kazoo(zookeeper):
    client = KazooClient(hosts=zookeeper, timeout=10)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


@pytest.fixture()
def ddb(dynamodb):
    return boto3.client("dynamodb", region_name="us-east-1", endpoint_url=dynamodb)


# ------------------------------------------------------------------ ZooKeeper


def test_a_curator_holder_excludes_us_until_it_releases(zookeeper, kazoo, tmp_path):
    table = _name()
    java = CuratorMutex(kazoo, f"{ZK_BASE}/{table}")
    assert java.acquire(5)
    ours = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(_zk_settings(zookeeper, table))), str(tmp_path))
    try:
        started = time.monotonic()
        assert not ours.try_lock(0.5)
        assert time.monotonic() - started >= 0.45
        assert kazoo.get_children(f"{ZK_BASE}/{table}") == [java.node.rsplit("/", 1)[1]]  # we left no node
        java.release()
        assert ours.try_lock(5)
        ours.ensure_held()
    finally:
        ours.close()


def test_our_lock_is_a_curator_node_and_excludes_a_curator_client(zookeeper, kazoo, tmp_path):
    table = _name()
    path = f"{ZK_BASE}/{table}"
    ours = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(_zk_settings(zookeeper, table))), str(tmp_path))
    try:
        assert ours.try_lock(5)
        [node] = kazoo.get_children(path)
        assert CURATOR_NODE.match(node), node
        assert kazoo.exists(f"{path}/{node}").ephemeralOwner != 0  # ephemeral: dies with our session
        java = CuratorMutex(kazoo, path)
        assert not java.acquire(0.5)
        ours.unlock()
        assert kazoo.get_children(path) == []
        assert java.acquire(5)
        java.release()
    finally:
        ours.close()


def test_we_queue_by_sequence_behind_curator_and_older_kazoo_nodes(zookeeper, kazoo, tmp_path):
    """Behind a Curator holder and a node of our previous (kazoo-named) format, we get the
    lock only once both are gone."""
    table = _name()
    path = f"{ZK_BASE}/{table}"
    java = CuratorMutex(kazoo, path)
    assert java.acquire(5)
    old = kazoo.create(f"{path}/{uuid.uuid4().hex}__lock__", b"old", ephemeral=True, sequence=True)
    ours = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(_zk_settings(zookeeper, table))), str(tmp_path))
    try:
        assert not ours.try_lock(0.3)
        kazoo.delete(old)
        assert not ours.try_lock(0.3)  # the Curator node still holds it
        assert ours.holder() == "127.0.0.1"  # the Curator contender's data
        java.release()
        assert ours.try_lock(5)
    finally:
        ours.close()


# ------------------------------------------------------------------ DynamoDB


def test_a_java_lock_client_holder_excludes_us_until_it_releases(dynamodb, ddb, tmp_path):
    table = _name()
    ours = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(_ddb_settings(dynamodb, table, 1000))), str(tmp_path))  # creates the table
    java = DynamoDBLockClient(ddb, LOCK_TABLE, lease_ms=2000)
    assert java.acquire(table, 0)
    try:
        started = time.monotonic()
        # the holder heartbeats, so we wait its lease (2 s) plus our own wait and give up
        assert not ours.try_lock(0.5)
        assert time.monotonic() - started >= 2.5
        assert ours.holder() == java.owner
        assert java.release()
        assert ours.try_lock(2)
        ours.ensure_held()
    finally:
        java.stop_heartbeats()
        ours.close()


def test_our_item_is_a_lock_client_item_and_excludes_a_java_client(dynamodb, ddb, tmp_path):
    table = _name()
    ours = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(_ddb_settings(dynamodb, table, 2000))), str(tmp_path))
    try:
        assert ours.try_lock(2)
        item = ddb.get_item(TableName=LOCK_TABLE, Key={"key": {"S": table}}, ConsistentRead=True)["Item"]
        assert {k: next(iter(v)) for k, v in item.items()} == {
            "key": "S", "ownerName": "S", "leaseDuration": "S", "recordVersionNumber": "S", "data": "B"}
        assert item["leaseDuration"]["S"] == "2000"  # Hudi: the lease is hoodie.write.lock.wait_time_ms
        key_schema = ddb.describe_table(TableName=LOCK_TABLE)["Table"]["KeySchema"]
        assert key_schema == [{"AttributeName": "key", "KeyType": "HASH"}]
        java = DynamoDBLockClient(ddb, LOCK_TABLE, lease_ms=2000)
        # the Java client watches our record version number for a whole lease (2 s); we heartbeat
        assert not java.acquire(table, 1000)
        later = ddb.get_item(TableName=LOCK_TABLE, Key={"key": {"S": table}}, ConsistentRead=True)["Item"]
        assert later["recordVersionNumber"] != item["recordVersionNumber"]
        ours.unlock()
        assert java.acquire(table, 0)
        assert java.release()
    finally:
        ours.close()


def test_a_dead_java_holder_is_taken_over_after_its_lease_not_before(dynamodb, ddb, tmp_path):
    table = _name()
    ours = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(_ddb_settings(dynamodb, table, 1000))), str(tmp_path))
    java = DynamoDBLockClient(ddb, LOCK_TABLE, lease_ms=3000)
    assert java.acquire(table, 0)
    java.stop_heartbeats()  # the Java process died holding it
    try:
        started = time.monotonic()
        assert ours.try_lock(5)
        assert time.monotonic() - started >= 3.0  # judged by its own leaseDuration, from our first look
        assert not java.release()  # its conditional delete fails: the item is ours now
        assert ours.holder() == ours.owner
    finally:
        ours.close()


def test_an_item_the_java_client_left_released_is_taken_at_once(dynamodb, ddb, tmp_path):
    table = _name()
    ours = lp.lock_provider_for(LockSettings.from_config(HoodieConfig(_ddb_settings(dynamodb, table, 2000))), str(tmp_path))
    java = DynamoDBLockClient(ddb, LOCK_TABLE, lease_ms=10000)
    assert java.acquire(table, 0)
    assert java.release(delete=False)  # the item stays, marked isReleased
    try:
        started = time.monotonic()
        assert ours.try_lock(0.5)
        assert time.monotonic() - started < 5  # no lease of watching: the item says released
        item = ddb.get_item(TableName=LOCK_TABLE, Key={"key": {"S": table}}, ConsistentRead=True)["Item"]
        assert "isReleased" not in item and item["ownerName"]["S"] == ours.owner
        assert not java.acquire(table, 0)  # and ours, now held, excludes the Java client again
    finally:
        ours.close()


# ------------------------------------------------------------------ the lost lock

STALL = """
import time
def stall_under_the_lock():
    print("IN_COMMIT_LOCK", flush=True)
    time.sleep(3)  # the test stops this process (SIGSTOP) here, while it holds the commit lock
"""

WRITE_CHILD = STALL + """
import pyarrow as pa
from airflow_hoodie.actions import write_client
from airflow_hoodie.actions.write import write_arrow

real = write_client.check_no_conflict  # the last step under the commit lock before completing

def check_no_conflict(*args, **kwargs):
    stall_under_the_lock()
    return real(*args, **kwargs)

write_client.check_no_conflict = check_no_conflict
write_arrow({base!r}, pa.table({{"id": [1, 2], "ts": [2, 2], "v": ["late", "late"]}}), "upsert", {conf!r})
"""

COMPACTION_CHILD = STALL + """
from airflow_hoodie.actions import planned_service
from airflow_hoodie.actions.compaction import execute_pending_compactions
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable

real_once, real_reload = planned_service.complete_once, HoodieTable.reload_timeline
armed = []

def complete_once(*args, **kwargs):
    armed.append(True)
    return real_once(*args, **kwargs)

def reload_timeline(self, *args, **kwargs):  # complete_once's first step under the lock
    if armed:
        armed.clear()
        stall_under_the_lock()
    return real_reload(self, *args, **kwargs)

planned_service.complete_once, HoodieTable.reload_timeline = complete_once, reload_timeline
execute_pending_compactions(HoodieTable.load({base!r}), LocalExecutor(), HoodieConfig({conf!r}))
"""


def _table_conf(lock: dict[str, str], **extra: str) -> dict[str, str]:
    return {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
            lock_keys.NUM_RETRIES: "10", lock_keys.RETRY_WAIT_MS: "500", lock_keys.RETRY_MAX_WAIT_MS: "500", **lock, **extra}


def _completed(base: str, action: str) -> list[str]:
    return [i.timestamp for i in HoodieTable.load(base).timeline.completed().filter(actions=[action]).instants]


def _stall_inside_the_lock_and_steal_it(child_code: str, base: str, action: str, steal, release) -> bytes:
    """Run ``child_code`` in a child, stop it (SIGSTOP) inside its commit lock, let
    ``steal`` take the lock the Java way, resume the child, and check it completes no
    ``action`` instant while the thief holds the lock, nor after. The child's stderr."""
    before = _completed(base, action)
    child = subprocess.Popen([sys.executable, "-c", child_code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        if child.stdout.readline().strip() != b"IN_COMMIT_LOCK":
            child.wait(60)
            pytest.fail(f"the child never reached its commit: {child.stderr.read().decode()[-3000:]}")
        os.kill(child.pid, signal.SIGSTOP)
        try:
            assert steal(), "the Java-protocol client could not take the lock from the stalled child"
        finally:
            os.kill(child.pid, signal.SIGCONT)
        # the child runs on while the other side holds the lock: it must not complete
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and child.poll() is None:
            assert _completed(base, action) == before
            time.sleep(0.2)
        assert _completed(base, action) == before
        release()
        _out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode != 0
    assert b"HoodieLockError" in err and b"is no longer ours" in err, err.decode()[-3000:]
    assert _completed(base, action) == before
    return err


def _stalled_writer_aborts(base: str, conf: dict[str, str], steal, release) -> None:
    write_arrow(base, pa.table({"id": [1, 2], "ts": [1, 1], "v": ["a", "b"]}), "upsert", conf)
    _stall_inside_the_lock_and_steal_it(WRITE_CHILD.format(base=base, conf=conf), base, "commit", steal, release)
    # the abort rolled the write back: nothing of it pending or visible
    assert HoodieTable.load(base).timeline.pending().filter(actions=["commit"]).instants == []
    assert sorted(read_table(base, columns=["v"]).column("v").to_pylist()) == ["a", "b"]


def test_a_write_whose_zookeeper_session_expired_aborts_before_completing(zookeeper, kazoo, tmp_path):
    table = _name()
    # the server grants at least 2 ticks (6 s with Debian's defaults) whatever we ask
    conf = _table_conf(_zk_settings(zookeeper, table, **{"hoodie.write.lock.zookeeper.session_timeout_ms": "6000",
                                                          lock_keys.WAIT_TIME_MS: "2000"}))
    java = CuratorMutex(kazoo, f"{ZK_BASE}/{table}")
    _stalled_writer_aborts(str(tmp_path / table), conf, steal=lambda: java.acquire(40), release=java.release)


def _java_ddb(ddb, conf: dict[str, str], tmp_path: Path) -> tuple[DynamoDBLockClient, object]:
    lp.lock_provider_for(LockSettings.from_config(HoodieConfig(conf)), str(tmp_path)).close()  # the lock table exists
    java = DynamoDBLockClient(ddb, LOCK_TABLE, lease_ms=2000)

    def release() -> None:
        assert java.release()

    return java, release


def test_a_write_whose_dynamodb_lease_was_taken_over_aborts_before_completing(dynamodb, ddb, tmp_path):
    table = _name()
    conf = _table_conf(_ddb_settings(dynamodb, table, 2000))
    java, release = _java_ddb(ddb, conf, tmp_path)
    _stalled_writer_aborts(str(tmp_path / table), conf, steal=lambda: java.acquire(table, 20000), release=release)


def test_a_compaction_whose_dynamodb_lease_was_taken_over_does_not_complete(dynamodb, ddb, tmp_path):
    table = _name()
    base = str(tmp_path / table)
    conf = _table_conf(_ddb_settings(dynamodb, table, 2000), **{"hoodie.table.type": "MERGE_ON_READ"})
    java, release = _java_ddb(ddb, conf, tmp_path)
    write_arrow(base, pa.table({"id": [1, 2], "ts": [1, 1], "v": ["a", "b"]}), "upsert", conf)
    write_arrow(base, pa.table({"id": [1, 2], "ts": [2, 2], "v": ["c", "d"]}), "upsert", conf)  # logs
    schedule_compaction(HoodieTable.load(base), HoodieConfig(conf), force=True)
    [plan] = HoodieTable.load(base).timeline.pending().filter(actions=["compaction"]).instants
    _stall_inside_the_lock_and_steal_it(COMPACTION_CHILD.format(base=base, conf=conf), base, "commit",
                                        steal=lambda: java.acquire(table, 20000), release=release)
    # the plan stays pending for a retry and none of the child's files is left to be seen
    assert [i.timestamp for i in HoodieTable.load(base).timeline.pending().instants] == [plan.timestamp]
    assert [p.name for p in Path(base).rglob(f"*_{plan.timestamp}.parquet")] == []
    assert sorted(read_table(base, columns=["v"]).column("v").to_pylist()) == ["c", "d"]
    execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(conf))  # the retry
    assert plan.timestamp in _completed(base, "commit")
    assert sorted(read_table(base, columns=["v"]).column("v").to_pylist()) == ["c", "d"]


def _expire_session(hosts: str, client: KazooClient) -> None:
    """Close ``client``'s session from a second connection that joins it: the server
    expires it at once, as it does for a process stalled past the session timeout."""
    twin = KazooClient(hosts=hosts, client_id=client.client_id)
    twin.start(timeout=30)
    twin.stop()
    twin.close()


def test_a_savepoint_whose_zookeeper_session_expired_under_the_lock_is_not_completed(zookeeper, kazoo, tmp_path,
                                                                                      monkeypatch):
    from airflow_hoodie.actions import savepoint
    from airflow_hoodie.actions.transaction import transaction_manager

    table = _name()
    base = str(tmp_path / table)
    conf = _table_conf(_zk_settings(zookeeper, table))
    write_arrow(base, pa.table({"id": [1, 2], "ts": [1, 1], "v": ["a", "b"]}), "upsert", conf)
    [commit] = _completed(base, "commit")
    java = CuratorMutex(kazoo, f"{ZK_BASE}/{table}")
    real_files = savepoint.savepoint_files

    def lose_the_lock_meanwhile(*args, **kwargs):  # runs under the savepoint's lock
        [ours] = transaction_manager._HELD.get()
        _expire_session(zookeeper, ours.client)
        assert java.acquire(30)  # the Java side holds the lock now
        return real_files(*args, **kwargs)

    monkeypatch.setattr(savepoint, "savepoint_files", lose_the_lock_meanwhile)
    try:
        with pytest.raises(HoodieLockError, match="is no longer ours"):
            savepoint.create_savepoint(HoodieTable.load(base), commit, config=HoodieConfig(conf))
        assert _completed(base, "savepoint") == []
    finally:
        java.release()
