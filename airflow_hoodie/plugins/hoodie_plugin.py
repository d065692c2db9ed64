"""``HoodiePlugin``: what the provider adds to Airflow's api-server and UI.

Registered through ``get_provider_info()["plugins"]``, so installing the provider is enough.
Airflow imports plugins in every process that asks the plugins manager (scheduler, CLI,
api-server); the FastAPI app is cheap to build and its routes import the health code only
when called, so the plugin costs the other processes nothing worth measuring.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from airflow_hoodie.plugins.api import create_app
from airflow_hoodie.plugins.urls import URL_PREFIX, page_url

PLUGIN_NAME = "hoodie"


class HoodiePlugin(AirflowPlugin):
    """The ``/hoodie`` API and page, a "Hudi tables" entry in the UI's navigation and a tab
    on each DAG."""

    name = PLUGIN_NAME
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [
        {"app": create_app(), "url_prefix": URL_PREFIX, "name": "Apache Hudi table health"},
    ]
    # served by the FastAPI app above (no npm build); Airflow's UI shows it in an iframe at
    # /plugin/hudi_tables, which sends the UI's own token cookie to the API
    external_views: ClassVar[list[dict[str, Any]]] = [
        {
            "name": "Hudi tables",
            "href": page_url(),
            "destination": "nav",
            "category": "browse",
            "url_route": "hudi_tables",
        },
        {
            # a tab on each DAG: the Hudi tables of its Assets (Airflow fills in {DAG_ID})
            "name": "Hudi tables",
            "href": page_url() + "?dag_id={DAG_ID}",
            "destination": "dag",
            "url_route": "hudi_tables_dag",
        },
    ]
