"""The provider's Airflow plugin against a real ``airflow api-server`` (issue 40, items 1-3).

Two servers share one SQLite metadata DB: one with SimpleAuthManager's all-admins mode (what
a browser sees with no login: the headless Chromium check) and one with a password user (a
request without a token must be refused). ``[hoodie] table_roots`` names a local directory
and an S3 prefix on moto; one table outside them is known only as a ``hudi+file`` Asset, and
one is known by nothing and must stay unreachable.

The MERGE_ON_READ tables under test have three delta commits, a pending compaction plan, a
dead writer's inflight delta commit (no heartbeat: its writer never beat or died) and small
base files; the expected figures are derived here from the files on storage, not from the
code under test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from airflow_hoodie.actions import compaction
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from tests.actions.test_attack_lake_sequences import lake_config, lake_rows
from tests.airflow.api_server import (
    AIRFLOW,
    ApiServer,
    api_server,
    migrate,
    reserialize,
    server_env,
)
from tests.s3.moto_server import free_port, moto_server, required, stop

pytestmark = pytest.mark.timeout(900)

SMALL_FILE_LIMIT = 104857600  # hoodie.parquet.small.file.limit's default: the API is given no write config
_COMPLETED = re.compile(r"^(\d{17})\.(deltacommit|commit)$")
_PENDING = re.compile(r"^(\d{17})\.(\w+)\.(requested|inflight)$")


CFG = lake_config(6, "MERGE_ON_READ", "EVENT_TIME_ORDERING", "BLOOM")


def build_mor_table(uri: str, storage_options: dict[str, str] | None = None, dead_writer: bool = True
                    ) -> dict[str, str]:
    """Three delta commits (an insert, two upserts into logs), a compaction plan, then a
    writer that made its instant inflight and died. Returns {role: instant}."""
    cfg = CFG
    rows = [{"id": f"k{i}", "p": f"p{i % 3}", "ts": 1, "v": "a", "d": float(i)} for i in range(12)]
    write_arrow(uri, lake_rows(rows), "insert", cfg, storage_options=storage_options)
    for ts in (2, 3):
        changed = [{**r, "ts": ts, "v": f"v{ts}"} for r in rows[: 4 + ts]]
        write_arrow(uri, lake_rows(changed), "upsert", cfg, storage_options=storage_options)
    planned = compaction.schedule_compaction(HoodieTable.load(uri, storage_options), HoodieConfig(cfg), force=True)
    assert planned.instant is not None, planned.reason
    if not dead_writer:
        return {"compaction": planned.instant.timestamp}
    table = HoodieTable.load(uri, storage_options)
    dead = table.new_instant_time()
    writer = table.timeline_writer()
    writer.create_requested(Instant(dead, Action.DELTA_COMMIT, State.REQUESTED))
    writer.transition_to_inflight(Instant(dead, Action.DELTA_COMMIT, State.REQUESTED))
    return {"compaction": planned.instant.timestamp, "dead": dead}


@dataclass(frozen=True)
class FromFiles:
    """What the table's files say, counted without our reader."""

    pending: dict[str, tuple[str, str]]
    delta_commits: int
    file_groups: int
    log_files: int
    small_file_groups: int


def from_files(uri: str, storage_options: dict[str, str] | None = None) -> FromFiles:
    storage, base = Storage.for_uri(uri, storage_options)
    timeline = [e.name for e in storage.list_dir(Storage.join(base, ".hoodie")) if not e.is_dir]
    completed = {m.group(1) for n in timeline if (m := _COMPLETED.match(n))}
    pending: dict[str, tuple[str, str]] = {}
    for name in timeline:
        m = _PENDING.match(name)
        if m and m.group(1) not in completed:
            ts, action, state = m.groups()
            if state == "inflight" or ts not in pending:
                pending[ts] = (action, state.upper())
    data = [e for e in storage.list_dir(base, recursive=True)
            if not e.is_dir and "/.hoodie" not in e.path and not e.name.startswith(".hoodie_partition")]
    groups, logs, small = set(), 0, set()
    for entry in data:
        if entry.name.endswith(".parquet"):
            file_id = entry.name.split("_", 1)[0]
            groups.add(file_id)
            if entry.size < SMALL_FILE_LIMIT:
                small.add(file_id)
        elif ".log." in entry.name:
            groups.add(entry.name[1:].split("_", 1)[0])
            logs += 1
    deltas = sum(1 for n in timeline if (m := _COMPLETED.match(n)) and m.group(2) == "deltacommit")
    return FromFiles(pending, deltas, len(groups), logs, len(small))


#: a DAG whose task writes the asset-only table: Airflow records the Asset and the reference
ORDERS_DAG = """
import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

from airflow_hoodie.assets import hoodie_table_asset

with DAG(dag_id="orders_ingest", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")):
    EmptyOperator(task_id="write", outlets=[hoodie_table_asset("{table}")])
"""


@dataclass(frozen=True)
class Lake:
    local_root: Path
    s3_root: str
    local_table: str
    s3_table: str
    asset_table: str
    outside_table: str
    instants: dict[str, dict[str, str]]
    s3_options: dict[str, str]


@dataclass(frozen=True)
class Servers:
    admins: ApiServer
    users: ApiServer
    env: dict[str, str]


@pytest.fixture(scope="module")
def s3_options(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with moto_server(tmp_path_factory.mktemp("moto_health")) as endpoint:
        yield {"endpoint_override": endpoint, "region": "us-east-1"}


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory, s3_options: dict[str, str]) -> Lake:
    import boto3

    top = tmp_path_factory.mktemp("health_lake")
    bucket = f"health-{uuid.uuid4().hex[:10]}"
    boto3.client("s3", endpoint_url=s3_options["endpoint_override"], region_name="us-east-1").create_bucket(Bucket=bucket)
    lake = Lake(local_root=top / "lake", s3_root=f"s3://{bucket}/lake", local_table=str(top / "lake" / "trips"),
                s3_table=f"s3://{bucket}/lake/trips", asset_table=str(top / "assets" / "orders"),
                outside_table=str(top / "private" / "secret"), instants={}, s3_options=s3_options)
    lake.instants["local"] = build_mor_table(lake.local_table)
    lake.instants["s3"] = build_mor_table(lake.s3_table, s3_options)
    lake.instants["asset"] = build_mor_table(lake.asset_table)
    build_mor_table(lake.outside_table)
    (lake.local_root / "not_a_table").mkdir()
    return lake


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory, lake: Lake) -> Iterator[Servers]:
    home = tmp_path_factory.mktemp("api_server_home")
    roots = f"{lake.local_root},{lake.s3_root}/"
    conn = json.dumps({"conn_type": "hoodie", "extra": {"storage_options": lake.s3_options}})
    extra = {"AIRFLOW_CONN_HOODIE_DEFAULT": conn}
    db = home / "airflow.db"
    admins_env = server_env(home / "admins", db, roots, True, extra)
    users_env = server_env(home / "users", db, roots, False, extra)
    migrate(admins_env, home / "migrate.log")
    (home / "admins" / "dags" / "orders_ingest.py").write_text(ORDERS_DAG.format(table=lake.asset_table))
    reserialize(admins_env, home / "migrate.log")
    with contextlib.ExitStack() as stack:
        admins = stack.enter_context(api_server(admins_env, home / "admins.log", all_admins=True))
        users = stack.enter_context(api_server(users_env, home / "users.log", all_admins=False))
        yield Servers(admins, users, users_env)


def _quote(path: str) -> str:
    import urllib.parse

    return urllib.parse.quote(path, safe="")


def test_the_plugin_is_registered_with_airflow(servers: Servers) -> None:
    status, body = servers.users.request("/api/v2/plugins", token=servers.users.token())
    assert status == 200, body
    plugin = next(p for p in body["plugins"] if p["name"] == "hoodie")
    assert plugin["fastapi_apps"][0]["url_prefix"] == "/hoodie"
    assert [(v["destination"], v["href"]) for v in plugin["external_views"]] == [
        ("nav", "/hoodie/ui"), ("dag", "/hoodie/ui?dag_id={DAG_ID}")]
    assert plugin["source"]  # listed as coming from the provider
    out = subprocess.run([AIRFLOW, "plugins", "-o", "json"], env=servers.env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    listed = {p["name"]: p for p in json.loads(out.stdout[out.stdout.index("["):])}
    assert "hoodie" in listed, out.stdout


@pytest.mark.parametrize("where", ["local", "s3"])
def test_table_health_is_what_the_files_say(servers: Servers, lake: Lake, where: str) -> None:
    uri, options = (lake.local_table, None) if where == "local" else (lake.s3_table, lake.s3_options)
    expected = from_files(uri, options)
    instants = lake.instants[where]
    assert expected.pending == {instants["compaction"]: ("compaction", "REQUESTED"),
                                instants["dead"]: ("deltacommit", "INFLIGHT")}  # the fixture is what we think
    status, health = servers.users.request(f"/hoodie/api/table?path={_quote(uri)}", token=servers.users.token())
    assert status == 200, health
    assert health["table_type"] == "MERGE_ON_READ"
    assert health["table_version"] == 6
    assert {p["instant"]: (p["action"], p["state"]) for p in health["pending"]} == expected.pending
    live = {p["instant"]: p["heartbeat_live"] for p in health["pending"]}
    assert live[instants["dead"]] is False
    assert all(p["age_seconds"] >= 0 for p in health["pending"])
    assert health["delta_commits_since_compaction"] == expected.delta_commits == 3
    assert health["file_groups"] == expected.file_groups > 0
    assert health["log_files"] == expected.log_files > 0
    assert health["small_file_groups"] == expected.small_file_groups > 0
    assert "compaction" in {d["service"] for d in health["maintenance_due"]}
    assert instants["dead"] in health["summary"]
    # the listing names both root tables and the Asset's, each with its summary, and nothing else
    status, listing = servers.users.request("/hoodie/api/tables", token=servers.users.token())
    assert status == 200, listing
    paths = {row["path"]: row for row in listing["tables"]}
    assert set(paths) == {lake.local_table, lake.s3_table, lake.asset_table}
    assert paths[uri]["summary"] == health["summary"]
    assert paths[lake.asset_table]["source"] == "asset"


def test_an_asset_table_outside_the_roots_opens(servers: Servers, lake: Lake) -> None:
    status, health = servers.users.request(f"/hoodie/api/table?path={_quote('file://' + lake.asset_table)}",
                                           token=servers.users.token())
    assert status == 200, health
    assert lake.instants["asset"]["compaction"] in {p["instant"] for p in health["pending"]}


def test_a_dags_tables(servers: Servers, lake: Lake) -> None:
    """The DAG tab's listing: the tables of that DAG's Assets only."""
    token = servers.users.token()
    status, body = servers.users.request("/hoodie/api/tables?dag_id=orders_ingest", token=token)
    assert status == 200, body
    assert [row["path"] for row in body["tables"]] == [lake.asset_table]
    assert lake.instants["asset"]["dead"] in body["tables"][0]["summary"]
    status, body = servers.users.request("/hoodie/api/tables?dag_id=no_such_dag", token=token)
    assert (status, body["tables"]) == (200, [])


def test_no_token_is_refused(servers: Servers, lake: Lake) -> None:
    for route in ("/hoodie/api/tables", f"/hoodie/api/table?path={_quote(lake.local_table)}"):
        status, body = servers.users.request(route)
        assert status in (401, 403), (route, status, body)
        assert lake.local_table not in str(body)
    status, body = servers.users.request("/hoodie/api/tables", token="not-a-jwt")
    assert status in (401, 403), body
    # what the page sends from inside Airflow's UI: the UI's session cookie, no header
    status, body = servers.users.request("/hoodie/api/tables", cookie=f"_token={servers.users.token()}")
    assert status == 200, body


@pytest.mark.parametrize("path", [
    "{outside}",                                 # a real table nobody declared
    "{root}/../private/secret",                  # climbing out of a root
    "{root}-sibling/trips",                      # a prefix of the root's name is not the root
    "s3://other-bucket/lake/trips",              # another bucket
    "relative/trips",
])
def test_paths_outside_the_roots_are_refused(servers: Servers, lake: Lake, path: str) -> None:
    path = path.format(outside=lake.outside_table, root=lake.local_root)
    status, body = servers.users.request(f"/hoodie/api/table?path={_quote(path)}", token=servers.users.token())
    assert status in (400, 403, 404), (status, body)
    assert "MERGE_ON_READ" not in str(body)


def test_a_path_under_a_root_that_is_no_table_is_not_found(servers: Servers, lake: Lake) -> None:
    status, body = servers.users.request(f"/hoodie/api/table?path={_quote(str(lake.local_root / 'not_a_table'))}",
                                         token=servers.users.token())
    assert status == 404, body


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    required("chromium", "apt-get install chromium")
    raise AssertionError("unreachable")


def _chromium_run(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--virtual-time-budget=15000",
             "--window-size=1280,1900"]
    return subprocess.run([_chromium(), *flags, *args], capture_output=True, text=True, timeout=180, check=False)


def test_the_page_renders_in_a_real_browser(servers: Servers, lake: Lake, tmp_path: Path) -> None:
    url = f"{servers.admins.url}/hoodie/ui?path={_quote(lake.local_table)}&refresh=60"
    dom = _chromium_run(["--dump-dom", url], tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert lake.instants["local"]["compaction"] in html
    assert 'id="table-type">MERGE_ON_READ<' in html
    chart = re.search(r'<svg id="timeline-chart".*?</svg>', html, re.DOTALL)
    assert chart is not None, html[-3000:]
    assert len(re.findall(r'class="mark completed"', chart.group(0))) >= 3
    assert len(re.findall(r'class="mark pending"', chart.group(0))) == 2
    assert "Stuck: deltacommit " + lake.instants["local"]["dead"] in html
    assert "last compaction</span><b>never</b>" in html
    assert lake.s3_table in html  # the list of known tables
    assert lake.outside_table not in html
    # the tab on a DAG: a DAG of one table shows that table
    dag_tab = _chromium_run(["--dump-dom", f"{servers.admins.url}/hoodie/ui?dag_id=orders_ingest&refresh=60"],
                            tmp_path / "profile3")
    assert dag_tab.returncode == 0, dag_tab.stderr[-2000:]
    assert lake.instants["asset"]["compaction"] in dag_tab.stdout
    assert "Hudi tables of orders_ingest" in dag_tab.stdout
    assert lake.local_table not in dag_tab.stdout
    shot = tmp_path / "table_health.png"
    done = _chromium_run([f"--screenshot={shot}", url], tmp_path / "profile2")
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.stat().st_size > 10_000
    if os.environ.get("HOODIE_HEALTH_SCREENSHOT"):
        shutil.copy(shot, os.environ["HOODIE_HEALTH_SCREENSHOT"])


def test_the_operators_link_opens_the_tables_page(servers: Servers, lake: Lake) -> None:
    from airflow_hoodie.links import HoodieTableHealthLink
    from airflow_hoodie.operators.hoodie import HoodieCompactionPlanOperator

    link = HoodieTableHealthLink().get_link(HoodieCompactionPlanOperator(task_id="p", base_path=lake.local_table),
                                            ti_key=None)
    status, page = servers.admins.request(link)
    assert status == 200
    assert '<div id="detail"></div>' in page  # the shell: its data comes from the API
    status, health = servers.admins.request("/hoodie/api/table?" + link.split("?", 1)[1])
    assert status == 200, health
    assert health["base_path"].rstrip("/").endswith(lake.local_table)


@contextlib.contextmanager
def devtools(url: str, profile: Path, log: Path) -> Iterator[Callable[[str], Any]]:
    """Chromium with ``url`` open and its DevTools endpoint on 127.0.0.1; yields a function
    that evaluates a JS expression in the page. Stopped by its PID."""
    from websockets.sync.client import connect

    port = free_port()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--remote-debugging-port={port}"]
    with open(log, "ab") as out:
        proc = subprocess.Popen([_chromium(), *flags, url], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        ws_url = None
        while ws_url is None:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            with contextlib.suppress(OSError, ValueError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as resp:
                    pages = [t for t in json.loads(resp.read()) if t.get("type") == "page"]
                ws_url = pages[0]["webSocketDebuggerUrl"] if pages else None
            time.sleep(0.3)
        with connect(ws_url, max_size=None, open_timeout=30) as ws:
            ids = iter(range(1, 1 << 30))

            def evaluate(expression: str) -> Any:
                call = next(ids)
                ws.send(json.dumps({"id": call, "method": "Runtime.evaluate",
                                    "params": {"expression": expression, "returnByValue": True}}))
                while True:
                    message = json.loads(ws.recv(timeout=30))
                    if message.get("id") == call:
                        return message["result"]["result"].get("value")

            yield evaluate
    finally:
        stop(proc)


def _wait_for(what: str, check: Callable[[], Any], timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_the_open_page_shows_an_instant_that_completes_later(servers: Servers, lake: Lake, tmp_path: Path) -> None:
    """The page polls: a compaction that completes while it is open shows up without a reload.
    Last in this file: it adds a table under the local root."""
    from airflow_hoodie.actions.executor import LocalExecutor

    live = str(lake.local_root / "live")
    planned = build_mor_table(live, dead_writer=False)["compaction"]
    last_write = max(i.timestamp for i in HoodieTable.load(live).timeline.instants if i.is_completed)
    url = f"{servers.admins.url}/hoodie/ui?path={_quote(live)}&refresh=2"
    seen = "(document.getElementById('seen').getAttribute('data-latest') || '')"
    pending_marks = "document.querySelectorAll('#timeline-chart .mark.pending').length"
    with devtools(url, tmp_path / "profile", tmp_path / "chromium.log") as evaluate:
        _wait_for("the page's first poll", lambda: evaluate(seen) == last_write)
        assert evaluate(pending_marks) == 1
        compaction.execute_pending_compactions(HoodieTable.load(live), LocalExecutor(), HoodieConfig(CFG))
        _wait_for("the completed compaction on the open page", lambda: evaluate(seen) != last_write, timeout=120)
        assert evaluate(seen).split() == [last_write, planned]
        assert evaluate(pending_marks) == 0
        assert evaluate("document.querySelectorAll('#timeline-chart .mark.completed').length") == 4
