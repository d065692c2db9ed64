"""Settings are parsed once per action (issue 37): below an action's entry point no code reads
a ``hoodie.*`` option from the job's config; it takes the typed settings object built there.

A static scan of ``airflow_hoodie/``: every call of a ``HoodieConfig`` getter (``get``,
``get_int``, ``get_bool``, ``get_float``, ``get_list``, ``require``) on a name that holds a
job's config (``config``, ``cfg``, ``conf``, ``write_config``, ``self.config`` of a client)
must sit in a settings object or an entry point named below, each with the reason it may.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "airflow_hoodie"
GETTERS = {"get", "get_int", "get_bool", "get_float", "get_list", "require"}
CONFIG_NAMES = {"config", "cfg", "conf", "write_config"}

#: where a job's options may be read, and why
ALLOWED = {
    "settings/": "the settings objects themselves",
    "actions/write_settings.py": "the write's settings object",
    "actions/write_config.py": "the write settings' parsers (key generator, table creation, table checks)",
    "actions/merge_settings.py": "the write settings' parsers (ordering fields, merge mode)",
    "config.py": "HoodieConfig itself",
    "spark/job.py": "entry point: a job's arguments become its config",
    "spark/session.py": "entry point: the Spark session's own spark.* options",
    "cli/": "entry point: the command line",
    "hooks/": "entry point: the Airflow hook validates a task's options before submitting it",
    "operators/": "entry point: operators",
    "sensors/": "entry point: sensors",
    "triggers/": "entry point: triggers",
    "plugins/": "entry point: the Airflow plugin's API",
    "health/": "entry point: a health report reads the job's service settings once per report",
    "table/keygen/": "the key generator's settings, read once when a generator is built",
    "table/timeline/lsm_timeline_writer.py": "LsmSettings.from_config, a settings object",
    "table/record_merger.py": "MergeConfig.from_properties, the table's merge settings object",
    "table/properties.py": "TableConfig, the table's own settings",
    "table/table_format.py": "TableFormat.of: the table's format, from its own hoodie.properties (not a job's options)",
    "table/supported_features.py": "checks of the table's own properties",
    "table/storage/": "storage options (pyarrow filesystem keys), not hoodie.* options",
}


def _allowed(rel: str) -> bool:
    return any(rel == key or (key.endswith("/") and rel.startswith(key)) for key in ALLOWED)


def _receiver(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def config_reads() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if _allowed(rel):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in GETTERS
                    and _receiver(node.func.value) in CONFIG_NAMES):
                found.append(f"{rel}:{node.lineno} {ast.unparse(node)[:90]}")
    return found


def test_no_option_is_read_below_an_entry_point() -> None:
    reads = config_reads()
    assert not reads, ("a job's option read outside a settings object or entry point; parse it in the action's "
                       "settings object and pass the value down:\n" + "\n".join(reads))


@pytest.mark.parametrize("key", sorted(ALLOWED))
def test_every_exception_still_exists(key: str) -> None:
    """An allowance for a module that is gone would let a new module of that name read options."""
    target = PACKAGE / key
    assert target.exists(), f"{key} is allowed to read options but no longer exists; drop it from ALLOWED"
