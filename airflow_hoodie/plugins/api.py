"""The FastAPI app the plugin mounts at ``/hoodie``: the health JSON API and the page.

Routes take Airflow's own auth (``requires_access_asset``: a Hudi table is an Asset to
Airflow), so a request without the api-server's JWT, as a bearer token or the UI's cookie,
gets 401/403 like any other Airflow API call. Health is computed on request from the table's
timeline and listing; nothing is cached here, so the page shows what is on storage now.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from airflow.api_fastapi.common.db.common import SessionDep
from airflow.api_fastapi.core_api.security import GetUserDep, requires_access_asset
from fastapi import Depends, FastAPI, HTTPException, Query, status
from fastapi.responses import HTMLResponse
from sqlalchemy import select

from airflow_hoodie.errors import HoodieError, HoodieTableNotFoundError
from airflow_hoodie.plugins.known_tables import (
    KnownTables,
    UnknownTableError,
    asset_table_paths,
    configured_roots,
)
from airflow_hoodie.plugins.urls import PAGE_ROUTE

log = logging.getLogger(__name__)


def storage_options() -> dict[str, str]:
    """The default ``hoodie`` connection's storage options (s3:// endpoint, keys, region);
    none when there is no such connection."""
    from airflow_hoodie.hooks.hoodie import HoodieHook

    return dict(HoodieHook().get_conn().storage_options)


def known_tables(session: Any) -> KnownTables:
    """Asset base paths from the metadata DB (active Assets only: a DAG that dropped its
    outlet no longer vouches for the path) and the configured roots."""
    from airflow.configuration import conf
    from airflow.models.asset import AssetActive, AssetModel

    query = (select(AssetModel.uri)
             .join(AssetActive, (AssetActive.name == AssetModel.name) & (AssetActive.uri == AssetModel.uri))
             .where(AssetModel.uri.like("hudi%")))
    uris = [str(u) for u in session.scalars(query)]
    return KnownTables(tuple(asset_table_paths(uris)),
                       tuple(configured_roots(conf.get("hoodie", "table_roots", fallback=""))))


def dag_table_paths(session: Any, dag_id: str) -> list[str]:
    """Base paths of the ``hudi+`` Assets one DAG writes, reads or is scheduled on."""
    from airflow.models.asset import (
        AssetModel,
        DagScheduleAssetReference,
        TaskInletAssetReference,
        TaskOutletAssetReference,
    )

    ids = set()
    for ref in (TaskOutletAssetReference, TaskInletAssetReference, DagScheduleAssetReference):
        ids.update(session.scalars(select(ref.asset_id).where(ref.dag_id == dag_id)))
    if not ids:
        return []
    uris = session.scalars(select(AssetModel.uri).where(AssetModel.id.in_(ids), AssetModel.uri.like("hudi%")))
    return asset_table_paths(str(u) for u in uris)


def health_of(path: str, options: Mapping[str, str]) -> dict[str, Any]:
    """The table's health judged by the default ``hoodie`` connection's ``hoodie_conf`` (the
    services' keep.min/max, cleaner, compaction trigger and lock provider), else Hudi's defaults."""
    from airflow_hoodie.health.table_health import table_health
    from airflow_hoodie.hooks.hoodie import HoodieHook

    return table_health(path, options or None, HoodieHook().get_conn().hoodie_conf)


def _refuse(exc: HoodieError) -> HTTPException:
    if isinstance(exc, UnknownTableError):
        return HTTPException(status.HTTP_403_FORBIDDEN, detail=str(exc))
    if isinstance(exc, HoodieTableNotFoundError):
        return HTTPException(status.HTTP_404_NOT_FOUND, detail=str(exc))
    return HTTPException(status.HTTP_502_BAD_GATEWAY, detail=f"{type(exc).__name__}: {exc}")


def _may_read_dag(user: Any, dag_id: str) -> bool:
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagDetails

    return get_auth_manager().is_authorized_dag(method="GET", details=DagDetails(id=dag_id), user=user)


def create_app() -> FastAPI:
    """The sub-application; built once per api-server worker by the plugin."""
    app = FastAPI(title="Apache Hudi table health (airflow-hoodie)",
                  description="Health of the Hudi tables Airflow knows.")
    read = [Depends(requires_access_asset(method="GET"))]

    @app.get("/api/tables", dependencies=read)
    def tables(session: SessionDep, user: GetUserDep,
               dag_id: str | None = Query(None, description="only this DAG's tables")) -> dict[str, Any]:
        """Every known table with its one-line summary; with ``dag_id``, the tables of that
        DAG's Assets (the page's tab on a DAG), for a user who may read that DAG."""
        if dag_id and not _may_read_dag(user, dag_id):
            raise HTTPException(status.HTTP_403_FORBIDDEN, detail=f"You may not read DAG {dag_id!r}.")
        try:
            options = storage_options()
        except HoodieError as exc:
            raise _refuse(exc) from exc
        if dag_id:
            rows = [{"path": p, "source": "asset"} for p in dag_table_paths(session, dag_id)]
        else:
            rows = known_tables(session).listing(options)
        for row in rows:
            if "error" in row:
                row["summary"] = f"cannot list: {row['error']}"
                continue
            try:
                row["summary"] = health_of(row["path"], options)["summary"]
            except HoodieError as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"
                row["summary"] = f"unreadable: {exc}"
        return {"tables": rows, "total_entries": len(rows)}

    @app.get("/api/table", dependencies=read)
    def table(session: SessionDep, path: str = Query(..., description="table base path or URI")) -> dict[str, Any]:
        """The full health object of one known table."""
        try:
            resolved = known_tables(session).resolve(path)
            return health_of(resolved, storage_options())
        except HoodieError as exc:
            raise _refuse(exc) from exc

    @app.get(PAGE_ROUTE, response_class=HTMLResponse)
    def page() -> HTMLResponse:
        """The page (a static shell: its data comes from the authenticated API above)."""
        from airflow_hoodie.plugins.page import PAGE_HTML

        return HTMLResponse(PAGE_HTML, headers={"Cache-Control": "no-cache"})

    return app
