"""A normal set-up prints no setuptools warnings (issue 36, item 5): a folder of package data
that is not itself a package made setuptools warn ("Package would be ignored", about 30
BuildBackendWarning lines for ``table/metadata/avro_schemas``) on every install."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "airflow_hoodie"


def test_every_folder_of_the_package_is_a_package() -> None:
    loose = sorted(str(d.relative_to(ROOT.parent)) for d in ROOT.rglob("*")
                   if d.is_dir() and d.name != "__pycache__" and not (d / "__init__.py").exists())
    assert loose == [], f"add an __init__.py to {loose}: setuptools warns about data folders outside packages"
