"""Which metadata-table partitions a table lists, and whether it has a metadata table at all.

The data table's ``hoodie.properties`` names the metadata table's partitions (Hudi's
``hoodie.table.metadata.partitions``, and ``.inflight`` for one being built) for table
versions 6, 8 and 9 alike; readers take only listed partitions, and the writers in
``actions.metadata_table`` read and change the same keys. Read-only: nothing here writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_hoodie.table.storage.storage import Storage

if TYPE_CHECKING:  # the table imports its readers
    from airflow_hoodie.table.hoodie_table import HoodieTable

METADATA_PARTITIONS = "hoodie.table.metadata.partitions"
METADATA_PARTITIONS_INFLIGHT = "hoodie.table.metadata.partitions.inflight"
METADATA_FOLDER = "metadata"


def listed_in(table_config: Any, key: str = METADATA_PARTITIONS) -> list[str]:
    """The partitions ``key`` of a table config lists, in order."""
    return [p.strip() for p in (table_config.get(key) or "").split(",") if p.strip()]


def listed_partitions(table: HoodieTable) -> list[str]:
    """The metadata-table partitions ``table`` lists as complete."""
    return listed_in(table.config)


def has_metadata_table(table: HoodieTable, reload: bool = False) -> bool:
    """Whether ``table`` has a metadata table: one listed in its config, or a
    ``.hoodie/metadata`` folder (one being built, or left behind). ``reload``: read
    hoodie.properties again (another writer may have changed it)."""
    if reload:
        table.reload_config()
    listed = any((table.config.get(k) or "").strip() for k in (METADATA_PARTITIONS, METADATA_PARTITIONS_INFLIGHT))
    return listed or table.storage.exists(Storage.join(table.base_path, ".hoodie", METADATA_FOLDER))
