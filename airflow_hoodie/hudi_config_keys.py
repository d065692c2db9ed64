"""The names of Apache Hudi's own configuration keys (Hudi 0.14 to 1.0, taken from its
``ConfigProperty`` definitions and their alternatives), listed in ``hudi_config_keys.txt``.

A ``hoodie.*`` key on that list is a real Hudi setting even when airflow-hoodie does not
read it, so the typo check never refuses it; a key on neither that list nor our registry
but one slip away from a known key is a typo.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def hudi_config_keys() -> frozenset[str]:
    text = resources.files("airflow_hoodie").joinpath("hudi_config_keys.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())
