"""The expression indexes a Hudi 1.x table defines, read from ``.hoodie/.index_defs/index.json``.

``CREATE INDEX idx ON t USING column_stats(ts) OPTIONS(expr='from_unixtime', format='yyyy-MM-dd')``
makes Hudi record the definition ``expr_index_idx`` with ``indexType`` ``column_stats`` (or
``bloom_filters``), ``indexFunction`` the function's name, one source field, and the options as
given; its metadata-table partition carries the definition's name. Read through the one
``index.json`` reader (``stats_partitions.index_definitions``). A definition whose function is not
one :mod:`functions` evaluates is refused by name (``HoodieNotSupportedError``), so a job stops
before it reads or changes anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.expression_index.functions import (
    check_options,
    evaluate,
    expression_function,
)
from airflow_hoodie.table.metadata_table.bloom_filter_index import (
    BLOOM_FILTERS_PARTITION,
)
from airflow_hoodie.table.metadata_table.column_stats import COLUMN_STATS_PARTITION
from airflow_hoodie.table.metadata_table.stats_partitions import (
    EXPRESSION_INDEX_PREFIX,
    index_definitions,
)

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable

EXPRESSION_INDEX_TYPES = (COLUMN_STATS_PARTITION, BLOOM_FILTERS_PARTITION)


@dataclass(frozen=True)
class ExpressionIndexDefinition:
    """One expression index: ``function(source_field)`` kept as ``index_type`` in ``partition``."""

    name: str
    index_type: str
    function: str
    source_field: str
    options: Mapping[str, str] = field(default_factory=dict)
    version: str = "V1"

    @property
    def partition(self) -> str:
        """The metadata-table partition holding the index (its definition's name)."""
        return self.name

    def apply(self, values: pa.Array | pa.ChunkedArray, time_zone: str = "UTC") -> pa.Array:
        """The indexed values of a source column, in the Spark session ``time_zone``."""
        return evaluate(self.function, values, self.options, time_zone, self.index_type)


def is_expression_index(name: str, raw: Mapping[str, Any]) -> bool:
    """Whether an ``index.json`` entry is an expression index (by Hudi's name prefix)."""
    return name.startswith(EXPRESSION_INDEX_PREFIX) or str(raw.get("indexName") or "").startswith(
        EXPRESSION_INDEX_PREFIX)


def parse_definition(name: str, raw: Mapping[str, Any]) -> ExpressionIndexDefinition:
    """One ``index.json`` entry as a definition; an unsupported function is refused by name,
    a malformed entry is a ``HoodieConfigError`` naming the index."""
    index_type = str(raw.get("indexType") or "")
    if index_type not in EXPRESSION_INDEX_TYPES:
        raise HoodieConfigError(f"expression index {name}: indexType {index_type!r} is none of "
                                f"{', '.join(EXPRESSION_INDEX_TYPES)}")
    function = expression_function(str(raw.get("indexFunction") or ""))
    fields = list(raw.get("sourceFields") or [])
    if len(fields) != 1:
        raise HoodieConfigError(f"expression index {name}: Hudi applies {function.name} to exactly one source "
                                f"field, the definition names {fields}")
    options = {str(k): str(v) for k, v in (raw.get("indexOptions") or {}).items()}
    try:
        check_options(function, options, index_type)
    except HoodieConfigError as exc:
        raise HoodieConfigError(f"expression index {name}: {exc}") from exc
    return ExpressionIndexDefinition(name=str(raw.get("indexName") or name), index_type=index_type,
                                     function=function.name, source_field=str(fields[0]), options=options,
                                     version=str(raw.get("version") or "V1"))


def expression_index_definitions(table: HoodieTable) -> list[ExpressionIndexDefinition]:
    """The table's expression indexes, in ``index.json`` order (empty for a table without)."""
    return [parse_definition(name, raw) for name, raw in index_definitions(table).items()
            if is_expression_index(name, raw)]


def definitions_of(table: HoodieTable, partitions: Iterable[str]) -> dict[str, ExpressionIndexDefinition]:
    """partition -> definition of the expression indexes among ``partitions`` that ``index.json``
    defines (only those are parsed: a definition of another index, even one on a function we do
    not evaluate, is not this caller's concern). An unevaluated function among them is refused
    by name."""
    wanted = set(partitions)
    out = {}
    for name, raw in index_definitions(table).items():
        if is_expression_index(name, raw) and str(raw.get("indexName") or name) in wanted:
            definition = parse_definition(name, raw)
            out[definition.partition] = definition
    return out
