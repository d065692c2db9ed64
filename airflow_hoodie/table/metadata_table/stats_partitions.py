"""The statistics partitions of the metadata table (``column_stats``, ``partition_stats``,
``bloom_filters``, and the expression indexes ``expr_index_*`` laid out like them): their
file-group names, which ones a table keeps, and the column-stats index definition.

Table version 6 (Hudi 0.14) keeps no index definition, so its column-stats records are
version V1; Hudi 1.x (versions 8 and 9) records which columns column_stats covers in
``.hoodie/.index_defs/index.json``, with the record version (V2 from table version 9).
Readers (data skipping, the CLI) and the writer (``actions.metadata_table.stats_index_writer``)
both start here. :func:`index_definitions` is the one reader of ``index.json`` for every index
(the record index's ``isPartitioned`` option, the secondary indexes). Read-only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from airflow_hoodie.table.metadata_table.bloom_filter_index import BLOOM_FILTERS_PARTITION
from airflow_hoodie.table.metadata_table.column_stats import COLUMN_STATS_PARTITION
from airflow_hoodie.table.metadata_table.partition_stats import PARTITION_STATS_PARTITION
from airflow_hoodie.table.metadata_table.partitions import listed_partitions

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable

#: the statistics partitions, with the file-id prefix of their file groups
FILE_GROUP_PREFIX = {COLUMN_STATS_PARTITION: "col-stats-", PARTITION_STATS_PARTITION: "partition-stats-",
                     BLOOM_FILTERS_PARTITION: "bloom-filters-"}
STATS_PARTITIONS = tuple(FILE_GROUP_PREFIX)
#: Hudi's PARTITION_NAME_EXPRESSION_INDEX_PREFIX (an expression index's definition and partition
#: name) and the file-id prefix of its file groups (MetadataPartitionType.EXPRESSION_INDEX)
EXPRESSION_INDEX_PREFIX = "expr_index_"
EXPRESSION_INDEX_FILE_GROUP_PREFIX = "expr-index-"
INDEX_DEFS_PATH_KEY = "hoodie.table.index.defs.path"
DEFAULT_INDEX_DEFS_PATH = ".hoodie/.index_defs/index.json"


def file_group_prefix(partition: str) -> str:
    """The file-id prefix of a statistics or expression-index partition's file groups."""
    if partition.startswith(EXPRESSION_INDEX_PREFIX):
        return EXPRESSION_INDEX_FILE_GROUP_PREFIX
    return FILE_GROUP_PREFIX[partition]


def kept_expression_indexes(table: HoodieTable) -> list[str]:
    """The expression-index partitions ``table`` lists (and so keeps true)."""
    return [p for p in listed_partitions(table) if p.startswith(EXPRESSION_INDEX_PREFIX)]


def kept_stats_partitions(table: HoodieTable) -> list[str]:
    """The statistics partitions ``table`` lists (and so keeps true)."""
    return [p for p in listed_partitions(table) if p in STATS_PARTITIONS]


def index_definitions(table: HoodieTable) -> dict[str, Any]:
    """The table's index definitions by index name (Hudi 1.x); empty when it has none."""
    rel = table.config.get(INDEX_DEFS_PATH_KEY)
    if not rel:
        return {}
    path = table.storage.join(table.base_path, rel)
    if not table.storage.exists(path):
        return {}
    return (json.loads(table.storage.read_bytes(path).decode("utf-8")) or {}).get("indexDefinitions") or {}


def index_version(table: HoodieTable) -> str:
    """The column-stats index-definition version: what the table's definition says, else
    Hudi's current one for the table version (V2 from table version 9, V1 before)."""
    definition = index_definitions(table).get(COLUMN_STATS_PARTITION) or {}
    if definition.get("version"):
        return str(definition["version"])
    return table.format.stats_index_version
