"""Where the plugin's routes live, for links built outside the api-server (a worker building
an operator's extra link): no FastAPI here, only ``[api] base_url``."""

from __future__ import annotations

import urllib.parse

URL_PREFIX = "/hoodie"
PAGE_ROUTE = "/ui"


def base_url_path(path: str) -> str:
    """``path`` below the path part of ``[api] base_url`` (Airflow served under a sub-path)."""
    from airflow.configuration import conf

    base = conf.get("api", "base_url", fallback="/") or "/"
    if base.startswith(("http://", "https://")):
        base = urllib.parse.urlsplit(base).path
    return base.rstrip("/") + path


def page_url(base_path: str | None = None) -> str:
    """The table health page, for one table when ``base_path`` is given."""
    url = base_url_path(URL_PREFIX + PAGE_ROUTE)
    return f"{url}?{urllib.parse.urlencode({'path': base_path})}" if base_path else url
