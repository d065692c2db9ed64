"""The operators' "Hudi table health" extra link (issue 40, item 5): it points at the plugin's
page for the task's table, below Airflow's ``[api] base_url`` path."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from airflow_hoodie.links import HoodieTableHealthLink
from airflow_hoodie.operators.hoodie import (
    HoodieCompactionPlanOperator,
    HoodieUpsertOperator,
)


def _path_of(link: str) -> str:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["path"][0]


def test_every_operator_carries_the_link() -> None:
    op = HoodieUpsertOperator(task_id="w", base_path="s3://lake/trips", table_name="t", source="/x", operation="upsert")
    assert [link.name for link in op.operator_extra_links] == ["Spark UI", "Hudi table health"]


def test_the_link_names_the_operators_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW__API__BASE_URL", raising=False)
    op = HoodieCompactionPlanOperator(task_id="plan", base_path="s3://lake/trips")
    link = HoodieTableHealthLink().get_link(op, ti_key=None)
    assert urllib.parse.urlsplit(link).path == "/hoodie/ui"
    assert _path_of(link) == "s3://lake/trips"


def test_the_link_follows_airflow_under_a_sub_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/team-a/")
    op = HoodieCompactionPlanOperator(task_id="plan", base_path="/data/trips")
    link = HoodieTableHealthLink().get_link(op, ti_key=None)
    assert link.startswith("/team-a/hoodie/ui?")
    assert _path_of(link) == "/data/trips"


def test_a_table_from_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_HOODIE_LAKE",
                       json.dumps({"conn_type": "hoodie", "extra": {"base_path": "s3://lake/orders"}}))
    op = HoodieCompactionPlanOperator(task_id="plan", hoodie_conn_id="hoodie_lake")
    assert _path_of(HoodieTableHealthLink().get_link(op, ti_key=None)) == "s3://lake/orders"
    # no table anywhere: the page of all known tables, not an error on the task
    op = HoodieCompactionPlanOperator(task_id="plan2", hoodie_conn_id="hoodie_missing")
    assert HoodieTableHealthLink().get_link(op, ti_key=None) == "/hoodie/ui"
