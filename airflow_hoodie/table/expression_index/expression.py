"""An expression-index function applied to a column, as a read filter names it, and the strings
a ``bloom_filters`` expression index holds for its values.

``read_table(filters=[(Expression("from_unixtime", "ts", {"format": "yyyy-MM-dd"}), "=", "2024-01-01")])``
keeps the rows whose ``from_unixtime(ts, 'yyyy-MM-dd')`` equals that date: the filter is evaluated
on the rows with the same functions the index writer uses (:mod:`functions`, Spark's semantics),
so its result is exact whether or not an index exists. An expression index whose definition
applies the same function with the same options to the same column only lets the read skip files
(``table.metadata_table.expression_pruning``). Datetime functions depend on the session time
zone: a filter evaluates in its ``time_zone``, which must be the zone the index was written in
(Hudi's Spark writer uses ``spark.sql.session.timeZone``; our writers default to UTC).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.expression_index.functions import (
    BLOOM_FILTER_OPTIONS,
    EXPR,
    check_options,
    evaluate,
    expression_function,
)
from airflow_hoodie.table.expression_index.session_zone import session_zone

if TYPE_CHECKING:
    from airflow_hoodie.table.expression_index.definitions import (
        ExpressionIndexDefinition,
    )


def _function_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options that change a function's result (not ``expr``, not a bloom filter's sizing)."""
    return {k: v for k, v in options.items() if k != EXPR and k not in BLOOM_FILTER_OPTIONS}


@dataclass(frozen=True)
class Expression:
    """``function(column)`` with the index options ``options``, in the Spark session zone
    ``time_zone``: the left side of a read filter. Validated when built (an unknown function is
    refused by name, a wrong option is a ``HoodieConfigError``)."""

    function: str
    column: str
    options: Mapping[str, str] = field(default_factory=dict, hash=False)
    time_zone: str = "UTC"

    def __post_init__(self) -> None:
        fn = expression_function(self.function)
        options = {str(k): str(v) for k, v in (self.options or {}).items()}
        check_options(fn, options, "column_stats")
        object.__setattr__(self, "options", options)
        object.__setattr__(self, "time_zone", session_zone(self.time_zone))

    def evaluate(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """The function over a column's values."""
        return evaluate(self.function, values, self.options, self.time_zone)

    def result_type(self, source_type: pa.DataType) -> pa.DataType:
        """The type the function returns for a column of ``source_type``."""
        return self.evaluate(pa.array([], source_type)).type

    def indexed_by(self, definition: ExpressionIndexDefinition) -> bool:
        """Whether ``definition`` indexes exactly this expression (same function, column and
        result-changing options)."""
        return (definition.function == self.function and definition.source_field == self.column
                and _function_options(definition.options) == _function_options(self.options))

    def __str__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in sorted(self.options.items()))
        return f"{self.function}({self.column}{', ' + opts if opts else ''})"


def bloom_key_strings(values: pa.Array, function: str) -> list[str]:
    """The non-null values as Hudi's writer adds them to a ``bloom_filters`` expression index:
    the Java ``toString`` of each Spark value (a string as is, an integer in decimal, a date as
    ``yyyy-MM-dd``, a boolean as ``true``/``false``). A type whose Java text we cannot reproduce
    (a timestamp prints in the JVM's default zone, a double in Java's float format) is refused."""
    typ = values.type
    if pa.types.is_null(typ):
        return []
    present = values.filter(values.is_valid()) if values.null_count else values
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return [str(v) for v in present.to_pylist()]
    if pa.types.is_integer(typ):
        return [str(int(v)) for v in present.to_pylist()]
    if pa.types.is_boolean(typ):
        return ["true" if v else "false" for v in present.to_pylist()]
    if pa.types.is_date32(typ):
        return [v.isoformat() if isinstance(v, dt.date) else str(v) for v in present.to_pylist()]
    raise HoodieNotSupportedError(
        f"a bloom_filters expression index over {function} yields {typ} values, whose text Hudi's writer takes "
        "from Java's toString (JVM-zone timestamps, Java float formatting), which airflow-hoodie cannot reproduce "
        "exactly. Use a column_stats expression index for it, or keep this table's metadata table with Hudi itself.")
