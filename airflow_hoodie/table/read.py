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
strings (hudi-rs style); they are converted to the column's type.
"""

from __future__ import annotations

import logging
import os
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.dataset as ds

from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieCorruptedDataError,
    HoodieError,
    HoodieIOError,
    HoodieTimelineError,
)
from airflow_hoodie.table.file_group.file_slice_reader import (
    META_COLUMNS,
    SliceReadOptions,
    read_file_slice,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.stats_partitions import kept_stats_partitions
from airflow_hoodie.table.metadata_table.stats_pruning import (
    prune_partitions_by_stats,
    prune_slices_by_stats,
    typed_filters,
)
from airflow_hoodie.table.parallel_map import parallel_map
from airflow_hoodie.table.record_merger import MergeConfig, unify_tables
from airflow_hoodie.table.schema.avro_convert import avro_to_arrow_schema
from airflow_hoodie.table.schema.meta_fields import (
    COMMIT_TIME,
)
from airflow_hoodie.table.schema.table_schema import CREATE_SCHEMA, latest_avro_schema
from airflow_hoodie.table.timeline.clean_horizon import clean_horizon, files_cleaned_from
from airflow_hoodie.table.timeline.instant import Action, Instant, normalize_instant_time
from airflow_hoodie.table.keygen.keygen_config import DEFAULT_PARTITION_PATH
from airflow_hoodie.table.timeline.replace_kind import is_clustering_requested
from airflow_hoodie.table.timeline.timeline import Timeline

QUERY_TYPES = ("snapshot", "read_optimized", "incremental")

_LOG = logging.getLogger(__name__)

Filter = tuple[str, str, Any]

_OPS = {"=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"}


# ----------------------------------------------------------------------------- filters
def _normalize_filters(filters: Iterable[Sequence[Any]] | None) -> list[Filter]:
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
        out.append((str(col), op, value))
    return out


def _coerce(value: Any, typ: pa.DataType | None) -> pa.Scalar | Any:
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
            values = [_coerce(v, typ) for v in value]
            arr = pa.array([v.as_py() if isinstance(v, pa.Scalar) else v for v in values], typ)
            e = field.isin(arr)
            if op == "not in":
                e = ~e
        else:
            v = _coerce(value, typ)
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


# --------------------------------------------------------------------- partition pruning
@dataclass(frozen=True)
class PartitionSpec:
    """How partition paths map back to partition column values."""

    fields: tuple[str, ...]
    hive_style: bool
    url_encoded: bool
    value_mappable: bool

    @classmethod
    def from_config(cls, props: Mapping[str, str]) -> "PartitionSpec":
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
                row[c] = _coerce(vals[c], schema.field(idx).type).as_py()
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


def normalize_query_time(ts: str | None) -> str | None:
    """Accept Hudi's instant format and the common date-time spellings for ``as_of``/``start``/``end``."""
    if ts is None:
        return None
    text = str(ts).strip()
    digits = "".join(ch for ch in text if ch.isdigit())
    if text.isdigit():
        # 17 (ms) and 14 (s) digit instants are Hudi's own; shorter ones mean the start of
        # that day/hour/minute
        return text if len(text) >= 14 else text.ljust(17, "0")
    if len(digits) >= 14:
        return (digits + "000")[:17]
    if len(digits) == 8:
        return digits + "000000000"
    raise HoodieConfigError(
        f"instant time {ts!r} is not understood; use yyyyMMddHHmmssSSS or 'yyyy-MM-dd HH:mm:ss[.SSS]'"
    )


def _completed_write_instants(timeline: Any) -> Any:
    """Completed commit/deltacommit/replacecommit (a completed compaction is a commit)."""
    return timeline.completed_commits()


def _touched_file_groups(timeline: Any, instants: Iterable[Any]) -> set[tuple[str, str]] | None:
    """(partition, file id) written by the given commits, from their commit metadata.

    None when some metadata cannot be read: the caller then reads every file group (correct,
    only slower).
    """
    touched: set[tuple[str, str]] = set()
    for instant in instants:
        try:
            meta = timeline.commit_metadata(instant)
        except HoodieError:
            return None
        for partition, stat in meta.iter_write_stats():
            if stat.file_id:
                touched.add((stat.partition_path or partition or "", stat.file_id))
    return touched


def _max_workers(n: int, local: bool) -> int:
    """Threads for ``n`` slice reads (``HOODIE_READ_THREADS`` overrides). On local storage a
    slice read is CPU work (parquet decoding, log decoding, the merge), so one thread per CPU:
    with two per CPU, benchmarks/read.py's 12 slices cost 0.61 CPU-s instead of 0.47 on a
    2-core machine, and no less wall time. On object stores a read also waits on the network,
    which more threads overlap."""
    cpus = os.cpu_count() or 4
    return max(1, min(n, int(os.environ.get("HOODIE_READ_THREADS", "0")) or min(32, cpus if local else cpus * 2)))


@dataclass(frozen=True)
class _PartitionValues:
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
                scalar = _coerce(values[name], typ) if values[name] is not None else None
            except HoodieError:
                scalar, typ = pa.scalar(values[name]), pa.string()
            col = pa.array([scalar.as_py() if isinstance(scalar, pa.Scalar) else scalar] * table.num_rows, typ)
            table = table.append_column(pa.field(name, typ), col)
        if self.filter is not None and table.num_rows:
            table = table.filter(self.filter)
        if self.columns is not None:
            table = table.select([c for c in self.columns if c in table.column_names])
        return table


def _read_slices(
    storage: Any, slices: Sequence[Any], opts: SliceReadOptions, partition_values: _PartitionValues | None = None
) -> list[pa.Table]:
    if not slices:
        return []

    def read_one(s: Any) -> pa.Table:
        table = read_file_slice(storage, s, opts)
        if partition_values is not None and table.num_columns:
            table = partition_values.apply(table, s.partition_path)
        return table

    return parallel_map(read_one, slices, _max_workers(len(slices), storage.is_local), "hoodie-read")


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


def _archived_commits_completed_in(table: HoodieTable, active: Any, done: dict[str, str], start: str | None,
                                   end: str | None) -> list[Instant]:
    """Hudi 1.x incremental windows are completion-time ranges: when one starts before the
    first active commit completed, the archived history holds commits that completed
    inside it, and their rows must be read too (Hudi's IncrementalQueryAnalyzer does)."""
    if start is None:
        return []
    first_done = min((done.get(i.timestamp, i.timestamp) for i in active), default=None)
    if first_done is not None and start >= first_done:
        return []
    archived = table.archived_timeline()
    times = archived.completion_times()
    return [i for i in archived.completed_commits()
            if times.get(i.timestamp, i.timestamp) > start and (not end or times.get(i.timestamp, i.timestamp) <= end)]


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

    ``query_type``: ``snapshot`` (default), ``read_optimized`` or ``incremental``.
    ``as_of``: time travel to this instant (snapshot and read-optimized).
    ``start``/``end``: the incremental window ``(start, end]``; ``end`` defaults to the latest
    completed instant, ``start`` to the beginning of the timeline. On table version 6 they
    are instant times; on versions 8 and 9 they are *completion* times, as Hudi 1.x's
    incremental queries take them (commits can complete out of order there). Pass the
    ``checkpoint`` that our sensors' XCom, ``WriteResult`` and Asset events carry: it is the
    right one of the two for the table. A 1.x bound that is the requested time of a commit
    that completed later is taken as a completion time, as Hudi and hudi-rs take it, and a
    warning names the commit's completion time (the commit itself is then in the window).
    ``columns``: projection (meta columns included only if named); None returns every column,
    ``_hoodie_*`` meta columns first. ``filters``: AND-ed ``(column, op, value)`` tuples, used
    to prune partitions and pushed into parquet reads. ``metadata_enable`` (Hudi's
    ``hoodie.metadata.enable``): list files through the table's metadata table when it has
    a ``files`` partition, instead of listing storage.
    """
    query_type = _check_query(query_type, as_of, start, end)
    as_of, start, end = normalize_query_time(as_of), normalize_query_time(start), normalize_query_time(end)
    flt = _normalize_filters(filters)
    columns = list(columns) if columns is not None else None

    table = _load_table(base_path, storage_options)
    table.use_metadata_table = metadata_enable
    timeline = table.timeline
    if query_type == "incremental":
        _warn_requested_time_bounds(timeline, start=start, end=end)
    commits = _completed_write_instants(timeline)
    visible = _visible_commits(timeline, commits, query_type, as_of, end)
    schema = table_schema(table, visible if len(visible) else commits)
    if columns is not None and schema is not None:
        missing = [c for c in columns if c not in schema.names]
        if missing:
            raise HoodieConfigError(
                f"columns {missing} are not in the table schema; columns: {', '.join(schema.names)}"
            )
    # one view (listed once, on first use) for the time-travel checks and the read
    view = table.file_system_view(timeline)
    if as_of:
        _check_time_travel(timeline, view, as_of)
    if query_type == "incremental" and len(visible):
        if not timeline.tracks_completion_time:
            _refuse_hollow_window(timeline, visible.last().timestamp)
        if visible.last() != commits.last():
            # a window that ends before the latest commit reads the slices as of its end: a time
            # travel, refused where a clean removed them (Hudi: HoodieIncrementalPathNotFoundException)
            _check_time_travel(timeline, view, visible.last().timestamp)
    if len(visible):
        latest = visible.last().timestamp
    elif as_of and query_type != "incremental" and _before_active_timeline(timeline, as_of):
        latest = as_of  # time travel into the archived range: the files of archived commits up to as_of
    else:
        return _empty(schema, columns)
    spec = PartitionSpec.from_config(table.config)
    partition_values, filter_expr, filter_columns = _row_filters(table, spec, flt, schema, columns)
    window = None
    if query_type == "incremental":
        window = _IncrementalWindow.of(table, commits, visible, start, end)
        if window is None:
            return _empty(schema, columns)
        filter_expr = window.expression if filter_expr is None else (filter_expr & window.expression)
        filter_columns = sorted(set(filter_columns) | {COMMIT_TIME})
    if not as_of:
        # a latest file gone from storage would read as older data (time travel may reach cleaned slices)
        view.check_latest_files_present()
    partitions = set(prune_partitions(list(view.partitions()), spec, flt, schema))
    skipping = _data_skipping(table, query_type, as_of, metadata_enable, flt, schema)
    if skipping:  # partition_stats, then column_stats (stats_pruning)
        partitions = prune_partitions_by_stats(table, partitions, skipping, schema)
    slices = _slices_to_read(table, view, query_type, latest, partitions, window)
    if skipping:
        slices = prune_slices_by_stats(table, slices, skipping, schema)
    opts = SliceReadOptions(
        merge_config=MergeConfig.from_properties(table.config),
        columns=columns if partition_values is None else None,
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
    try:
        parts = [t for t in _read_slices(table.storage, slices, opts, partition_values) if t.num_columns]
    except HoodieIOError as exc:
        gone = re.search(r"File '([^']+)' does not exist", str(exc))
        if gone is None or not view.lists_through_metadata_table:
            raise
        # the metadata table lists what the timeline wrote; storage has lost it
        raise HoodieCorruptedDataError(
            f"{gone.group(1)} is missing: the table's metadata table lists it as a live file, and reading without it "
            "would silently return older data. Nothing was read. Put the file back (object-store versioning, a "
            "backup), or restore the table to a savepoint before the commit that wrote it, then retry.") from exc
    if not parts:
        return _empty(schema, columns)
    return _as_returned(unify_tables(parts), table, schema, columns)


def _before_active_timeline(timeline: Timeline, ts: str) -> bool:
    start = timeline.first_non_savepoint_commit()
    return start is not None and normalize_instant_time(ts) < normalize_instant_time(start)


def _check_time_travel(timeline: Timeline, view: Any, as_of: str) -> None:
    """Refuse time travel to before what the last clean kept, as Hudi's readers do
    (validateTimestampAsOf): the slices a clean removed are gone, and a read would return the
    rows that happened to survive as if they were the table. A savepointed instant itself
    stays readable: its savepoint kept every file it saw."""
    horizon = clean_horizon(timeline)
    if horizon is None or as_of in timeline.savepoints().completed().timestamps:
        return
    keep = horizon.earliest_commit_to_retain
    if not keep:  # a file-version clean records no horizon: the active timeline's first write is
        first = _completed_write_instants(timeline).first()
        keep = first.timestamp if first is not None else ""
    if keep and as_of < keep:
        raise HoodieTimelineError(
            f"Cannot time travel to {as_of}: clean {horizon.clean} removed files of instants before {keep}, so "
            f"the read would miss rows. Read as of {keep} or later; to travel further back, retain more commits "
            "(hoodie.cleaner.commits.retained) or savepoint the instants you will read.")
    lost = files_cleaned_from(timeline, view, as_of)
    if lost:
        raise HoodieTimelineError(
            f"Cannot time travel to {as_of}: a clean removed {len(lost)} file(s) a read as of then needs "
            f"(e.g. {lost[0]}), so it would miss rows. Read a later instant; to keep such instants readable, "
            "clean with KEEP_LATEST_COMMITS or savepoint them first.")


def _check_query(query_type: str | None, as_of: str | None, start: str | None, end: str | None) -> str:
    query_type = (query_type or "snapshot").strip().lower().replace("-", "_")
    if query_type not in QUERY_TYPES:
        raise HoodieConfigError(f"query_type {query_type!r} is not one of {', '.join(QUERY_TYPES)}")
    if query_type == "incremental" and as_of is not None:
        raise HoodieConfigError("as_of applies to snapshot and read_optimized queries; use end= for incremental")
    if query_type != "incremental" and (start is not None or end is not None):
        raise HoodieConfigError("start/end apply to incremental queries; pass query_type='incremental'")
    return query_type


def _refuse_hollow_window(timeline: Timeline, last: str) -> None:
    """A version-6 window ends at a commit's instant time: a write still pending at an
    earlier time (a hole) completes later with rows before the window's end, which a
    consumer that checkpoints the end never reads. Refused, as Hudi's default FAIL policy
    of hoodie.read.timeline.holes.resolution.policy does ("Found hollow commit"). Pending
    clustering plans write no new rows and do not count."""
    for inst in timeline.filter(actions=Action.COMMITS).pending().instants:
        if inst.timestamp >= last:
            return
        if inst.action == Action.REPLACE_COMMIT:
            try:
                if is_clustering_requested(timeline.read_details(inst.requested())):
                    continue
            except HoodieError:
                pass
        raise HoodieTimelineError(
            f"Found hollow commit: {inst.action} {inst.timestamp} is pending before the window's end {last}; its rows "
            "would be missed by a reader that goes on from that end. End the window before it, or read once it "
            "completed or was rolled back.")


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


def _visible_commits(timeline: Timeline, commits: Timeline, query_type: str, as_of: str | None,
                     end: str | None) -> Timeline:
    """The completed writes a query sees: up to ``as_of`` (time travel) or ``end`` (incremental;
    on Hudi 1.x tables by completion time, as Hudi's incremental reads go)."""
    if query_type == "incremental" and timeline.tracks_completion_time:
        done = timeline.completion_times()
        return commits._derive(i for i in commits if not end or done.get(i.timestamp, i.timestamp) <= end)
    cut = as_of if query_type != "incremental" else end
    return commits.as_of(cut) if cut else commits


def _row_filters(table: HoodieTable, spec: PartitionSpec, flt: list, schema: pa.Schema | None, columns: list[str] | None
                 ) -> tuple[_PartitionValues | None, ds.Expression | None, list[str]]:
    """(partition values to add back, row filter, columns it reads). Tables that drop the
    partition columns from their files filter on them after adding them back from the path."""
    partition_values = None
    row_filters = flt
    if spec.value_mappable and _truthy(table.config.get("hoodie.datasource.write.drop.partition.columns")):
        part_filters = [f for f in flt if f[0] in spec.fields]
        row_filters = [f for f in flt if f[0] not in spec.fields]
        partition_values = _PartitionValues(
            spec, schema, filters_to_expression(part_filters, schema) if part_filters else None, columns
        )
    filter_expr = filters_to_expression(row_filters, schema) if row_filters else None
    return partition_values, filter_expr, sorted({f[0] for f in row_filters})


@dataclass(frozen=True)
class _IncrementalWindow:
    """The commits of an incremental window ``(start, latest]`` and the row filter on commit time."""

    start: str | None
    in_window: Timeline
    archived: bool
    expression: ds.Expression

    @classmethod
    def of(cls, table: HoodieTable, commits: Timeline, visible: Timeline, start: str | None, end: str | None
           ) -> "_IncrementalWindow | None":
        latest = visible.last().timestamp
        archived: list[Instant] = []
        if table.timeline.tracks_completion_time:
            done = table.timeline.completion_times()
            in_window = visible._derive(i for i in visible if not start or done.get(i.timestamp, i.timestamp) > start)
            archived = _archived_commits_completed_in(table, commits, done, start, end)
            if archived:
                in_window = visible._derive(sorted([*archived, *in_window], key=lambda i: i.sort_key))
            expression = ds.field(COMMIT_TIME).isin([i.timestamp for i in in_window])
        else:
            in_window = visible.between(start, None) if start else visible
            expression = ds.field(COMMIT_TIME) <= latest
            if start:
                expression = expression & (ds.field(COMMIT_TIME) > start)
        if not len(in_window):
            return None
        return cls(start, in_window, bool(archived), expression)


def _data_skipping(table: HoodieTable, query_type: str, as_of: str | None, metadata_enable: bool, flt: list,
                   schema: pa.Schema | None) -> list:
    """The filters the metadata table's statistics can skip files by: latest snapshot and
    read-optimized reads only (the statistics describe the latest files), on a table that
    keeps them, read with the metadata table."""
    if not flt or as_of or query_type == "incremental" or not metadata_enable or not kept_stats_partitions(table):
        return []
    return typed_filters(flt, schema, _coerce)


def _slices_to_read(table: HoodieTable, view: Any, query_type: str, latest: str, partitions: set[str],
                    window: _IncrementalWindow | None) -> list[Any]:
    if query_type == "read_optimized":
        slices = [
            _BaseOnlySlice(b.partition_path, b.file_id, b)
            for b in view.latest_base_files(None, as_of=latest)
            if b.partition_path in partitions
        ]
    else:
        slices = [s for s in view.latest_merged_file_slices(None, as_of=latest) if s.partition_path in partitions]
    if window is not None and window.start and not window.archived \
            and not table.timeline.is_before_timeline_starts(window.start):
        # Only the file groups the window's commits wrote can hold its rows. When the window
        # starts before the active timeline (archived commits), Hudi falls back to a full scan
        # filtered by commit time, and so do we.
        touched = _touched_file_groups(table.timeline, window.in_window)
        if touched is not None:
            slices = [s for s in slices if (s.partition_path, s.file_id) in touched]
    return slices


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


@dataclass(frozen=True)
class _BaseOnlySlice:
    partition_path: str
    file_id: str
    base_file: Any
    log_files: tuple = ()


__all__ = ["read_table", "filters_to_expression", "prune_partitions", "PartitionSpec", "QUERY_TYPES"]
