"""Before we change a table, its metadata table goes, as real Hudi does when a writer runs
with ``hoodie.metadata.enable=false``.

airflow-hoodie does not maintain the metadata table. Left in place, it would keep listing
the files of the table as they were before our write: every engine that lists through it
(real Hudi's default) would miss our new files and trip over the ones our clean deleted.
So the table config stops listing its partitions first (readers then list storage), and
only then is ``.hoodie/metadata`` deleted; a writer with the metadata table enabled
rebuilds it from scratch the next time it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_hoodie.table.storage.storage import Storage

if TYPE_CHECKING:  # the table imports this module
    from airflow_hoodie.table.hoodie_table import HoodieTable

METADATA_PARTITIONS = "hoodie.table.metadata.partitions"
METADATA_PARTITIONS_INFLIGHT = "hoodie.table.metadata.partitions.inflight"
METADATA_FOLDER = "metadata"


def has_metadata_table(table: HoodieTable, reload: bool = False) -> bool:
    """``reload``: read hoodie.properties again (another writer may have changed it)."""
    if reload:
        table.reload_config()
    listed = any((table.config.get(k) or "").strip() for k in (METADATA_PARTITIONS, METADATA_PARTITIONS_INFLIGHT))
    return listed or table.storage.exists(Storage.join(table.base_path, ".hoodie", METADATA_FOLDER))


def remove_metadata_table(table: HoodieTable) -> bool:
    """Drop the table's metadata table, if it has one; True when something was removed."""
    if not has_metadata_table(table):
        return False
    present = [k for k in (METADATA_PARTITIONS, METADATA_PARTITIONS_INFLIGHT) if k in dict(table.config.items())]
    if present:
        table.update_config({}, deletes=tuple(present))
    folder = Storage.join(table.base_path, ".hoodie", METADATA_FOLDER)
    if table.storage.exists(folder):
        table.storage.delete_dir(folder)
    return True
