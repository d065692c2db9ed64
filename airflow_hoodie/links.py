"""Operator extra links: the job's Spark UI or cluster tracking page, from its XCom."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink
from airflow.sdk.execution_time.xcom import XCom

#: XCom key the operators push the job's Spark UI / tracking URL under
SPARK_UI_XCOM_KEY = "spark_ui_url"


class SparkUILink(BaseOperatorLink):
    """"Spark UI" button: the driver's UI (or YARN / Kubernetes tracking page) of the job."""

    name = "Spark UI"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return XCom.get_value(ti_key=ti_key, key=SPARK_UI_XCOM_KEY) or ""
