"""One normalization for comparing table reads: ours, hudi-rs's and the conformance corpus.

The expected files in the conformance corpus were produced by this normalization (rows
sorted by partition path, record key, then the row's JSON; bytes as ``{"hex": ...}``,
decimals as strings, dates/times ISO, maps as lists of ``[key, value]`` pairs;
``_hoodie_commit_seqno`` and ``_hoodie_file_name`` dropped because they depend on the
writer's task layout, not on the data). Every test that compares rows uses it, so a
difference is always a difference in data, never in formatting.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

#: meta columns that depend on the physical write, not on the logical rows.
UNSTABLE_COLUMNS = ("_hoodie_commit_seqno", "_hoodie_file_name")


def normalize_value(value: Any) -> Any:
    """Turn one Python value (from ``pa.Table.to_pylist``) into plain JSON data."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value.isoformat()
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, Mapping):
        return {str(k): normalize_value(v) for k, v in value.items()}
    if isinstance(value, tuple) and len(value) == 2:
        # pyarrow returns map entries as (key, value) tuples
        return [normalize_value(value[0]), normalize_value(value[1])]
    if isinstance(value, Iterable):
        return [normalize_value(v) for v in value]
    return str(value)


def _row_sort_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return (
        str(row.get("_hoodie_partition_path") or ""),
        str(row.get("_hoodie_record_key") or ""),
        json.dumps(row, sort_keys=True),
    )


def normalize_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Normalize and sort plain rows (dicts)."""
    out = []
    for row in rows:
        out.append(
            {k: normalize_value(v) for k, v in row.items() if k not in UNSTABLE_COLUMNS}
        )
    # a JSON round trip makes tuples lists and floats compare as the expected files do
    out = json.loads(json.dumps(out))
    out.sort(key=_row_sort_key)
    return out


def _float32_as_shortest(table: pa.Table) -> pa.Table:
    """Make float32 columns print like Java/JSON writers do (``1.1``, not ``1.100000023841858``)."""

    def fix(arr: pa.Array, typ: pa.DataType) -> pa.Array:
        if pa.types.is_float32(typ):
            return pa.array(
                [None if v is None else float(str(_np_float32(v))) for v in arr.to_pylist()],
                pa.float64(),
            )
        return arr

    names = []
    cols = []
    changed = False
    for name, col in zip(table.column_names, table.columns):
        if pa.types.is_float32(col.type):
            col = pa.chunked_array([fix(c, col.type) for c in col.chunks], pa.float64())
            changed = True
        names.append(name)
        cols.append(col)
    return pa.table(cols, names=names) if changed else table


def _np_float32(v: float) -> Any:
    import numpy as np

    return np.float32(v)


def normalize_table(table: pa.Table | None) -> list[dict[str, Any]]:
    """Normalize a pyarrow table (any column order) into sorted plain rows."""
    if table is None:
        return []
    table = _float32_as_shortest(table)
    return normalize_rows(table.to_pylist())


def hudi_rs_rows(
    base_path: str,
    query_type: str = "snapshot",
    as_of: str | None = None,
    start: str | None = None,
    end: str | None = None,
    filters: list[tuple[str, str, Any]] | None = None,
    columns: list[str] | None = None,
    storage_options: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Read a table with hudi-rs (PyPI ``hudi``) and normalize it like :func:`normalize_table`.
    ``storage_options`` are hudi-rs's (object_store's: ``aws_endpoint_url``, ``aws_allow_http`` ...).

    ``query_type`` is one of snapshot, read_optimized, incremental. Used as the external
    oracle for tables we write: if hudi-rs reads our table as we do, it is a real Hudi table.
    """
    from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(base_path)).with_storage_options(dict(storage_options or {})).build()
    rs_filters = None
    if filters:
        # hudi-rs takes string values; IN / NOT IN lists as comma-separated strings
        rs_filters = [
            (str(c), str(op), ",".join(map(str, v)) if isinstance(v, (list, tuple, set)) else
             (str(v).lower() if isinstance(v, bool) else str(v)))
            for c, op, v in filters
        ]
    opts = HudiReadOptions(filters=rs_filters, projection=columns)
    if query_type == "incremental":
        opts = opts.with_query_type(HudiQueryType.Incremental)
        if start is not None:
            opts = opts.with_start_timestamp(start)
        if end is not None:
            opts = opts.with_end_timestamp(end)
    else:
        if query_type == "read_optimized":
            opts = opts.with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
        elif query_type != "snapshot":
            raise ValueError(f"unknown query type {query_type!r}")
        if as_of is not None:
            opts = opts.with_as_of_timestamp(as_of)
    batches = list(table.read(opts))
    if not batches:
        return []
    return normalize_table(pa.Table.from_batches(batches))


def read_rows(base_path: str, **kwargs: Any) -> list[dict[str, Any]]:
    """``read_table`` (ours) normalized like :func:`hudi_rs_rows`; same keyword arguments."""
    from airflow_hoodie.table import read_table

    return normalize_table(read_table(str(base_path), **kwargs))


def differences_from_hudi_rs(base_path: str, time_travel: bool = True) -> list[str]:
    """Every query on which our reader and hudi-rs disagree (empty list: they agree).

    Checks snapshot, read-optimized, time travel to each completed write instant and the
    incremental window after each one. For a test of a table we wrote:
    ``assert differences_from_hudi_rs(path) == []``.
    """
    from airflow_hoodie.table.hoodie_table import HoodieTable

    table = HoodieTable.load(str(base_path))
    instants = [i.timestamp for i in table.timeline.completed_commits()]
    queries: list[tuple[str, dict[str, Any]]] = [("snapshot", {}), ("read_optimized", {"query_type": "read_optimized"})]
    if time_travel:
        for ts in instants:
            queries.append((f"as_of {ts}", {"as_of": ts}))
            queries.append((f"incremental after {ts}", {"query_type": "incremental", "start": ts}))
    diffs = []
    for label, kwargs in queries:
        ours = read_rows(base_path, **kwargs)
        theirs = hudi_rs_rows(str(base_path), **kwargs)
        if ours != theirs:
            ours_keys = [(r.get("_hoodie_partition_path"), r.get("_hoodie_record_key")) for r in ours]
            their_keys = [(r.get("_hoodie_partition_path"), r.get("_hoodie_record_key")) for r in theirs]
            diffs.append(f"{label}: ours {len(ours)} rows {ours_keys[:10]} vs hudi-rs {len(theirs)} rows {their_keys[:10]}")
    return diffs
