"""``airflow-hoodie stats``: the column statistics the metadata table keeps of one data file.

The metadata table's modules are imported when the command runs, not when the CLI starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.hoodie_table import HoodieTable


def file_stats_rows(table: HoodieTable, file: str) -> list[dict[str, Any]]:
    """The metadata table's column stats of one data file (``file``: its path under the
    table, partition folders included), one row per indexed column."""
    from airflow_hoodie.table.metadata_table.column_stats import (  # noqa: PLC0415
        VALUE_TYPES,
        comparable_value,
    )
    from airflow_hoodie.table.metadata_table.index_keys import column_stats_key  # noqa: PLC0415
    from airflow_hoodie.actions.metadata_table.stats_index_writer import indexed_columns  # noqa: PLC0415
    from airflow_hoodie.table.metadata_table.stats_partitions import kept_stats_partitions  # noqa: PLC0415
    from airflow_hoodie.table.metadata_table.stats_reader import (  # noqa: PLC0415
        index_partition_files,
        read_index_records,
    )

    if "column_stats" not in kept_stats_partitions(table):
        raise HoodieError(f"{table.base_uri} keeps no column_stats in its metadata table; write with "
                          "hoodie.metadata.index.column.stats.enable=true to build it.")
    partition, _, name = file.strip("/").rpartition("/")
    columns = indexed_columns(table) or []
    keys = {column_stats_key(c, partition, name): c for c in columns}
    records = read_index_records(index_partition_files(table, "column_stats"), keys)
    rows = []
    for key, column in keys.items():
        m = (records.get(key) or {}).get("ColumnStatsMetadata")
        if m is None:
            continue
        vt = m.get("valueType")
        rows.append({"column": column, "min": _stat_value(comparable_value(m.get("minValue"), vt), vt),
                     "max": _stat_value(comparable_value(m.get("maxValue"), vt), vt), "null_count": m.get("nullCount"),
                     "value_count": m.get("valueCount"), "total_size": m.get("totalSize"),
                     "value_type": VALUE_TYPES[int(vt["typeOrdinal"])] if vt else "V1"})
    if not rows:
        raise HoodieError(f"The column_stats partition of {table.base_uri} holds no statistics of {file!r}; give the "
                          "file's path under the table, partition folders included (see `airflow-hoodie slices`).")
    return rows


def _stat_value(value: Any, vt: Mapping[str, Any] | None) -> Any:
    """A stored min/max as its logical value (a V2 decimal's unscaled int, a date's epoch days,
    a timestamp's epoch units)."""
    import datetime as _dt  # noqa: PLC0415
    import decimal  # noqa: PLC0415

    if value is None or not vt:
        return value
    ordinal = int(vt.get("typeOrdinal") or 0)
    if ordinal == 10 and vt.get("additionalInfo"):
        return decimal.Decimal(int(value)).scaleb(-int(str(vt["additionalInfo"]).split(",")[1]))
    if ordinal == 12:
        return _dt.date(1970, 1, 1) + _dt.timedelta(days=int(value))
    per_second = {15: 1_000, 16: 1_000_000, 18: 1_000, 19: 1_000_000}.get(ordinal)
    if per_second:
        moment = _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=int(value) * (1_000_000 // per_second))
        return moment.replace(tzinfo=_dt.timezone.utc) if ordinal in (15, 16) else moment
    return value
