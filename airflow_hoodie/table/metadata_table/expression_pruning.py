"""Data skipping by expression indexes: a filter ``(Expression(f, col, options), op, value)``
skips partitions and file slices by an ``expr_index_*`` partition that indexes exactly
``f(col)`` with those options (``Expression.indexed_by``).

- a ``column_stats`` index holds, per file, the range of ``f(col)`` under the source column's
  name, and per data partition a range over its latest slices: the same conservative rules as
  the plain statistics (:mod:`stats_pruning`) apply, with the filter value typed as ``f``'s result;
- a ``bloom_filters`` index holds, per file, a bloom filter of the Java text of each ``f(col)``
  value: an ``=``/``in`` filter drops a slice only when every one of its files has a filter and
  none may contain any of the values.
Only latest snapshot and read-optimized reads skip (the indexes describe the latest files).
Rows are always filtered by evaluating the expression itself, so a pruned read returns exactly
the rows of a full one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.expression_index.definitions import (
    ExpressionIndexDefinition,
    definitions_of,
)
from airflow_hoodie.table.expression_index.expression import (
    Expression,
    bloom_key_strings,
)
from airflow_hoodie.table.metadata_table.bloom_filter_index import (
    BLOOM_FILTERS_PARTITION,
    bloom_filter_of,
)
from airflow_hoodie.table.metadata_table.index_keys import (
    bloom_filter_key,
    expression_partition_stats_key,
)
from airflow_hoodie.table.metadata_table.stats_partitions import kept_expression_indexes
from airflow_hoodie.table.metadata_table.stats_pruning import (
    TypedFilter,
    _records_or_none,
    prune_partitions_by_stats,
    prune_slices_by_stats,
    slice_files,
    typed_filters,
)
from airflow_hoodie.table.read_filters import coerce_value

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable

ExpressionFilter = tuple[Expression, str, Any]


def _indexes_for(table: HoodieTable, filters: Sequence[ExpressionFilter]
                 ) -> list[tuple[ExpressionIndexDefinition, ExpressionFilter]]:
    """(index, filter) pairs of the kept indexes that index a filter's expression exactly."""
    listed = kept_expression_indexes(table)
    if not listed or not filters:
        return []
    definitions = []
    for partition in listed:
        try:
            definitions += list(definitions_of(table, [partition]).values())
        except HoodieError:  # an index we cannot evaluate (or a malformed one) skips nothing; rows decide
            continue
    return [(d, f) for f in filters for d in definitions if f[0].indexed_by(d)]


def _typed(flt: ExpressionFilter, schema: pa.Schema | None) -> tuple[list[TypedFilter], pa.Schema | None]:
    """The filter typed as the function's result, under the source column's name (and the
    schema that gives the source column that result type)."""
    expr, op, value = flt
    if schema is None or expr.column not in schema.names:
        return [], None
    result = pa.schema([pa.field(expr.column, expr.result_type(schema.field(expr.column).type))])
    return typed_filters([(expr.column, op, value)], result, coerce_value), result


def prune_partitions_by_expression_indexes(table: HoodieTable, partitions: Iterable[str],
                                           filters: Sequence[ExpressionFilter], schema: pa.Schema | None) -> set[str]:
    """The partitions whose expression-index partition records may satisfy every filter."""
    parts = set(partitions)
    for definition, flt in _indexes_for(table, filters):
        typed, result = _typed(flt, schema)
        if definition.index_type == BLOOM_FILTERS_PARTITION or not typed:
            continue
        parts = prune_partitions_by_stats(table, parts, typed, result, definition.partition,
                                          expression_partition_stats_key)
    return parts


def _bloom_keys(flt: ExpressionFilter, schema: pa.Schema | None) -> list[str] | None:
    expr, op, value = flt
    if op not in ("=", "==", "in") or schema is None or expr.column not in schema.names:
        return None
    typ = expr.result_type(schema.field(expr.column).type)
    try:
        scalars = [coerce_value(v, typ) for v in (value if op == "in" else [value])]
        if not all(isinstance(s, pa.Scalar) and s.is_valid for s in scalars):
            return None  # ``in`` with a null matches null rows, which no filter holds
        return bloom_key_strings(pa.array([s.as_py() for s in scalars], typ), expr.function)
    except Exception:  # noqa: BLE001 - a value we cannot type or print skips nothing; the rows decide
        return None


def _prune_by_bloom(table: HoodieTable, slices: Sequence[Any], partition: str, keys: list[str]) -> list[Any]:
    lookup = {bloom_filter_key(s.partition_path, n): (s.partition_path, n) for s in slices for n in slice_files(s)}
    records = _records_or_none(table, partition, lookup)
    if records is None:
        return list(slices)
    kept = []
    for s in slices:
        filters = [records.get(bloom_filter_key(s.partition_path, n)) for n in slice_files(s)]
        blooms = [bloom_filter_of(r) if r is not None else None for r in filters]
        if not blooms or any(b is None for b in blooms) or any(b.might_contain(k) for b in blooms for k in keys):
            kept.append(s)
    return kept


def prune_slices_by_expression_indexes(table: HoodieTable, slices: Sequence[Any],
                                       filters: Sequence[ExpressionFilter], schema: pa.Schema | None) -> list[Any]:
    """The file slices whose files' expression-index records may satisfy every filter."""
    kept = list(slices)
    for definition, flt in _indexes_for(table, filters):
        if definition.index_type == BLOOM_FILTERS_PARTITION:
            keys = _bloom_keys(flt, schema)
            if keys is not None:
                kept = _prune_by_bloom(table, kept, definition.partition, keys)
            continue
        typed, result = _typed(flt, schema)
        if typed:
            kept = prune_slices_by_stats(table, kept, typed, result, definition.partition)
    return kept
