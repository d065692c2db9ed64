"""Run a test module on every table version we write: a module opts in with
``pytestmark = pytest.mark.usefixtures("table_version")`` (and imports the fixture), and its
table settings take :func:`version_settings`, so the same upsert, service and concurrency
tests check a version 6 table and a Hudi 1.1 (version 9) one against the model, our reader
and hudi-rs (which lists a v9 table through its metadata table)."""

from __future__ import annotations

import dataclasses
from typing import Iterator

import pytest

_CURRENT = {"version": 6}


@pytest.fixture(params=[6, 9], ids=["v6", "v9"])
def table_version(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    _CURRENT["version"] = request.param
    if request.param >= 8:
        # one writer per test: table services called with their own settings skip Hudi 1.x's
        # clock-skew wait too (200 ms per instant and completion time otherwise)
        from airflow_hoodie import config as hoodie_config
        from airflow_hoodie.config_keys.time_generator import MAX_EXPECTED_CLOCK_SKEW_MS

        hoodie_config.load_registry()
        key = hoodie_config._REGISTRY[MAX_EXPECTED_CLOCK_SKEW_MS]
        monkeypatch.setitem(hoodie_config._REGISTRY, MAX_EXPECTED_CLOCK_SKEW_MS, dataclasses.replace(key, default="0"))
    try:
        yield request.param
    finally:
        _CURRENT["version"] = 6


def current_version() -> int:
    """The table version the running test writes (6 outside a module that opted in)."""
    return _CURRENT["version"]


def version_settings() -> dict[str, str]:
    """Write settings creating a table at the version under test (one writer per test: no
    clock-skew wait)."""
    version = _CURRENT["version"]
    if version == 6:
        return {}
    return {"hoodie.write.table.version": str(version), "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
