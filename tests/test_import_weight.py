"""What a process loads for the little it does (issue 20, item 2).

A Spark executor writing a base file and Airflow's triggerer polling a timeline each make a
config lookup; the first lookup loads the key catalog. If the catalog imported the code that
uses the keys, every executor would load boto3 and kazoo (the DynamoDB and ZooKeeper lock
providers) and every deferred sensor pyspark. Each check runs in a fresh interpreter, since
this test session has long imported everything.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import airflow_hoodie

PACKAGE_DIR = Path(airflow_hoodie.__file__).parent

_PROBE = """
import importlib, json, sys
for name in sys.argv[2:]:
    importlib.import_module(name)
from airflow_hoodie.config import HoodieConfig
assert HoodieConfig().get("hoodie.cleaner.commits.retained") == "10"
print(json.dumps(sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)))
"""


def _loaded_after_importing(modules: list[str], watched: list[str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(watched), *modules],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_format_layer_loads_no_lock_client_and_no_airflow() -> None:
    loaded = _loaded_after_importing(
        ["airflow_hoodie.table", "airflow_hoodie.table.file_group.base_file_writer"],
        ["boto3", "botocore", "kazoo", "airflow", "pyspark"])
    assert loaded == []


def test_the_airflow_layer_loads_no_pyspark_and_no_lock_client() -> None:
    """What Airflow's triggerer loads for a deferred sensor, and an executor for any task."""
    loaded = _loaded_after_importing(
        ["airflow_hoodie.triggers.hoodie", "airflow_hoodie.sensors.hoodie", "airflow_hoodie.operators.hoodie"],
        ["pyspark", "py4j", "boto3", "botocore", "kazoo"])
    assert loaded == []


def _calls_register(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in ("register", "register_prefix"):
                return True
    return False


def test_only_the_catalog_declares_keys_and_it_imports_nothing_but_config() -> None:
    declaring = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        rel = path.relative_to(PACKAGE_DIR).as_posix()
        if rel.startswith("config_keys/") or rel == "config.py":
            continue
        if _calls_register(ast.parse(path.read_text())):
            declaring.append(rel)
    assert declaring == [], f"keys declared outside airflow_hoodie/config_keys: {declaring}"

    catalog = sorted((PACKAGE_DIR / "config_keys").glob("*.py"))
    assert len(catalog) > 5
    for path in catalog:
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        assert imported <= {"__future__", "airflow_hoodie.config"}, f"{path.name} imports {imported}"
