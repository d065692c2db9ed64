"""Operator extra links: the job's Spark UI or cluster tracking page, from its XCom."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink
from airflow.sdk.execution_time.xcom import XCom

#: XCom key the operators push the job's Spark UI / tracking URL under
SPARK_UI_XCOM_KEY = "spark_ui_url"
#: an operator that ran in this process holds its job's URL here ("" when the job reported none)
RAN_HERE_ATTR = "_spark_ui_url"


class SparkUILink(BaseOperatorLink):
    """"Spark UI" button: the driver's UI (or YARN / Kubernetes tracking page) of the job."""

    name = "Spark UI"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        # Airflow asks right after the task ran, in the same process: the operator knows
        # whether its job reported a UI. Asking XCom for one that was never pushed (a failed
        # job, a job with nothing to do) makes the API client log an error on a good task.
        known = getattr(operator, RAN_HERE_ATTR, None)
        if known is not None:
            return known
        return XCom.get_value(ti_key=ti_key, key=SPARK_UI_XCOM_KEY) or ""


class HoodieTableHealthLink(BaseOperatorLink):
    """"Hudi table health" button: the plugin's page for the table the task worked on, where
    its pending instants, due services and file sizes are (airflow_hoodie/plugins)."""

    name = "Hudi table health"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        base_path = getattr(operator, "base_path", None)
        if not base_path:
            # the table comes from the task's connection: resolving it must not fail a link
            try:
                from airflow_hoodie.hooks.hoodie import HoodieHook

                base_path = HoodieHook(getattr(operator, "hoodie_conn_id", None) or HoodieHook.default_conn_name
                                       ).get_conn().base_path
            except Exception:  # noqa: BLE001 - no connection, no table: the page lists all tables
                base_path = None
        from airflow_hoodie.plugins.urls import page_url

        return page_url(str(base_path) if base_path else None)
