"""Partition paths as partition column values: the partition spec of a table, pruning
partitions by filters on partition columns, and re-adding partition columns a writer dropped.

Hudi writes partition values into paths (``city=sf/day=1`` or ``sf/1``, optionally URL-encoded)
and, with ``hoodie.datasource.write.drop.partition.columns``, only there. Reads map the paths
back to typed values here; anything that does not map is kept (filters run on rows again).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.keygen.keygen_config import DEFAULT_PARTITION_PATH
from airflow_hoodie.table.read_filters import (
    Filter,
    coerce_value,
    filters_to_expression,
)


@dataclass(frozen=True)
class PartitionSpec:
    """How partition paths map back to partition column values."""

    fields: tuple[str, ...]
    hive_style: bool
    url_encoded: bool
    value_mappable: bool

    @classmethod
    def from_config(cls, props: Mapping[str, str]) -> PartitionSpec:
        raw = props.get("hoodie.table.partition.fields") or ""
        fields = tuple(f.split(":")[0].strip() for f in raw.split(",") if f.strip())
        keygen = (props.get("hoodie.table.keygenerator.class") or props.get("hoodie.table.keygenerator.type") or "")
        # a timestamp-based key generator writes formatted dates, not column values
        mappable = "Timestamp" not in keygen and "TIMESTAMP" not in keygen and "Custom" not in keygen
        return cls(
            fields,
            _truthy(props.get("hoodie.datasource.write.hive_style_partitioning")),
            _truthy(props.get("hoodie.datasource.write.partitionpath.urlencode")),
            mappable and bool(fields),
        )

    def values(self, partition_path: str) -> dict[str, str | None] | None:
        """Column values of one partition path, or None when the path does not parse. The
        default partition's value is None: Hudi writes null and empty values there alike
        (and Spark reads it back as null), so the path does not tell which."""
        if not self.value_mappable:
            return None
        parts = partition_path.split("/") if partition_path else []
        if len(parts) != len(self.fields):
            return None
        out: dict[str, str] = {}
        for name, part in zip(self.fields, parts):
            if self.hive_style:
                key, sep, value = part.partition("=")
                if not sep or key != name:
                    return None
            else:
                value = part
            value = urllib.parse.unquote(value) if self.url_encoded else value
            out[name] = None if value == DEFAULT_PARTITION_PATH else value
        return out


def _truthy(v: str | None) -> bool:
    return str(v).strip().lower() == "true"


def prune_partitions(
    partitions: Sequence[str],
    spec: PartitionSpec,
    filters: Sequence[Filter],
    schema: pa.Schema | None,
) -> list[str]:
    """Partitions that may hold rows matching the filters on partition columns.

    Conservative: a partition whose path cannot be mapped to values, or a value that
    cannot be typed, is kept; the filters are applied to the rows again anyway.
    """
    part_filters = [f for f in filters if f[0] in spec.fields]
    if not part_filters or not spec.value_mappable or schema is None:
        return list(partitions)
    keep: list[str] = []
    cols = sorted({f[0] for f in part_filters})
    typed_rows: list[str] = []
    values: dict[str, list[Any]] = {c: [] for c in cols}
    for p in partitions:
        vals = spec.values(p)
        if vals is None or any(vals.get(c) is None for c in cols):  # unmappable, or the default partition
            keep.append(p)
            continue
        try:
            row = {}
            for c in cols:
                idx = schema.get_field_index(c)
                if idx < 0:
                    raise ValueError(c)
                row[c] = coerce_value(vals[c], schema.field(idx).type).as_py()
        except (HoodieError, ValueError, AttributeError, KeyError):
            keep.append(p)
            continue
        typed_rows.append(p)
        for c in cols:
            values[c].append(row[c])
    if typed_rows:
        table = pa.table(
            {c: pa.array(values[c], schema.field(schema.get_field_index(c)).type) for c in cols}
        ).append_column("__partition", pa.array(typed_rows, pa.string()))
        expr = filters_to_expression(part_filters, table.schema)
        keep.extend(table.filter(expr).column("__partition").to_pylist())
    order = {p: i for i, p in enumerate(partitions)}
    return sorted(set(keep), key=order.__getitem__)


@dataclass(frozen=True)
class PartitionValues:
    """Re-adds partition columns a writer dropped (``hoodie.datasource.write.drop.partition.columns``)."""

    spec: PartitionSpec
    schema: pa.Schema | None
    filter: ds.Expression | None
    columns: Sequence[str] | None

    def apply(self, table: pa.Table, partition_path: str) -> pa.Table:
        values = self.spec.values(partition_path) or {}
        for name in self.spec.fields:
            if name in table.column_names or name not in values:
                continue
            typ = pa.string()
            if self.schema is not None and name in self.schema.names:
                typ = self.schema.field(name).type
            try:
                scalar = coerce_value(values[name], typ) if values[name] is not None else None
            except HoodieError:
                scalar, typ = pa.scalar(values[name]), pa.string()
            col = pa.array([scalar.as_py() if isinstance(scalar, pa.Scalar) else scalar] * table.num_rows, typ)
            table = table.append_column(pa.field(name, typ), col)
        if self.filter is not None and table.num_rows:
            table = table.filter(self.filter)
        if self.columns is not None:
            table = table.select([c for c in self.columns if c in table.column_names])
        return table


def row_filters(table: HoodieTable, spec: PartitionSpec, flt: list, schema: pa.Schema | None, columns: list[str] | None
                ) -> tuple[PartitionValues | None, ds.Expression | None, list[str]]:
    """(partition values to add back, row filter, columns it reads). Tables that drop the
    partition columns from their files filter on them after adding them back from the path."""
    partition_values = None
    row_filters = flt
    if spec.value_mappable and table.config.drop_partition_columns:
        part_filters = [f for f in flt if f[0] in spec.fields]
        row_filters = [f for f in flt if f[0] not in spec.fields]
        partition_values = PartitionValues(
            spec, schema, filters_to_expression(part_filters, schema) if part_filters else None, columns
        )
    filter_expr = filters_to_expression(row_filters, schema) if row_filters else None
    return partition_values, filter_expr, sorted({f[0] for f in row_filters})
