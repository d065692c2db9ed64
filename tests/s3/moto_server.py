"""moto's server mode on 127.0.0.1, one process per test session, stopped by its PID.

Shared by the S3 tests (tests/s3) and the DynamoDB lock tests (tests/actions/transaction):
moto serves every AWS API on the one port. Under ``CI=true`` a moto that cannot start fails
the session instead of skipping it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {timeout}s")


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the process we started (by its PID), SIGKILL if it lingers."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)


def required(what: str, hint: str) -> None:
    """Skip a test whose server is missing, except under CI, where that is a failure."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required under CI ({hint}); bash .ci/setup installs it")
    pytest.skip(f"{what} not available: {hint}")


@contextlib.contextmanager
def moto_server(log_dir: Path) -> Iterator[str]:
    """Start ``python -m moto.server`` on a free port; yields its endpoint URL. Sets the
    standard AWS environment (fake keys, region) when it is unset, as a user's would be."""
    try:
        import moto.server  # noqa: F401
    except ImportError:
        required("moto[server]", "pip install 'moto[server]'")
    port = free_port()
    log = open(log_dir / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    try:
        try:
            wait_for_port(port, proc, "moto server")
        except RuntimeError as exc:
            required("moto server", str(exc))
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)
        log.close()
