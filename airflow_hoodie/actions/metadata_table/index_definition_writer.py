"""The one writer of a Hudi 1.x table's index definitions (``.hoodie/.index_defs/index.json``).

Hudi 1.x records which indexes a table has, and what each covers, in one JSON file named by
``hoodie.table.index.defs.path`` (HoodieIndexMetadata): ``{"indexDefinitions": {name: {indexName,
indexType, indexFunction, sourceFields, indexOptions, version}}}``. Column stats record their
columns there, a secondary index its column; both go through :func:`put_index_definition`, so the
file is read, changed by one entry and written back the same way whoever adds to it. Reading is
the format layer's (``table.metadata_table.stats_partitions.index_definitions``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_hoodie.table.metadata_table.stats_partitions import (
    DEFAULT_INDEX_DEFS_PATH,
    INDEX_DEFS_PATH_KEY,
    index_definitions,
)

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable


def index_definition(name: str, index_type: str, function: str, fields: Sequence[str], version: str,
                     options: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One entry of ``index.json``, with the fields (and their order) Hudi 1.x writes."""
    return {"indexName": name, "indexType": index_type, "indexFunction": function, "sourceFields": list(fields),
            "indexOptions": dict(options or {}), "version": version}


def put_index_definition(table: HoodieTable, definition: Mapping[str, Any]) -> None:
    """Add (or replace) ``definition`` in the table's ``index.json``, keeping every other entry;
    the table config names the file when it did not yet (Hudi sets the key with the first
    definition). Called under the table lock, as every change of the table's metadata is."""
    rel = table.config.get(INDEX_DEFS_PATH_KEY) or DEFAULT_INDEX_DEFS_PATH
    defs = index_definitions(table) if table.config.get(INDEX_DEFS_PATH_KEY) else {}
    defs[str(definition["indexName"])] = dict(definition)
    path = table.storage.join(table.base_path, rel)
    table.storage.write_bytes(path, json.dumps({"indexDefinitions": defs}, indent=2).encode("utf-8"))
    if not table.config.get(INDEX_DEFS_PATH_KEY):
        table.update_config({INDEX_DEFS_PATH_KEY: rel})


__all__ = ["index_definition", "put_index_definition"]
