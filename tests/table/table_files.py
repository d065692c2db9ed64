"""Test helpers over a table's directory: a writable copy of a conformance table, and the
data files a storage listing finds (what the metadata table's ``files`` partition must hold)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def copy_conformance_table(conformance_next: Path, name: str, tmp_path: Path) -> Path:
    """A writable copy of ``tables/<name>`` (the corpus itself is read-only)."""
    base = tmp_path / name.replace("/", "_")
    shutil.copytree(conformance_next / "tables" / name, base)
    for p in base.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return base


def storage_listing(base: Path | str) -> dict[str, dict[str, int]]:
    """Partition -> {file name: size} of the data files under ``base`` (``.hoodie`` and
    partition metadata files left out)."""
    out: dict[str, dict[str, int]] = {}
    for root, _dirs, files in os.walk(base):
        rel = os.path.relpath(root, base)
        if rel.split(os.sep)[0] == ".hoodie":
            continue
        for name in files:
            if name != ".hoodie_partition_metadata":
                out.setdefault("" if rel == "." else rel, {})[name] = os.path.getsize(os.path.join(root, name))
    return out
