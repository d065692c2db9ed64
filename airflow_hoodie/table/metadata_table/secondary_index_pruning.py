"""Point lookups through a secondary index: a snapshot read filtered by ``(col, "=", v)`` or
``(col, "in", [...])`` on an indexed column opens only the file groups holding those rows.

The secondary index gives the record keys whose latest row holds each value
(:func:`~secondary_index.record_keys_for`), the record index the file group of each key
(:func:`~record_index.read_record_index`); a file slice outside those groups cannot hold a
matching row, so it is left out. Several indexed filters (AND-ed) keep the groups all of them
allow. The rows are filtered again anyway, so a pruned read returns exactly the rows of a full
one.

Only an index a reader may trust is used: listed as complete in
``hoodie.table.metadata.partitions`` (not still ``….inflight``), beside a global record index,
with the metadata table caught up to the data table's latest completed instant (every data
instant has its metadata-table delta commit). It describes the latest merged slices, so only
latest snapshot reads use it (not time travel, read-optimized or incremental reads). A filter
whose value cannot be turned into the index's text (a null, a value of another type), or an
index whose definition we cannot read, prunes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_hoodie.errors import HoodieError, HoodieMetadataDamagedError
from airflow_hoodie.table.metadata_table.files_listing import metadata_table_path
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS_INFLIGHT,
    listed_in,
)
from airflow_hoodie.table.metadata_table.record_index import (
    RECORD_INDEX_PARTITION,
    is_partitioned_record_index,
    read_record_index,
)
from airflow_hoodie.table.metadata_table.secondary_index import (
    SecondaryIndexDefinition,
    index_values,
    record_keys_for,
    secondary_index_definitions,
)
from airflow_hoodie.table.read_filters import coerce_value
from airflow_hoodie.table.timeline.instant import Action
from airflow_hoodie.table.timeline.timeline import Timeline

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable

log = logging.getLogger(__name__)

_LOOKUP_OPS = {"=", "==", "in"}
#: data-table actions that have no metadata-table delta commit of their own
_NOT_MIRRORED = {Action.SAVEPOINT, Action.INDEXING}


def metadata_table_current(table: HoodieTable) -> bool:
    """Whether the metadata table holds the data table's latest completed instant (its delta
    commit of that time completed), so its indexes describe the latest file slices."""
    done = [i for i in table.timeline.completed().instants if i.action not in _NOT_MIRRORED]
    if not done:
        return True
    mdt = Timeline.load(table.storage, metadata_table_path(table.base_path))
    return any(i.timestamp == done[-1].timestamp and i.is_completed for i in mdt.instants)


def usable_secondary_indexes(table: HoodieTable, columns: Iterable[str] | None = None
                             ) -> dict[str, SecondaryIndexDefinition]:
    """column -> the complete secondary index on it a snapshot read may prune with (none when
    the table lacks a global record index or its metadata table lags behind). ``columns``:
    only indexes on these (the metadata table's timeline is read only when one is left)."""
    listed = set(listed_in(table.config))
    if RECORD_INDEX_PARTITION not in listed or not any(p.startswith("secondary_index_") for p in listed):
        return {}
    inflight = set(listed_in(table.config, METADATA_PARTITIONS_INFLIGHT))
    wanted = None if columns is None else set(columns)
    try:
        definitions = secondary_index_definitions(table)
        usable = {d.source_field: d for d in definitions if d.name in listed and d.name not in inflight
                  and (wanted is None or d.source_field in wanted)}
        if not usable or is_partitioned_record_index(table):
            return {}
    except HoodieError as exc:  # an index we cannot read: no pruning, the read itself goes on
        log.info("Secondary indexes of %s left unused: %s", table.base_uri, exc)
        return {}
    return usable if metadata_table_current(table) else {}


def _index_texts(op: str, value: Any, typ: pa.DataType) -> list[str] | None:
    """The index text of each filter value, or None when one has none we can trust."""
    values = list(value) if op == "in" else [value]
    try:
        scalars = [coerce_value(v, typ) for v in values]
        arr = pa.array([s.as_py() if isinstance(s, pa.Scalar) else s for s in scalars], typ)
        texts = index_values(arr)
    except (HoodieError, pa.ArrowException, TypeError, ValueError):
        return None
    return None if any(t is None for t in texts) else texts


def lookup_file_groups(table: HoodieTable, filters: Sequence[tuple[str, str, Any]],
                       schema: pa.Schema | None) -> set[tuple[str, str]] | None:
    """(partition, file id) of the file groups that may hold rows matching every indexed
    point filter; None when no filter can use a secondary index, or when an index it needs is
    damaged (a skipped block may hold an entry: the read then prunes nothing, and says so)."""
    if not filters or schema is None or not any(op in _LOOKUP_OPS for _, op, _ in filters):
        return None
    try:
        return _lookup(table, filters, schema)
    except HoodieMetadataDamagedError as exc:
        log.warning("A secondary-index lookup of %s read a damaged metadata-table partition (%s); this read "
                    "prunes nothing by it.", table.base_uri, exc)
        return None


def _lookup(table: HoodieTable, filters: Sequence[tuple[str, str, Any]],
            schema: pa.Schema) -> set[tuple[str, str]] | None:
    indexes = usable_secondary_indexes(table, {c for c, op, _ in filters if op in _LOOKUP_OPS})
    allowed: set[tuple[str, str]] | None = None
    for column, op, value in filters:
        if op not in _LOOKUP_OPS or column not in indexes or column not in schema.names:
            continue
        texts = _index_texts(op, value, schema.field(column).type)
        if texts is None:
            continue
        keys = set().union(*record_keys_for(table, indexes[column], texts).values())
        groups = set(read_record_index(table, keys).values()) if keys else set()
        allowed = groups if allowed is None else allowed & groups
    return allowed


def prune_slices_by_secondary_index(table: HoodieTable, slices: Sequence[Any],
                                    filters: Sequence[tuple[str, str, Any]], schema: pa.Schema | None) -> list[Any]:
    """The file slices whose file group may hold a row matching the indexed point filters."""
    if not slices:
        return list(slices)
    allowed = lookup_file_groups(table, filters, schema)
    if allowed is None:
        return list(slices)
    return [s for s in slices if (s.partition_path, s.file_id) in allowed]


__all__ = ["lookup_file_groups", "metadata_table_current", "prune_slices_by_secondary_index",
           "usable_secondary_indexes"]
