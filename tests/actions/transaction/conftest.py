"""Real lock servers on 127.0.0.1, started and stopped (by PID) here: ZooKeeper from
Debian's ``zookeeper`` package and DynamoDB through moto's server mode."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.s3.moto_server import free_port, moto_server, required, stop, wait_for_port

ZK_CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"


def _wait_for_zookeeper_session(hosts: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    """ZooKeeper listens before it serves: on a loaded machine a client connecting right
    after the port opened waited out its whole retry policy (60 s) and the first lock test
    failed. Wait until a session opens, as a client would see it."""
    from kazoo.client import KazooClient
    from kazoo.handlers.threading import KazooTimeoutError

    deadline = time.monotonic() + timeout
    while True:
        client = KazooClient(hosts=hosts, timeout=5)
        try:
            client.start(timeout=5)
            client.stop()
            client.close()
            return
        except KazooTimeoutError:
            client.close()
            if proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {proc.returncode} before serving sessions")
            if time.monotonic() > deadline:
                raise RuntimeError(f"ZooKeeper at {hosts} opened no session within {timeout}s")


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of a standalone ZooKeeper server for this test session."""
    if not Path("/usr/share/java/zookeeper.jar").exists() or not shutil.which("java"):
        required("ZooKeeper", "Debian package zookeeper and java")
    port = free_port()
    data = tmp_path_factory.mktemp("zookeeper")
    log = open(data / "server.log", "wb")
    proc = subprocess.Popen(
        ["java", "-Xmx256m", "-cp", ZK_CLASSPATH, "org.apache.zookeeper.server.ZooKeeperServerMain",
         str(port), str(data / "data")],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc, "ZooKeeper")
        _wait_for_zookeeper_session(f"127.0.0.1:{port}", proc)
        yield f"127.0.0.1:{port}"
    finally:
        stop(proc)
        log.close()


@pytest.fixture(scope="session")
def dynamodb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Endpoint URL of moto's server (DynamoDB API) for this test session."""
    with moto_server(tmp_path_factory.mktemp("moto")) as endpoint:
        yield endpoint
