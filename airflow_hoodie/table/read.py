"""Reading a Hudi table into a pyarrow table: snapshot, read-optimized, time travel, incremental.

The plan is always the same: pick the completed instants the query may see, ask the file
system view for the file slices visible at that point, prune partitions with the filters
on partition columns, then read the slices in a thread pool (parquet decoding releases the
GIL) and concatenate. What differs per query type:

* ``snapshot``: latest file slices; merge-on-read slices merge base and log records.
* ``read_optimized``: latest base files only (for copy-on-write the same as snapshot).
* time travel (``as_of``): the timeline cut at ``as_of``; slices and log blocks after it
  are invisible.
* ``incremental``: rows whose ``_hoodie_commit_time`` is in ``(start, end]``, read from the
  file groups those commits wrote, as of ``end``.

Filters are ``(column, op, value)`` tuples joined by AND, as in pyarrow and hudi-rs
(``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``not in``). Values may be given as
strings (hudi-rs style); they are converted to the column's type. ``column`` may also be an
``airflow_hoodie.Expression`` (an expression-index function applied to a column, e.g.
``(Expression("from_unixtime", "ts", {"format": "yyyy-MM-dd"}), "=", "2024-01-01")``): it is
evaluated on the merged rows, so the result is exact, and an expression index defined on the
same function, options and column lets the read skip files (``expression_pruning``).
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

from airflow_hoodie.errors import HoodieConfigError, HoodieCorruptedDataError, HoodieIOError
from airflow_hoodie.table.file_group.file_slice_reader import (
    META_COLUMNS,
    SliceReadOptions,
    read_file_slice,
)
from airflow_hoodie.table.cdc_read import CDC_OUTPUT_SCHEMA, read_cdc
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.merge_config import MergeConfig
from airflow_hoodie.table.metadata_table.expression_pruning import (
    prune_partitions_by_expression_indexes,
    prune_slices_by_expression_indexes,
)
from airflow_hoodie.table.metadata_table.secondary_index_pruning import prune_slices_by_secondary_index
from airflow_hoodie.table.metadata_table.stats_partitions import kept_stats_partitions
from airflow_hoodie.table.metadata_table.stats_pruning import (
    prune_partitions_by_stats,
    prune_slices_by_stats,
    typed_filters,
)
from airflow_hoodie.table.parallel_map import parallel_map_largest_first
from airflow_hoodie.table.partition_spec import PartitionSpec, PartitionValues, prune_partitions, row_filters
from airflow_hoodie.table.read_filters import (
    Filter,
    apply_expression_filters,
    coerce_value,
    filters_to_expression,
    normalize_filters,
    split_expression_filters,
)
from airflow_hoodie.table.read_plan import (
    IncrementalWindow,
    before_active_timeline,
    check_readable,
    completed_write_instants,
    normalize_query_time,
    slices_to_read,
    visible_commits,
)
from airflow_hoodie.table.record_merger import unify_tables
from airflow_hoodie.table.schema.avro_convert import avro_to_arrow_schema
from airflow_hoodie.table.schema.meta_fields import COMMIT_TIME
from airflow_hoodie.table.schema.table_schema import CREATE_SCHEMA, latest_avro_schema
from airflow_hoodie.table.timeline.instant import Action
from airflow_hoodie.table.timeline.timeline import Timeline

QUERY_TYPES = ("snapshot", "read_optimized", "incremental", "cdc")

_LOG = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- schema
def _meta_fields() -> list[pa.Field]:
    return [pa.field(c, pa.string()) for c in META_COLUMNS]


def table_schema(table: HoodieTable, timeline: Any = None) -> pa.Schema | None:
    """The table's Arrow schema with meta columns, from the latest commit or the create schema.

    Used for typing filter values and for the (empty) result of a query that sees no data.
    """
    avro_schema = latest_avro_schema(timeline, table.config.get(CREATE_SCHEMA))
    try:
        schema = avro_to_arrow_schema(avro_schema)
    except Exception:  # noqa: BLE001 - schema is a convenience here; the data decides
        return None
    fields = [f for f in schema if f.name not in META_COLUMNS]
    if not table.config.populate_meta_fields:
        # Hudi's TableSchemaResolver adds meta fields only when the table populates them
        return pa.schema(fields)
    return pa.schema(_meta_fields() + fields)


# ------------------------------------------------------------------------------ reading
def _load_table(base_path: str, storage_options: Mapping[str, str] | None) -> Any:

    table = HoodieTable.load(base_path, storage_options=storage_options)
    table.check_supported()
    table.check_latest_commit()
    return table


def read_workers(n: int, local: bool) -> int:
    """Threads for ``n`` slice reads (``HOODIE_READ_THREADS`` overrides). On local storage a
    slice read is CPU work (parquet decoding, log decoding, the merge), so one thread per CPU:
    with two per CPU, benchmarks/read.py's 12 slices cost 0.61 CPU-s instead of 0.47 on a
    2-core machine, and no less wall time. On object stores a read also waits on the network,
    which more threads overlap."""
    cpus = os.cpu_count() or 4
    return max(1, min(n, int(os.environ.get("HOODIE_READ_THREADS", "0")) or min(32, cpus if local else cpus * 2)))


def _read_slices(
    storage: Any, slices: Sequence[Any], opts: SliceReadOptions, partition_values: PartitionValues | None = None
) -> list[pa.Table]:
    if not slices:
        return []

    def read_one(s: Any) -> pa.Table:
        table = read_file_slice(storage, s, opts)
        if partition_values is not None and table.num_columns:
            table = partition_values.apply(table, s.partition_path)
        return table

    return parallel_map_largest_first(read_one, slices, _slice_bytes, read_workers(len(slices), storage.is_local),
                                      "hoodie-read")


def _slice_bytes(file_slice: Any) -> float:
    """A slice read's cost, about: its bytes, a log's counted thrice (Avro decoded and merged
    costs about that per byte against parquet)."""
    base = getattr(file_slice, "base_file", None)
    return (base.size if base is not None else 0) + 3 * sum(lf.size for lf in getattr(file_slice, "log_files", ()) or ())


def _empty(schema: pa.Schema | None, columns: Sequence[str] | None) -> pa.Table:
    if schema is None:
        return pa.table({c: pa.array([], pa.null()) for c in (columns or [])})
    table = schema.empty_table()
    if columns is not None:
        table = table.select([c for c in columns if c in schema.names])
    return table


def _with_missing_columns(result: pa.Table, schema: pa.Schema | None, columns: Sequence[str] | None) -> pa.Table:
    """Null columns for schema fields no file read had (added by a later schema evolution)."""
    if schema is None:
        return result
    for name in columns if columns is not None else schema.names:
        if name not in result.column_names and name in schema.names:
            result = result.append_column(schema.field(name), pa.nulls(result.num_rows, schema.field(name).type))
    return result


def read_table(
    base_path: str,
    query_type: str = "snapshot",
    as_of: str | None = None,
    start: str | None = None,
    end: str | None = None,
    columns: Sequence[str] | None = None,
    filters: Iterable[Sequence[Any]] | None = None,
    storage_options: Mapping[str, str] | None = None,
    metadata_enable: bool = True,
) -> pa.Table:
    """Read a Hudi table (local path or ``s3://``, ``gs://``, ``hdfs://`` URI) into a pyarrow table.

    ``query_type``: ``snapshot`` (default), ``read_optimized``, ``incremental`` or ``cdc`` (changes
    as Hudi's CDC relation gives them: :mod:`cdc_read`). ``as_of``: time travel (snapshot, read-optimized).
    ``start``/``end``: the incremental (and cdc) window ``(start, end]``; ``end`` defaults to the latest
    completed instant, ``start`` to the beginning of the timeline. On table version 6 they
    are instant times; on versions 8 and 9 they are *completion* times, as Hudi 1.x's
    incremental queries take them (commits can complete out of order there). Pass the
    ``checkpoint`` that our sensors' XCom, ``WriteResult`` and Asset events carry: it is the
    right one of the two for the table. A 1.x bound that is the requested time of a commit
    that completed later is taken as a completion time, as Hudi and hudi-rs take it, and a
    warning names the commit's completion time (the commit itself is then in the window).
    ``columns``: projection (meta columns included only if named); None returns every column,
    ``_hoodie_*`` meta columns first. ``filters``: AND-ed ``(column, op, value)`` tuples, used
    to prune partitions and pushed into parquet reads (``column`` may be an ``Expression``: see the
    module's docstring). ``metadata_enable`` (Hudi's ``hoodie.metadata.enable``): list files through
    the table's metadata table when it has a ``files`` partition, instead of listing storage."""
    query_type = _check_query(query_type, as_of, start, end)
    as_of, start, end = normalize_query_time(as_of), normalize_query_time(start), normalize_query_time(end)
    flt, expr_flt = split_expression_filters(normalize_filters(filters))
    columns = list(columns) if columns is not None else None

    table = _load_table(base_path, storage_options)
    table.use_metadata_table = metadata_enable
    if query_type == "cdc":
        return _read_changes(table, start, end, columns, flt + expr_flt)
    timeline = table.timeline
    if query_type == "incremental":
        _warn_requested_time_bounds(timeline, start=start, end=end)
    commits = completed_write_instants(timeline)
    visible = visible_commits(timeline, commits, query_type, as_of, end)
    schema = table_schema(table, visible if len(visible) else commits)
    read_columns = _with_expression_sources(columns, expr_flt, schema)
    # one view (listed once, on first use) for the time-travel checks and the read
    view = table.file_system_view(timeline)
    check_readable(timeline, view, query_type, as_of, commits, visible)
    if len(visible):
        latest = visible.last().timestamp
    elif as_of and query_type != "incremental" and before_active_timeline(timeline, as_of):
        latest = as_of  # time travel into the archived range: the files of archived commits up to as_of
    else:
        return _empty(schema, columns)
    spec = PartitionSpec.from_config(table.config)
    partition_values, filter_expr, filter_columns = row_filters(table, spec, flt, schema, columns)
    window = None
    if query_type == "incremental":
        window = IncrementalWindow.of(table, commits, visible, start, end)
        if window is None:
            return _empty(schema, columns)
        filter_expr = window.expression if filter_expr is None else (filter_expr & window.expression)
        filter_columns = sorted(set(filter_columns) | {COMMIT_TIME})
    slices = _pruned_slices(table, view, query_type, as_of, latest, metadata_enable, spec, flt + expr_flt, schema, window)
    opts = SliceReadOptions(
        merge_config=MergeConfig.from_properties(table.config),
        columns=read_columns if partition_values is None else None,
        filter=filter_expr,
        filter_columns=filter_columns,
        as_of=latest,
        valid_instants=frozenset(i.timestamp for i in visible),
        timeline_start=timeline.first_non_savepoint_commit(),
        # Hudi's scanner skips blocks of pending writes (its commits timeline): a pending
        # savepoint, clean or rollback shares a write's instant time without hiding its blocks
        inflight_instants=frozenset(i.timestamp for i in timeline.filter(actions=Action.WRITE).pending()),
        base_only=query_type == "read_optimized" or not table.is_mor,
        schema=schema,
    )
    parts = _read_live_slices(table, view, slices, opts, partition_values)
    return _as_returned(apply_expression_filters(unify_tables(parts), expr_flt), table, schema, columns) \
        if parts else _empty(schema, columns)


def _read_changes(table: HoodieTable, start: str | None, end: str | None, columns: list[str] | None,
                  filters: list) -> pa.Table:
    """A CDC query (:mod:`cdc_read`) over the commits of the window ``(start, end]``, chosen as an
    incremental query chooses them (completion times on 1.x tables)."""
    if filters:
        raise HoodieConfigError("filters do not apply to cdc queries; filter the returned changes instead")
    if not table.config.cdc_enabled:  # as Hudi's CDC relation refuses it
        raise HoodieConfigError(f"{table.base_uri} is not a CDC table (hoodie.table.cdc.enabled is not true): its "
                                "commits logged no changes. Use query_type='incremental', or create the table with "
                                "hoodie.table.cdc.enabled=true.")
    timeline = table.timeline
    _warn_requested_time_bounds(timeline, start=start, end=end)
    commits = completed_write_instants(timeline)
    visible = visible_commits(timeline, commits, "incremental", None, end)
    window = IncrementalWindow.of(table, commits, visible, start, end) if len(visible) else None
    if window is None:
        result = CDC_OUTPUT_SCHEMA.empty_table()
    else:
        avro = latest_avro_schema(visible, table.config.get(CREATE_SCHEMA)) or {"fields": []}
        data = {**avro, "fields": [f for f in avro["fields"] if f["name"] not in META_COLUMNS]}
        result = read_cdc(table, list(window.in_window), data)
    return result.select(columns) if columns is not None else result


def _pruned_slices(table: HoodieTable, view: Any, query_type: str, as_of: str | None, latest: str,
                   metadata_enable: bool, spec: PartitionSpec, flt: list[Filter], schema: pa.Schema | None,
                   window: IncrementalWindow | None) -> list[Any]:
    """The slices to read once partition values, the metadata table's statistics, its
    expression indexes (for the expression filters among ``flt``) and its secondary indexes
    (point lookups) pruned them."""
    flt, expr_flt = split_expression_filters(flt)
    if not as_of:
        # a latest file gone from storage would read as older data (time travel may reach cleaned slices)
        view.check_latest_files_present()
    partitions = set(prune_partitions(list(view.partitions()), spec, flt, schema))
    skipping = _data_skipping(table, query_type, as_of, metadata_enable, flt, schema)
    if skipping:  # partition_stats, then column_stats (stats_pruning)
        partitions = prune_partitions_by_stats(table, partitions, skipping, schema)
    by_expression = expr_flt if expr_flt and _may_skip(table, query_type, as_of, metadata_enable) else []
    if by_expression:
        partitions = prune_partitions_by_expression_indexes(table, partitions, by_expression, schema)
    slices = slices_to_read(table, view, query_type, latest, partitions, window)
    if skipping:
        slices = prune_slices_by_stats(table, slices, skipping, schema)
    if by_expression:
        slices = prune_slices_by_expression_indexes(table, slices, by_expression, schema)
    if flt and query_type == "snapshot" and not as_of and metadata_enable:  # indexes describe the latest slices
        slices = prune_slices_by_secondary_index(table, slices, flt, schema)
    return slices


def _may_skip(table: HoodieTable, query_type: str, as_of: str | None, metadata_enable: bool) -> bool:
    """Whether the read may skip files by the metadata table's indexes: latest snapshot and
    read-optimized reads only (the indexes describe the latest files), with the metadata table."""
    return not as_of and query_type != "incremental" and metadata_enable


def _with_expression_sources(columns: list[str] | None, expr_flt: list[Filter], schema: pa.Schema | None
                             ) -> list[str] | None:
    """The columns to read (checked against the schema): an expression filter needs its source
    column, projected away afterwards."""
    _check_columns(columns, schema)
    sources = list(dict.fromkeys(f[0].column for f in expr_flt))
    _check_columns(sources or None, schema)
    return columns if columns is None or not sources else list(dict.fromkeys(columns + sources))


def _check_columns(columns: list[str] | None, schema: pa.Schema | None) -> None:
    if columns is not None and schema is not None:
        missing = [c for c in columns if c not in schema.names]
        if missing:
            raise HoodieConfigError(
                f"columns {missing} are not in the table schema; columns: {', '.join(schema.names)}"
            )


def _read_live_slices(table: HoodieTable, view: Any, slices: Sequence[Any], opts: SliceReadOptions,
                      partition_values: PartitionValues | None) -> list[pa.Table]:
    """The slices' non-empty tables; a file the metadata table lists but storage lost fails the read."""
    try:
        return [t for t in _read_slices(table.storage, slices, opts, partition_values) if t.num_columns]
    except HoodieIOError as exc:
        gone = re.search(r"File '([^']+)' does not exist", str(exc))
        if gone is None or not view.lists_through_metadata_table:
            raise
        # the metadata table lists what the timeline wrote; storage has lost it
        raise HoodieCorruptedDataError(
            f"{gone.group(1)} is missing: the table's metadata table lists it as a live file, and reading without it "
            "would silently return older data. Nothing was read. Put the file back (object-store versioning, a "
            "backup), or restore the table to a savepoint before the commit that wrote it, then retry.") from exc


def _check_query(query_type: str | None, as_of: str | None, start: str | None, end: str | None) -> str:
    query_type = (query_type or "snapshot").strip().lower().replace("-", "_")
    if query_type not in QUERY_TYPES:
        raise HoodieConfigError(f"query_type {query_type!r} is not one of {', '.join(QUERY_TYPES)}")
    windowed = query_type in ("incremental", "cdc")
    if windowed and as_of is not None:
        raise HoodieConfigError(f"as_of applies to snapshot and read_optimized queries; use end= for {query_type}")
    if not windowed and (start is not None or end is not None):
        raise HoodieConfigError("start/end apply to incremental and cdc queries; pass query_type='incremental'")
    return query_type


def _warn_requested_time_bounds(timeline: Timeline, **bounds: str | None) -> None:
    """On Hudi 1.x an incremental bound is a completion time. A consumer that checkpointed
    a commit's requested time (``_hoodie_commit_time``, or an instant as older releases of
    this provider handed it on) reads that commit a second time, or skips one that completed
    out of order. Hudi and hudi-rs take any time as a completion time, and so do we (reads
    must agree with theirs); the warning names the checkpoint the consumer meant."""
    if not timeline.tracks_completion_time:
        return
    done = timeline.completion_times()
    completions = set(done.values())
    for name, value in bounds.items():
        completed_at = done.get(value) if value else None
        if completed_at is None or completed_at == value or value in completions:
            continue
        _LOG.warning(
            "%s=%r is the requested time of a commit that completed at %s; on this Hudi 1.x table incremental "
            "reads take completion times, so that commit is inside the window. To go on after it, pass %s=%r "
            "(the 'checkpoint' of our sensors' XCom, WriteResult and Asset events).",
            name, value, completed_at, name, completed_at)


def _data_skipping(table: HoodieTable, query_type: str, as_of: str | None, metadata_enable: bool, flt: list,
                   schema: pa.Schema | None) -> list:
    """The filters the metadata table's statistics can skip files by: latest snapshot and
    read-optimized reads only (the statistics describe the latest files), on a table that
    keeps them, read with the metadata table."""
    if not flt or not _may_skip(table, query_type, as_of, metadata_enable) or not kept_stats_partitions(table):
        return []
    return typed_filters(flt, schema, coerce_value)


def _as_returned(result: pa.Table, table: HoodieTable, schema: pa.Schema | None, columns: list[str] | None) -> pa.Table:
    """The read's columns in the table's order (or as asked), without file-level metadata."""
    result = _with_missing_columns(result, schema, columns)
    if not table.config.populate_meta_fields:
        # files of such tables carry all-null meta columns; Hudi's readers leave them out
        result = result.drop_columns([c for c in META_COLUMNS if c in result.column_names and c not in (columns or ())])
    if columns is not None:
        result = result.select([c for c in columns if c in result.column_names])
    elif schema is not None:
        order = [c for c in schema.names if c in result.column_names]
        order += [c for c in result.column_names if c not in order]
        result = result.select(order)
    # parquet footers (bloom filters of several hundred KB, Spark row metadata) are file-level
    # facts, not part of the table a reader gets back
    return result.replace_schema_metadata(None)


__all__ = ["read_table", "filters_to_expression", "prune_partitions", "PartitionSpec", "QUERY_TYPES", "Filter",
           "normalize_query_time", "table_schema"]
