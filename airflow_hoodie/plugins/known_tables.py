"""Which Hudi tables the health API may open: the ones Airflow knows, and no others.

The api-server runs with the storage credentials of every DAG it serves, so an endpoint that
opened any path it was given would let a UI user list the server's disks and buckets. A table
is *known* when it is the base path of a ``hudi+...`` Asset of some DAG (Airflow's metadata DB)
or lies under a URI prefix of ``[hoodie] table_roots``; every other path is refused before
storage is touched, and only known tables are ever listed.
"""

from __future__ import annotations

import posixpath
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_hoodie.errors import HoodieError

#: how many entries of one root are probed for a table (a root is a directory of tables,
#: not a data lake to crawl)
MAX_ROOT_ENTRIES = 500
_METAFOLDER = ".hoodie"
_PROPERTIES = ("hoodie.properties", "hoodie.properties.backup")


class UnknownTableError(HoodieError):
    """The path is neither a Hudi Asset of a DAG nor under ``[hoodie] table_roots``."""


def canonical(uri: str) -> str:
    """One spelling per location, so a root and a path compare as strings.

    Local paths become absolute POSIX paths (``file://`` dropped), object-store URIs keep
    ``scheme://bucket`` and a normalised key. ``.`` and ``..`` segments are refused rather
    than resolved: a path that needs them is a path someone is trying to escape a root with.
    """
    text = (uri or "").strip()
    if not text:
        raise UnknownTableError("No table path given; pass ?path=<table base URI>.")
    parts = urllib.parse.urlsplit(text)
    scheme = parts.scheme.lower() if "://" in text else ""
    path = parts.path if scheme else text
    if any(seg in (".", "..") for seg in path.split("/")):
        raise UnknownTableError(f"Table path {uri!r} contains '.' or '..' segments; give the plain base path.")
    if scheme in ("", "file"):
        if not path.startswith("/"):
            raise UnknownTableError(f"Table path {uri!r} is relative; give an absolute path or a URI.")
        return posixpath.normpath(path).rstrip("/") or "/"
    if not parts.netloc:
        raise UnknownTableError(f"Table URI {uri!r} names no bucket or host.")
    key = posixpath.normpath("/" + parts.path.lstrip("/")).rstrip("/")
    return f"{scheme}://{parts.netloc}{key}"


def configured_roots(value: str | None) -> list[str]:
    """The comma-separated ``[hoodie] table_roots`` as canonical prefixes (bad ones dropped:
    a typo in the config must not widen what is reachable)."""
    roots: list[str] = []
    for item in (value or "").split(","):
        if not item.strip():
            continue
        try:
            root = canonical(item)
        except UnknownTableError:
            continue
        if root not in roots:
            roots.append(root)
    return roots


def under_root(path: str, roots: Iterable[str]) -> bool:
    """``path`` (canonical) is a root or lies below one."""
    for root in roots:
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return True
    return False


def asset_table_paths(uris: Iterable[str]) -> list[str]:
    """Canonical base paths of the ``hudi+...`` Asset URIs among ``uris`` (others ignored)."""
    from airflow_hoodie.assets import is_table_asset, table_uri_from_asset

    paths: list[str] = []
    for uri in uris:
        if not is_table_asset(uri):
            continue
        try:
            path = canonical(table_uri_from_asset(uri))
        except (UnknownTableError, ValueError):
            continue
        if path not in paths:
            paths.append(path)
    return paths


def is_hudi_table(uri: str, storage_options: Mapping[str, str] | None) -> bool:
    """``uri`` holds ``.hoodie/hoodie.properties`` (or its backup): one HEAD per name on S3."""
    from airflow_hoodie.table.storage.storage import Storage

    storage, path = Storage.for_uri(uri, storage_options)
    return any(storage.file_exists(Storage.join(path, _METAFOLDER, name)) for name in _PROPERTIES)


def tables_under_root(root: str, storage_options: Mapping[str, str] | None) -> list[str]:
    """The root itself when it is a table, else the tables directly under it (one listing)."""
    from airflow_hoodie.table.storage.storage import Storage

    if is_hudi_table(root, storage_options):
        return [root]
    storage, path = Storage.for_uri(root, storage_options)
    children = sorted(e.name for e in storage.list_dir(path) if e.is_dir and not e.name.startswith("."))
    found = []
    for name in children[:MAX_ROOT_ENTRIES]:
        child = root.rstrip("/") + "/" + name
        if is_hudi_table(child, storage_options):
            found.append(child)
    return found


@dataclass(frozen=True)
class KnownTables:
    """The tables one request may see: Asset base paths and configured roots."""

    asset_paths: tuple[str, ...]
    roots: tuple[str, ...]

    def resolve(self, uri: str) -> str:
        """The canonical path of ``uri`` if it is known, else :class:`UnknownTableError`."""
        path = canonical(uri)
        if path in self.asset_paths or under_root(path, self.roots):
            return path
        raise UnknownTableError(
            f"{uri!r} is not a table Airflow knows: it is no hudi+ Asset of a DAG and lies under no "
            "[hoodie] table_roots prefix. Add its prefix to table_roots to open it here."
        )

    def listing(self, storage_options: Mapping[str, str] | None) -> list[dict[str, Any]]:
        """Every known table once: ``{"path", "source"}`` with source ``asset`` or ``root``.
        A root that cannot be listed is reported, not fatal, so one bad bucket does not blank
        the page."""
        rows: list[dict[str, Any]] = [{"path": p, "source": "asset"} for p in self.asset_paths]
        seen = set(self.asset_paths)
        for root in self.roots:
            try:
                found = tables_under_root(root, storage_options)
            except HoodieError as exc:
                rows.append({"path": root, "source": "root", "error": str(exc)})
                continue
            for path in found:
                if path not in seen:
                    seen.add(path)
                    rows.append({"path": path, "source": "root"})
        return rows
