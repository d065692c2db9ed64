"""``HoodiePlugin``: what the provider adds to Airflow's api-server and UI.

Registered through ``get_provider_info()["plugins"]`` and the ``airflow.plugins`` entry point,
so installing the provider is enough. Airflow imports plugins in every task process too (for
their macros and listeners), so this module stays light: the FastAPI app, and with it
Airflow's API modules, is built the first time someone reads ``fastapi_apps``, which only the
api-server (and ``airflow plugins``) does.
"""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from airflow_hoodie.plugins.urls import URL_PREFIX, page_url

PLUGIN_NAME = "hoodie"


class _FastApiApps:
    """``HoodiePlugin.fastapi_apps``, built on first read and then kept."""

    def __init__(self) -> None:
        self._apps: list[dict[str, Any]] | None = None

    def __get__(self, instance: object, owner: type) -> list[dict[str, Any]]:
        if self._apps is None:
            from airflow_hoodie.plugins.api import create_app

            self._apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "Apache Hudi table health"}]
        return self._apps


class HoodiePlugin(AirflowPlugin):
    """The ``/hoodie`` API and page, a "Hudi tables" entry in the UI's navigation and a tab
    on each DAG."""

    name = PLUGIN_NAME
    fastapi_apps = _FastApiApps()
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
