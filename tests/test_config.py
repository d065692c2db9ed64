"""The config model: one declaration per key, defaults that do not depend on import order."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest

from airflow_hoodie import config as config_module
from airflow_hoodie.config import ConfigKey, HoodieConfig, load_registry, register
from airflow_hoodie.errors import HoodieConfigError

#: prints every registered key with its default, after importing the named modules first
_DUMP = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
from airflow_hoodie.config import HoodieConfig, load_registry, _REGISTRY
load_registry()
cfg = HoodieConfig()
print(json.dumps({k: cfg.get(k) for k in sorted(_REGISTRY)}))
"""


def _defaults_after_importing(*modules: str) -> dict[str, str | None]:
    out = subprocess.run([sys.executable, "-c", _DUMP, *modules], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_defaults_are_the_same_whatever_was_imported_first() -> None:
    plain = _defaults_after_importing()
    write_first = _defaults_after_importing("airflow_hoodie.actions.write")
    keygen_first = _defaults_after_importing("airflow_hoodie.table.keygen.key_generator", "airflow_hoodie.actions.clean")
    assert plain == write_first == keygen_first
    # the bug this guards against: importing the write flow changed this default
    assert plain["hoodie.datasource.write.recordkey.field"] is None
    assert len(plain) > 100


def test_a_key_read_before_its_module_was_imported_gets_its_default() -> None:
    code = ("from airflow_hoodie.config import HoodieConfig; "
            "print(HoodieConfig().get('hoodie.cleaner.commits.retained'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "10"


def test_declaring_a_key_twice_raises() -> None:
    load_registry()
    with pytest.raises(HoodieConfigError, match="declared twice"):
        register(ConfigKey("hoodie.cleaner.commits.retained", "3"))
    with pytest.raises(HoodieConfigError, match="declared twice"):
        # an alias of another key counts as a declaration too
        register(ConfigKey("hoodie.example.new.key", None, "", ("hoodie.table.recordkey.fields",)))
    assert "hoodie.example.new.key" not in config_module._REGISTRY


def test_an_alias_reads_the_value_of_its_key() -> None:
    cfg = HoodieConfig({"hoodie.datasource.write.recordkey.field": "id"})
    assert cfg.get("hoodie.table.recordkey.fields") == "id"
    assert HoodieConfig({"hoodie.table.recordkey.fields": "uuid"}).get("hoodie.datasource.write.recordkey.field") == "uuid"


def test_the_config_shipped_to_executors_pickles_with_its_values() -> None:
    cfg = HoodieConfig({"hoodie.logfile.max.size": "2048"})
    back = pickle.loads(pickle.dumps(cfg))
    assert back.get_int("hoodie.logfile.max.size") == 2048
    assert back.get_int("hoodie.logfile.data.block.max.size") == 256 * 1024 * 1024
