"""A real ``airflow api-server`` for the plugin tests: SimpleAuthManager, SQLite, 127.0.0.1.

The server is a separate process with its own AIRFLOW_HOME and metadata DB, started on a free
port and stopped by its PID (its process group: the api-server forks its uvicorn worker), so
it sees the provider exactly as an installed one: through the ``apache_airflow_provider``
entry point, not through anything this test process imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.s3.moto_server import free_port

AIRFLOW = str(Path(sys.executable).with_name("airflow"))
USER, PASSWORD = "hoodie", "hoodie-test-password"
START_TIMEOUT_S = 180


@dataclass(frozen=True)
class ApiServer:
    """A running api-server and what a client needs to call it."""

    url: str
    all_admins: bool
    log: Path

    def request(self, path: str, token: str | None = None, method: str = "GET",
                body: Mapping[str, Any] | None = None, cookie: str | None = None) -> tuple[int, Any]:
        """(status, parsed JSON or text) of one call; never raises on an HTTP error status."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        if cookie:
            req.add_header("Cookie", cookie)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def token(self) -> str:
        """A JWT from ``POST /auth/token`` (the user's password when not all admins)."""
        if self.all_admins:
            status, body = self.request("/auth/token")
        else:
            status, body = self.request("/auth/token", method="POST",
                                        body={"username": USER, "password": PASSWORD})
        assert status in (200, 201), (status, body)
        return body["access_token"]


def server_env(home: Path, db: Path, roots: str, all_admins: bool,
               extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an api-server (and of the ``airflow db migrate`` before it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    home.mkdir(parents=True, exist_ok=True)
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    (home / "dags").mkdir(exist_ok=True)
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{db}",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW__CORE__AUTH_MANAGER":
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": str(all_admins),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:viewer",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__API__SECRET_KEY": "hoodie-plugin-test-secret",
        "AIRFLOW__API_AUTH__JWT_SECRET": "hoodie-plugin-test-jwt-secret",
        "AIRFLOW__HOODIE__TABLE_ROOTS": roots,
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    })
    env.update(extra or {})
    return env


def migrate(env: Mapping[str, str], log: Path) -> None:
    with open(log, "ab") as out:
        subprocess.run([AIRFLOW, "db", "migrate"], env=dict(env), stdout=out, stderr=subprocess.STDOUT,
                       check=True, timeout=300)


def reserialize(env: Mapping[str, str], log: Path) -> None:
    """Parse the DAGs folder into the metadata DB as the DAG processor would: DAGs, their
    Assets (``asset``, ``asset_active``) and the tasks' references to them."""
    with open(log, "ab") as out:
        subprocess.run([AIRFLOW, "dags", "reserialize"], env=dict(env), stdout=out, stderr=subprocess.STDOUT,
                       check=True, timeout=300)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group (led by the PID we started), SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@contextlib.contextmanager
def api_server(env: Mapping[str, str], log: Path, all_admins: bool) -> Iterator[ApiServer]:
    """Start ``airflow api-server`` on 127.0.0.1 and a free port; wait until it answers."""
    port = free_port()
    with open(log, "ab") as out:
        proc = subprocess.Popen([AIRFLOW, "api-server", "-H", "127.0.0.1", "-p", str(port), "-w", "1"],
                                env=dict(env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = ApiServer(f"http://127.0.0.1:{port}", all_admins, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"api-server exited with {proc.returncode}: {log.read_text()[-3000:]}")
            try:
                if server.request("/api/v2/monitor/health")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"api-server not up in {START_TIMEOUT_S}s: {log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield server
    finally:
        _stop(proc)
