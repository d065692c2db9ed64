"""Dropping a table's metadata table, as real Hudi does when a writer runs with
``hoodie.metadata.enable=false`` (table versions 6, 8 and 9 alike).

airflow-hoodie keeps the metadata table true while it is enabled (``files``, record index and
statistics partitions, one delta commit per data instant: :mod:`metadata_writer`). A change
run with it disabled, or one that finds a metadata table nobody can open (no
``hoodie.properties``), removes it instead of leaving it stale: left in place, it would keep
listing the files of the table as they were before our change, and every engine that lists
through it (real Hudi's default) would miss our new files and trip over the ones our clean
deleted. So the table config stops listing its partitions first (readers then list storage),
and only then is ``.hoodie/metadata`` deleted; the next writer with the metadata table enabled
rebuilds it from the data files (:func:`maintenance.ensure_files_partition`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_FOLDER,
    METADATA_PARTITIONS,
    METADATA_PARTITIONS_INFLIGHT,
    has_metadata_table,
)
from airflow_hoodie.table.storage.storage import Storage

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable


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
