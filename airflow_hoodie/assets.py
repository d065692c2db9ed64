"""Airflow Assets for Hudi tables.

A Hudi table is named by its base path. Its Asset URI is that location with the scheme
prefixed by ``hudi+``, so one table has exactly one URI whatever string a DAG author
used for the path, and the table can be recovered from the URI::

    /data/trips, file:///data/trips   -> hudi+file://localhost/data/trips
    s3://bucket/trips, s3a://bucket/trips -> hudi+s3://bucket/trips
    gs://bucket/trips                 -> hudi+gs://bucket/trips

``hudi:///data/trips`` is accepted as shorthand for a local table. Local tables get the
``localhost`` authority because an Asset URI without one would lose its ``//`` when
Airflow re-serializes it (``urlunsplit`` keeps ``//`` only for schemes it knows).

The schemes are registered through the provider's ``asset-uris`` entry, with
:func:`sanitize_uri` as the handler, so Airflow normalizes every spelling the same way.
"""

from __future__ import annotations

import os
import posixpath
import urllib.parse
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset

if TYPE_CHECKING:
    from airflow.sdk import Asset

PREFIX = "hudi+"
LOCAL_AUTHORITY = "localhost"

#: storage scheme -> the one spelling we put in Asset URIs
_STORAGE_ALIASES = {"": "file", "file": "file", "s3": "s3", "s3a": "s3", "gs": "gs", "gcs": "gs",
                    "hdfs": "hdfs", "abfs": "abfs", "abfss": "abfss"}


def _clean_path(path: str) -> str:
    cleaned = posixpath.normpath(path) if path else ""
    if cleaned in ("", ".", "/"):
        return ""
    return cleaned.rstrip("/")


def table_asset_uri(base_path: str) -> str:
    """The canonical Asset URI of the Hudi table at ``base_path`` (a path or URI)."""
    if not base_path or not str(base_path).strip():
        raise ValueError("A Hudi table Asset needs the table's base path; got an empty string.")
    base_path = str(base_path).strip()
    if base_path.startswith(PREFIX) or base_path.startswith("hudi://"):
        return urllib.parse.urlunsplit(sanitize_uri(urllib.parse.urlsplit(base_path)))
    if "://" not in base_path:
        base_path = "file://" + os.path.abspath(os.path.expanduser(base_path))
    parts = urllib.parse.urlsplit(base_path)
    storage = _STORAGE_ALIASES.get(parts.scheme.lower())
    if storage is None:
        raise ValueError(
            f"Unsupported storage scheme {parts.scheme!r} in table path {base_path!r}; "
            f"use one of {sorted(set(_STORAGE_ALIASES.values()))}."
        )
    parts = parts._replace(scheme=PREFIX + storage, query="", fragment="")
    return urllib.parse.urlunsplit(sanitize_uri(parts))


def table_uri_from_asset(asset_or_uri: Any) -> str:
    """The table's base path (local path or storage URI) behind a Hudi Asset or its URI."""
    uri = getattr(asset_or_uri, "uri", asset_or_uri)
    parts = sanitize_uri(urllib.parse.urlsplit(str(uri)))
    storage = parts.scheme[len(PREFIX):]
    if storage == "file":
        return parts.path
    return f"{storage}://{parts.netloc}{parts.path}"


def is_table_asset(asset_or_uri: Any) -> bool:
    uri = str(getattr(asset_or_uri, "uri", asset_or_uri) or "")
    return uri.startswith(PREFIX) or uri.startswith("hudi://")


def sanitize_uri(parts: urllib.parse.SplitResult) -> urllib.parse.SplitResult:
    """Airflow's URI handler for our schemes: one canonical spelling per table.

    Raises ValueError (which Airflow reports at DAG parse time) for a URI that cannot
    name a table, so a typo fails loudly instead of creating an Asset nobody updates.
    """
    scheme = parts.scheme.lower()
    if scheme == "hudi":
        scheme = PREFIX + "file"
    if not scheme.startswith(PREFIX):
        raise ValueError(f"Not a Hudi table Asset URI: {urllib.parse.urlunsplit(parts)!r}")
    storage = _STORAGE_ALIASES.get(scheme[len(PREFIX):])
    if storage is None:
        raise ValueError(
            f"Unknown storage in Hudi Asset URI scheme {parts.scheme!r}; use hudi+file, hudi+s3, "
            "hudi+gs, hudi+hdfs, hudi+abfs or hudi+abfss."
        )
    path = _clean_path(parts.path)
    netloc = parts.netloc
    if storage == "file":
        if netloc not in ("", LOCAL_AUTHORITY):
            raise ValueError(
                f"A local Hudi table URI must not name a host (got {netloc!r}); write "
                f"hudi+file:///absolute/path."
            )
        netloc = LOCAL_AUTHORITY
        if not path:
            raise ValueError("A Hudi table Asset URI needs the table's absolute base path.")
    elif not netloc:
        raise ValueError(f"A {storage} Hudi table Asset URI needs a bucket or host: {parts.geturl()!r}")
    return parts._replace(scheme=PREFIX + storage, netloc=netloc, path=path or "/", query="", fragment="")


def hoodie_table_asset(base_path: str, *, name: str | None = None, extra: dict | None = None) -> "Asset":
    """The Airflow Asset of a Hudi table, for ``outlets=`` and ``schedule=``."""

    uri = table_asset_uri(base_path)
    kwargs: dict[str, Any] = {"uri": uri}
    if name:
        kwargs["name"] = name
    if extra:
        kwargs["extra"] = extra
    return Asset(**kwargs)


def create_asset(*, path: str | None = None, uri: str | None = None, extra: dict | None = None) -> "Asset":
    """Asset factory registered with Airflow (``asset-uris`` ``factory``)."""
    target = path if path is not None else uri
    if target is None:
        raise ValueError("create_asset needs path= (a table base path) or uri=")
    return hoodie_table_asset(str(target), extra=extra)
