"""Make the README's screenshot of the table health page (tests/airflow/table_health.png).

    .venv/bin/python -m tests.airflow.health_screenshot tests/airflow/table_health.png

The demo's table (``dags_examples``: ``trips``, MERGE_ON_READ, keyed by uuid, by city, the
demo's write and service settings) is written in-process over a few "days" as the example
DAGs would (ingests, a compaction, a clean, then a compaction plan waiting for the
maintenance DAG), a real api-server (all users admins) serves it, and headless Chromium
takes the picture. No Spark: the page shows the timeline, not how it was written.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path

import pyarrow as pa

from tests.airflow.api_server import api_server, migrate, server_env

REPO_ROOT = Path(__file__).resolve().parents[2]
CITIES = ("amsterdam", "berlin", "chennai", "sao_paulo", "san_francisco")


def _day(day: int, n: int) -> pa.Table:
    rows = range(n * (day - 1) // 2, n * (day - 1) // 2 + n)
    return pa.table({
        "uuid": [f"trip-{i:05d}" for i in rows],
        "ts": [day * 1000 + i for i in rows],
        "city": [CITIES[0] if i % 3 == 0 else CITIES[i % len(CITIES)] for i in rows],
        "rider": [f"rider-{i % 97}" for i in rows],
        "fare": [float(5 + (i * 37) % 90) for i in rows],
    })


def build_demo_table(base: str) -> None:
    """Four ingest days with the demo's settings, its maintenance once in between, and the
    next compaction planned but not yet run."""
    sys.path.insert(0, str(REPO_ROOT / "dags_examples"))
    from hoodie_example_common import SERVICE_CONF, WRITE_CONF

    from airflow_hoodie.actions import clean, compaction
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.actions.write import write_arrow
    from airflow_hoodie.config import HoodieConfig
    from airflow_hoodie.table.hoodie_table import HoodieTable

    conf = {**WRITE_CONF, "hoodie.parquet.small.file.limit": "0"}
    write_arrow(base, _day(1, 4000), "insert", conf)
    write_arrow(base, _day(2, 3000), "upsert", conf)
    services = HoodieConfig({**conf, **SERVICE_CONF["compaction"], **SERVICE_CONF["clean"]})
    compaction.schedule_compaction(HoodieTable.load(base), services, force=True)
    compaction.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), services)
    write_arrow(base, _day(3, 3000), "upsert", conf)
    clean.run_clean(HoodieTable.load(base), services, LocalExecutor())
    write_arrow(base, _day(4, 3000), "upsert", conf)
    compaction.schedule_compaction(HoodieTable.load(base), services, force=True)


def _shrink(png: Path) -> None:
    """A 64-colour palette: the page is flat colours, and the README's image stays small."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(png) as image:
        small = image.convert("RGB").quantize(colors=64)
    small.save(png, optimize=True)


def main(out: str) -> None:
    work = Path(tempfile.mkdtemp(prefix="hoodie-health-shot-"))
    try:
        table = str(work / "tables" / "trips")
        build_demo_table(table)
        env = server_env(work / "home", work / "home" / "airflow.db", str(work / "tables"), True)
        migrate(env, work / "migrate.log")
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if not chromium:
            raise SystemExit("chromium not found: bash .ci/setup test installs it")
        with contextlib.ExitStack() as stack:
            server = stack.enter_context(api_server(env, work / "server.log", all_admins=True))
            url = f"{server.url}/hoodie/ui?{urllib.parse.urlencode({'path': table})}&refresh=600"
            subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                            "--no-first-run", "--disable-background-networking", "--disable-component-update",
                            "--disable-sync", "--hide-scrollbars", f"--user-data-dir={work / 'profile'}",
                            "--virtual-time-budget=15000", "--window-size=1100,1400",
                            f"--screenshot={Path(out).resolve()}", url],
                           check=True, capture_output=True, timeout=180)
        _shrink(Path(out))
        print(f"wrote {out} ({Path(out).stat().st_size} bytes)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/airflow/table_health.png")
