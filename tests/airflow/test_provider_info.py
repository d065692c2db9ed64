"""The provider registers with Airflow: entry point, schema-valid info, hooks and assets."""

from __future__ import annotations

import importlib
import json
import os
import pathlib
import subprocess
import sys
from importlib.metadata import entry_points

import jsonschema

import airflow_hoodie
from airflow_hoodie.provider_info import provider_info


def test_entry_point_is_registered():
    eps = [ep for ep in entry_points(group="apache_airflow_provider") if ep.value.startswith("airflow_hoodie")]
    assert eps, "airflow_hoodie is not registered under apache_airflow_provider; pip install -e ."
    info = eps[0].load()()
    assert info["package-name"] == "airflow-hoodie"
    assert info["versions"] == [airflow_hoodie.__version__]


def test_provider_info_matches_airflow_schema():
    import airflow

    schema_path = pathlib.Path(airflow.__file__).parent / "provider_info.schema.json"
    jsonschema.validate(provider_info(), json.loads(schema_path.read_text()))


def test_every_listed_module_and_class_imports():
    info = provider_info()
    for section in ("hooks", "operators", "sensors", "triggers"):
        for entry in info[section]:
            for module in entry["python-modules"]:
                importlib.import_module(module)
    for conn in info["connection-types"]:
        module, _, cls = conn["hook-class-name"].rpartition(".")
        hook = getattr(importlib.import_module(module), cls)
        assert hook.conn_type == conn["connection-type"]
    for uri in info["asset-uris"]:
        for key in ("handler", "factory"):
            module, _, fn = uri[key].rpartition(".")
            assert callable(getattr(importlib.import_module(module), fn))


def test_providers_manager_sees_hook_and_asset_scheme(airflow_db):
    from airflow.providers_manager import ProvidersManager
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    pm = ProvidersManager()
    assert "airflow-hoodie" in pm.providers
    assert any(k.startswith("extra__hoodie__base_path") for k in pm.connection_form_widgets)
    assert pm.field_behaviours["hoodie"]["relabeling"]["login"] == "Storage access key"
    runtime = ProvidersManagerTaskRuntime()
    assert runtime.hooks["hoodie"].hook_class_name == "airflow_hoodie.hooks.hoodie.HoodieHook"
    assert "hudi+file" in runtime.asset_uri_handlers


def test_airflow_providers_list_shows_us(airflow_db):
    airflow_bin = pathlib.Path(sys.executable).with_name("airflow")
    out = subprocess.run([str(airflow_bin), "providers", "list", "--output", "json"],
                         capture_output=True, text=True, env=os.environ.copy(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert "airflow-hoodie" in out.stdout
