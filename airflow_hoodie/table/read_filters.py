"""Row filters of reads: ``(column, op, value)`` tuples, validated once and turned into one
pyarrow dataset expression.

The same typed filters prune partitions (partition_spec), skip files by the metadata table's
statistics (stats_pruning) and are pushed into the parquet reads of file slices, so their
parsing and typing live here, once. Operators are those of pyarrow and hudi-rs (``=``, ``!=``,
``<``, ``<=``, ``>``, ``>=``, ``in``, ``not in``); values may be given as strings (hudi-rs style)
and are converted to the column's type.

A filter's left side may also be an :class:`~airflow_hoodie.table.expression_index.expression.Expression`
(an expression-index function applied to a column): such filters are evaluated on the rows
after they are read and merged (:func:`apply_expression_filters`), the value typed as the
function's result, and may skip files by a matching expression index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.expression_index.expression import Expression

Filter = tuple[Any, str, Any]


_OPS = {"=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"}


def normalize_filters(filters: Iterable[Sequence[Any]] | None) -> list[Filter]:
    if not filters:
        return []
    out: list[Filter] = []
    for f in filters:
        if not isinstance(f, (tuple, list)) or len(f) != 3:
            raise HoodieConfigError(
                f"filter {f!r} is not a (column, op, value) tuple; write e.g. ('city', '=', 'sf')"
            )
        col, op, value = f
        op = str(op).strip().lower()
        if op not in _OPS:
            raise HoodieConfigError(f"filter operator {op!r} is not supported; use one of {sorted(_OPS)}")
        if op in ("in", "not in"):
            if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                raise HoodieConfigError(f"filter {f!r}: {op!r} needs a list of values")
            value = list(value)
            if not value:
                raise HoodieConfigError(f"filter {f!r}: {op!r} needs at least one value")
        out.append((col if isinstance(col, Expression) else str(col), op, value))
    return out


def split_expression_filters(filters: Sequence[Filter]) -> tuple[list[Filter], list[Filter]]:
    """(column filters, expression filters)."""
    return ([f for f in filters if not isinstance(f[0], Expression)],
            [f for f in filters if isinstance(f[0], Expression)])


def apply_expression_filters(data: pa.Table, filters: Sequence[Filter]) -> pa.Table:
    """The rows of ``data`` for which every ``(Expression, op, value)`` holds, compared as a
    column filter on the expression's values (same typing of the value, same operators).
    Applied to the merged rows, so the result is exact whatever the indexes skipped."""
    for i, (expr, op, value) in enumerate(filters):
        if data.num_rows == 0:
            break
        name = f"__hoodie_expression_{i}"
        values = expr.evaluate(data.column(expr.column))
        with_values = data.append_column(name, values)
        condition = filters_to_expression([(name, op, value)], pa.schema([pa.field(name, values.type)]))
        data = with_values.filter(condition).drop_columns([name])
    return data


def coerce_value(value: Any, typ: pa.DataType | None) -> pa.Scalar | Any:
    """A filter value as a scalar of the column's type (strings are parsed, as hudi-rs does)."""
    if typ is None:
        return value
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    try:
        if isinstance(value, str) and not (pa.types.is_string(typ) or pa.types.is_large_string(typ)):
            if pa.types.is_boolean(typ):
                return pa.scalar(value.strip().lower() == "true", typ)
            return pa.scalar(value, pa.string()).cast(typ)
        return pa.scalar(value, typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
        try:
            return pa.scalar(value).cast(typ)
        except Exception as exc:  # noqa: BLE001 - any conversion failure is the user's value
            raise HoodieConfigError(f"filter value {value!r} cannot be compared with a {typ} column") from exc


def filters_to_expression(filters: Sequence[Filter], schema: pa.Schema | None) -> ds.Expression | None:
    """AND of the filters as a pyarrow dataset expression, values typed after ``schema``."""
    expr: ds.Expression | None = None
    for col, op, value in filters:
        typ = None
        if schema is not None:
            idx = schema.get_field_index(col)
            if idx < 0:
                raise HoodieConfigError(
                    f"filter column {col!r} is not in the table schema; columns: {', '.join(schema.names)}"
                )
            typ = schema.field(idx).type
        field = ds.field(col)
        if op in ("in", "not in"):
            values = [coerce_value(v, typ) for v in value]
            arr = pa.array([v.as_py() if isinstance(v, pa.Scalar) else v for v in values], typ)
            e = field.isin(arr)
            if op == "not in":
                e = ~e
        else:
            v = coerce_value(value, typ)
            e = {
                "=": field == v,
                "==": field == v,
                "!=": field != v,
                "<": field < v,
                "<=": field <= v,
                ">": field > v,
                ">=": field >= v,
            }[op]
        expr = e if expr is None else (expr & e)
    return expr
