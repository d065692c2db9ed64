"""The indexer's settings (Hudi's HoodieIndexer): which metadata-table indexes to build, the
secondary index's name and column, and the metadata-table and lock settings they are built
under, parsed and checked once when the job starts.

Hudi's indexer names indexes by ``MetadataPartitionType`` (``--index-types``); each becomes one
metadata-table partition: ``RECORD_INDEX`` -> ``record_index``, ``COLUMN_STATS`` ->
``column_stats``, ``BLOOM_FILTERS`` -> ``bloom_filters``, ``PARTITION_STATS`` ->
``partition_stats``, ``SECONDARY_INDEX`` -> ``secondary_index_<name>`` (``CREATE INDEX <name> ON t
(<column>)``). The indexer runs only with ``hoodie.metadata.enable=true``, as Hudi's does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.settings.metadata_table import (
    MetadataTableSettings,
    RecordIndexSizing,
)

SECONDARY_INDEX = "SECONDARY_INDEX"
SECONDARY_INDEX_PREFIX = "secondary_index_"
#: the index types we build, and the partition each builds (a secondary index's is named)
PARTITION_OF_TYPE = {
    "RECORD_INDEX": "record_index",
    "COLUMN_STATS": "column_stats",
    "BLOOM_FILTERS": "bloom_filters",
    "PARTITION_STATS": "partition_stats",
}
#: Hudi's other MetadataPartitionType names, and what to do instead
_OTHER_TYPES = {
    "FILES": "the files partition is built by any write run with hoodie.metadata.enable=true",
    "EXPRESSION_INDEX": "expression indexes are built by Hudi's CREATE INDEX ... USING <function>; run it with Hudi",
    "ALL_PARTITIONS": "it is part of the files partition, which any write with hoodie.metadata.enable=true builds",
}


def secondary_index_partition(name: str | None) -> str:
    """The metadata-table partition of secondary index ``name`` (``CREATE INDEX idx`` makes
    ``secondary_index_idx``; a name that already carries the prefix is kept)."""
    name = (name or "").strip()
    if not name or not all(c.isalnum() or c == "_" for c in name):
        raise HoodieConfigError(
            f"A SECONDARY_INDEX needs --index-name: letters, digits and '_' (it names a metadata-table partition and "
            f"its file groups), not {name!r}.")
    return name if name.startswith(SECONDARY_INDEX_PREFIX) else SECONDARY_INDEX_PREFIX + name


def parse_index_types(index_types: Sequence[str] | str) -> tuple[str, ...]:
    """``--index-types`` as Hudi's indexer takes it (comma-separated, any case), each checked."""
    raw = index_types.split(",") if isinstance(index_types, str) else list(index_types)
    types = tuple(dict.fromkeys(t.strip().upper() for t in raw if t and t.strip()))
    if not types:
        raise HoodieConfigError("--index-types names no index; give one or more of "
                                f"{', '.join([*PARTITION_OF_TYPE, SECONDARY_INDEX])}.")
    for kind in types:
        if kind in PARTITION_OF_TYPE or kind == SECONDARY_INDEX:
            continue
        why = _OTHER_TYPES.get(kind, "it is not one of Hudi's metadata index types")
        raise HoodieNotSupportedError(
            f"The indexer cannot build index type {kind}: {why}. It builds "
            f"{', '.join([*PARTITION_OF_TYPE, SECONDARY_INDEX])}.")
    return types


@dataclass(frozen=True)
class IndexerSettings:
    #: the index types asked for, upper case, each once
    index_types: tuple[str, ...]
    #: the metadata-table partition each type builds, in the same order
    partitions: tuple[str, ...]
    #: the secondary index's column (None without SECONDARY_INDEX)
    secondary_index_column: str | None
    #: how a new record index or secondary index sizes its file groups (estimateFileGroupCount)
    sizing: RecordIndexSizing
    #: the metadata table's settings (statistics partitions' columns and file-group counts)
    metadata: MetadataTableSettings
    #: the lock and commit options of the indexing instant
    action: ActionSettings

    @classmethod
    def from_config(cls, config: HoodieConfig | None, index_types: Sequence[str] | str,
                    index_name: str | None = None, index_column: str | None = None) -> IndexerSettings:
        """The settings of one indexer run: ``config`` its ``hoodie.*`` options, the rest its
        arguments. Refuses an index type we cannot build and a run without the metadata table."""
        config = config or HoodieConfig({})
        types = parse_index_types(index_types)
        action = ActionSettings.from_config(config)
        if action.change.metadata is None:
            raise HoodieConfigError("The indexer builds metadata-table indexes: run it with hoodie.metadata.enable=true "
                                    "(Hudi's indexer refuses to run without it too).")
        column = (index_column or "").strip() or None
        partitions = []
        for kind in types:
            if kind != SECONDARY_INDEX:
                partitions.append(PARTITION_OF_TYPE[kind])
                continue
            if column is None:
                raise HoodieConfigError("A SECONDARY_INDEX needs --index-column: the column it indexes.")
            partitions.append(secondary_index_partition(index_name))
        return cls(types, tuple(partitions), column if SECONDARY_INDEX in types else None,
                   RecordIndexSizing.from_config(config), action.change.metadata, action)


__all__ = ["PARTITION_OF_TYPE", "SECONDARY_INDEX", "IndexerSettings", "parse_index_types", "secondary_index_partition"]
