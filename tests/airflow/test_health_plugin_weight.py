"""Airflow imports every plugin in every task process (for macros and listeners): ours must
not drag Airflow's API modules (FastAPI routes, auth managers) into them. Fresh interpreters,
since this session has long imported everything."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
import airflow.sdk
import airflow_hoodie.plugins.hoodie_plugin as plugin
loaded = sorted(m for m in sys.modules if m.startswith(("airflow.api_fastapi", "fastapi", "airflow_hoodie.health")))
apps = plugin.HoodiePlugin.fastapi_apps if "--read-apps" in sys.argv else []
print(json.dumps({"before": loaded, "prefixes": [a["url_prefix"] for a in apps]}))
"""


def _probe(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_plugin_loads_no_api_code() -> None:
    assert _probe()["before"] == []


def test_the_api_server_gets_its_app_when_it_asks() -> None:
    assert _probe("--read-apps")["prefixes"] == ["/hoodie"]
