"""Reading one file slice: its base file merged with its log files, as a pyarrow table.

A file slice is the unit a merge-on-read reader works on: one base file (or none, for a
file group created by log appends) and the log files written after it. The log scanner
decides which blocks count (committed, not rolled back, not corrupt, not after the
as-of instant); the record merger decides which version of each key wins. This module
only moves data between them and keeps the read as narrow as the query allows:

* a slice without log files needs no merge, so projection *and* filters go straight into
  the parquet read;
* a slice with log files is read with the columns the merge needs (record key, ordering
  field, delete markers) and filtered only after merging, because a base row that fails
  the filter may be replaced by a log row that passes it (and the other way round).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieIOError
from airflow_hoodie.table.log import log_reader
from airflow_hoodie.table.merge_config import MergeConfig
from airflow_hoodie.table.record_merger import (
    DeleteSet,
    MergeResult,
    Piece,
    merge_records_counted,
    unify_tables,
)
from airflow_hoodie.table.schema.meta_fields import IS_DELETED, META_COLUMNS, RECORD_KEY
from airflow_hoodie.table.storage.storage import Storage


@dataclass
class SliceReadOptions:
    """What a query wants from every slice it reads.

    ``columns``: columns to return (None: all). ``filter``: a pyarrow expression over the
    returned rows (its columns must be readable, they need not be returned). ``as_of``:
    the latest instant whose log blocks count. ``valid_instants``: the instant times that
    are committed (blocks of any other instant are ignored, as Hudi's scanner does).
    ``base_only``: read-optimized query, log files ignored.
    """

    merge_config: MergeConfig = field(default_factory=MergeConfig)
    columns: Sequence[str] | None = None
    filter: ds.Expression | None = None
    filter_columns: Sequence[str] = ()
    as_of: str | None = None
    valid_instants: frozenset[str] | None = None
    timeline_start: str | None = None
    inflight_instants: frozenset[str] = frozenset()
    base_only: bool = False
    schema: pa.Schema | None = None
    #: string columns a writer takes as dictionaries (a compaction's one-value meta columns):
    #: read from a base file that stores them dictionary-encoded as dictionaries and left so,
    #: its log rows encoded to match, so none is decoded, filtered as strings and hashed again
    dictionaries: Sequence[str] = ()


def _read_columns(available: Sequence[str], wanted: Sequence[str] | None) -> list[str] | None:
    if wanted is None:
        return None
    have = set(available)
    return [c for c in dict.fromkeys(wanted) if c in have]


def read_base_file(
    storage: Storage,
    path: str,
    columns: Sequence[str] | None = None,
    filter: ds.Expression | None = None,
    filter_columns: Sequence[str] = (),
    dictionaries: Sequence[str] = (),
) -> pa.Table:
    """Read a parquet base file, pushing the projection and the filter into the scan.

    Columns the file does not have (added to the table schema later) are skipped here and
    filled with nulls by the caller. A filter on such a column sees nulls (so ``=``/``<``...
    reject the row), as a reader of the evolved table would. ``dictionaries``: as
    :attr:`SliceReadOptions.dictionaries` (without a filter).
    """
    try:
        source = storage.open_input(path)
        pf = pq.ParquetFile(source)
    except FileNotFoundError as exc:
        raise HoodieIOError(
            f"base file {path} is listed by the timeline but missing on storage; the table may be "
            "being cleaned concurrently, retry the read"
        ) from exc
    except (pa.ArrowInvalid, OSError) as exc:
        raise HoodieCorruptedDataError(f"cannot read base file {path}: {exc}") from exc
    schema = pf.schema_arrow
    names = schema.names
    cols = _read_columns(names, columns)
    try:
        if filter is None:
            return _read_dense(source, pf, schema, cols, dictionaries)
        absent = [c for c in filter_columns if c not in names]
        if absent:
            table = pf.read(columns=None if cols is None else cols + [c for c in filter_columns if c in names])
            for c in absent:
                table = table.append_column(c, pa.nulls(table.num_rows))
            table = table.filter(filter)
            keep = [c for c in table.column_names if c not in absent and (cols is None or c in cols)]
            return table.select(keep)
        dataset = ds.dataset(path, format="parquet", filesystem=storage.fs)
        return dataset.to_table(columns=cols, filter=filter)
    except (pa.ArrowInvalid, OSError) as exc:
        raise HoodieCorruptedDataError(f"cannot read base file {path}: {exc}") from exc


#: a string column chunk this small per row is all dictionary indices (a chunk whose writer fell
#: back to plain pages holds the values themselves, four length bytes and more per row)
_DICTIONARY_BYTES_PER_ROW = 8


def _dictionary_columns(pf: pq.ParquetFile, schema: pa.Schema, cols: Sequence[str] | None) -> list[str]:
    """The top-level string/binary columns of ``cols`` (None: all) that every row group stores
    dictionary-encoded."""
    md = pf.metadata
    if not md.num_row_groups or not md.num_rows:
        return []
    leaves = {md.schema.column(j).path: j for j in range(md.num_columns)}
    out = []
    for name in cols if cols is not None else schema.names:
        idx = schema.get_field_index(name)  # -1 for a name two columns share
        j = leaves.get(name)
        if idx < 0 or j is None or "." in name:
            continue
        typ = schema.field(idx).type
        if not (pa.types.is_string(typ) or pa.types.is_binary(typ)
                                            or pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)):
            continue
        chunks = [md.row_group(r).column(j) for r in range(md.num_row_groups)]
        if all(c.has_dictionary_page for c in chunks) and \
                sum(c.total_uncompressed_size for c in chunks) <= _DICTIONARY_BYTES_PER_ROW * md.num_rows:
            out.append(name)
    return out


def _read_dense(source: Any, pf: pq.ParquetFile, schema: pa.Schema, cols: Sequence[str] | None,
                keep: Sequence[str] = ()) -> pa.Table:
    """``pf.read(columns=cols)``, with dictionary-encoded string columns read as dictionaries
    and decoded after. The same table, in about half the time for those columns: pyarrow
    decodes a dictionary page into dense strings value by value (7 ms for a 123k-row
    ``_hoodie_file_name`` column of one value), while reading the indices and taking from the
    dictionary costs 2 ms. Meta columns such as ``_hoodie_commit_time``,
    ``_hoodie_partition_path`` and ``_hoodie_file_name`` hold a handful of values per file.
    Those in ``keep`` stay dictionaries."""
    wanted = _dictionary_columns(pf, schema, cols)
    if not wanted:
        return pf.read(columns=cols)
    table = pq.ParquetFile(source, metadata=pf.metadata, read_dictionary=wanted).read(columns=cols)
    for name in wanted:
        if name in keep:
            continue
        i = table.schema.get_field_index(name)
        field = schema.field(name)
        table = table.set_column(i, field, table.column(i).cast(field.type))
    return table


def scan_log_pieces(
    storage: Storage,
    log_paths: Sequence[str],
    as_of: str | None,
    valid_instants: Iterable[str] | None,
    timeline_start: str | None = None,
    inflight_instants: Iterable[str] = (),
    keyed: bool = False,
    columns: Sequence[str] | None = None,
    recorded_sizes: Mapping[str, int] | None = None,
) -> list[Piece]:
    """The data tables and delete sets of a slice's log files, in the order they were written.

    ``keyed``: the slice's records carry ``_hoodie_record_key`` (its base file does), so a
    data block without it has a corrupt SCHEMA header. ``columns``: the columns data blocks
    are decoded with (None: all). ``recorded_sizes``: path -> the size the file listing gave
    (the metadata table's record, when it listed); a log now smaller lost committed blocks,
    and the scan's warning says so (a damaged block is skipped as Hudi does, never silently).

    Block validity (committed instants, rollback command blocks, corrupt blocks, the as-of
    cut) is the log scanner's job (:func:`airflow_hoodie.table.log.log_reader.scan_log_files`);
    this keeps its interleaving of data and delete blocks, which the merge needs.
    """
    if not log_paths:
        return []

    result = log_reader.scan_log_files(
        storage,
        list(log_paths),
        as_of,
        valid_instants if valid_instants is not None else (),
        timeline_start=timeline_start,
        inflight_instants=inflight_instants,
        columns=columns,
        recorded_sizes=recorded_sizes,
    )
    pieces: list[Piece] = []
    for block in result.blocks:
        if block.is_delete:
            if block.deletes:
                pieces.append(DeleteSet.from_records(block.deletes))
        elif block.table is not None and block.table.num_rows:
            _check_record_key(block, keyed, columns)
            pieces.append(block.table)
    return pieces


def _check_record_key(block: Any, keyed: bool, columns: Sequence[str] | None = None) -> None:
    """Hudi writes all five meta columns or none: a data block missing some of them while it
    (or the slice's base file) has others was decoded with a damaged SCHEMA header. Of a
    block decoded with ``columns``, the meta columns among them are checked."""
    assert block.table is not None
    names = block.table.column_names
    expected = [c for c in META_COLUMNS if columns is None or c in columns]
    missing = [c for c in expected if c not in names]
    if not missing or not (keyed or len(missing) < len(expected)):
        return
    raise HoodieCorruptedDataError(
        f"{block.log_path}: the data block at byte {block.block.offset} (instant {block.instant_time}) has no "
        f"{', '.join(missing)} column; its SCHEMA header is corrupt (columns: {', '.join(names[:8])}"
        f"{' ...' if len(names) > 8 else ''}), so its records cannot be merged. Nothing was read. Put the log "
        f"file back from a backup, or restore the table to a savepoint before {block.instant_time}.")


def _narrows_floats(source: pa.DataType, target: pa.DataType) -> bool:
    return pa.types.is_floating(source) and pa.types.is_floating(target) and target.bit_width < source.bit_width


def _conform(table: pa.Table, schema: pa.Schema | None) -> pa.Table:
    """Cast a log block's columns to the base file's types where they differ only in width
    (Avro has no int8/int16, so Spark's byte/short columns come back as int32; a value that
    does not fit refuses the cast and keeps its type). A float column the table widened to
    double keeps the log's doubles: casting them to the older base file's floats rounded the
    update (0.1 read as 0.10000000149), and a compaction wrote the rounded value for good."""
    if schema is None:
        return table
    cols = []
    for name, col in zip(table.column_names, table.columns):
        idx = schema.get_field_index(name)
        if idx >= 0 and schema.field(idx).type != col.type and not _narrows_floats(col.type, schema.field(idx).type):
            try:
                col = col.cast(schema.field(idx).type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                pass
        cols.append(col)
    return pa.table(cols, names=table.column_names)


def _finish(table: pa.Table, opts: SliceReadOptions, filtered: bool) -> pa.Table:
    if opts.filter is not None and not filtered and table.num_rows:
        table = table.filter(opts.filter)
    if opts.columns is not None:
        table = table.select([c for c in opts.columns if c in table.column_names])
    return table


def read_file_slice(storage: Storage, file_slice: Any, opts: SliceReadOptions | None = None) -> pa.Table:
    """Rows of one file slice as a reader sees them (merged, filtered, projected).

    ``file_slice`` is a :class:`airflow_hoodie.table.file_group.file_group.FileSlice` (anything with
    ``base_file`` (``.path``) and ``log_files`` (each ``.path``), in log order).
    """
    return read_file_slice_counted(storage, file_slice, opts, counted=False).table


@dataclass(frozen=True)
class SliceRead:
    """A slice's rows, and what a compaction reports about them against the base file."""

    table: pa.Table
    #: rows of the base file (0 without one)
    base_rows: int
    #: rows of ``table`` whose record key is one of the base file's (updated or kept as they were)
    base_keys_kept: int
    #: the keys of ``table`` the base file did not have (None: not known, the slice has no base file)
    new_keys: pa.Array | None = None
    #: the base file's footer key-values (its bloom filter among them), None without one
    base_footer: dict[bytes, bytes] | None = None
    #: records read from the slice's valid log blocks, deletes included (Hudi's totalLogRecords)
    log_records: int = 0
    #: distinct record keys among them (Hudi's numMergedRecordsInLog: totalUpdatedRecordsCompacted)
    log_keys: int = 0


def _log_counts(pieces: Sequence[Piece]) -> tuple[int, int]:
    """(records, distinct keys) of a slice's log pieces, which a compaction reports."""
    keys = [p.column(RECORD_KEY) if isinstance(p, pa.Table) else p.keys for p in pieces
            if not isinstance(p, pa.Table) or RECORD_KEY in p.column_names]
    records = sum(p.num_rows if isinstance(p, pa.Table) else len(p.keys) for p in pieces)
    if not keys:
        return records, 0
    # the keys' chunks, not the arrays: pa.chunked_array converts a ChunkedArray given as a
    # chunk value by value (13 ms for 30k keys); a unique's length is half a count_distinct's cost
    chunks = [c for k in keys for c in (k.cast(pa.string()).chunks if isinstance(k, pa.ChunkedArray)
                                        else [k.cast(pa.string())])]
    distinct = pc.unique(pa.chunked_array(chunks, pa.string()))
    return records, len(distinct) - distinct.null_count


def _merged_log_counts(pieces: Sequence[Piece], merged: MergeResult, cfg: MergeConfig) -> tuple[int, int]:
    """:func:`_log_counts`, the distinct keys as the merge ranked them (unless it derived the
    keys from key fields, where the pieces' own key columns are what Hudi counts)."""
    if merged.log_keys is None or cfg.virtual_key_props is not None:
        return _log_counts(pieces)
    return sum(p.num_rows if isinstance(p, pa.Table) else len(p.keys) for p in pieces), merged.log_keys


def read_file_slice_counted(storage: Storage, file_slice: Any, opts: SliceReadOptions | None = None,
                            counted: bool = True) -> SliceRead:
    """:func:`read_file_slice`, with the counts of base-file keys. They come from the merge,
    which knows which base keys the logs touched: a compaction needs no second hash of all
    its keys against the base file's. With a filter and no log files, the counts are those
    of the filtered rows. ``counted=False`` (readers): a merged slice's counts are left out
    (0, no new keys)."""
    opts = opts or SliceReadOptions()
    base = getattr(file_slice, "base_file", None)
    logs = [] if opts.base_only else list(getattr(file_slice, "log_files", None) or [])
    cfg = opts.merge_config

    if not logs:
        if base is None:
            return SliceRead(pa.table({}), 0, 0)
        wanted = None
        if opts.columns is not None:
            wanted = list(opts.columns) + list(opts.filter_columns)
        table = read_base_file(storage, base.path, wanted, opts.filter, opts.filter_columns)
        return SliceRead(_finish(table, opts, filtered=True), table.num_rows, table.num_rows,
                         pa.array([], pa.string()), table.schema.metadata)

    wanted = None
    if opts.columns is not None:
        extra = [RECORD_KEY, IS_DELETED]
        extra.extend(cfg.ordering_fields)
        if cfg.delete_field:
            extra.append(cfg.delete_field)
        wanted = list(opts.columns) + list(opts.filter_columns) + extra
    pieces: list[Piece] = []
    base_schema = opts.schema
    base_rows = 0
    footer = None
    if base is not None:
        base_table = read_base_file(storage, base.path, wanted, dictionaries=opts.dictionaries)
        base_schema = base_table.schema
        base_rows = base_table.num_rows
        footer = base_schema.metadata
        pieces.append(base_table)
    log_pieces = scan_log_pieces(
        storage,
        [lf.path for lf in logs],
        opts.as_of,
        opts.valid_instants,
        opts.timeline_start,
        opts.inflight_instants,
        keyed=base_schema is not None and RECORD_KEY in base_schema.names,
        columns=wanted,
        recorded_sizes={lf.path: int(getattr(lf, "size", 0) or 0) for lf in logs},
    )
    for piece in log_pieces:
        if isinstance(piece, pa.Table):
            if wanted is not None:
                piece = piece.select(_read_columns(piece.column_names, wanted) or [])
            piece = _conform(piece, base_schema)
        pieces.append(piece)
    data_pieces = [p for p in pieces if isinstance(p, pa.Table)]
    if not data_pieces:
        log_records, log_keys = _log_counts(log_pieces) if counted else (0, 0)
        return SliceRead(pa.table({}), base_rows, 0, None, footer, log_records, log_keys)
    merged = merge_records_counted(pieces, cfg, has_base=base is not None, counted=counted)
    log_records, log_keys = _merged_log_counts(log_pieces, merged, cfg) if counted else (0, 0)
    return SliceRead(_finish(merged.table, opts, filtered=False), base_rows, merged.base_keys_kept,
                     merged.new_keys, footer, log_records, log_keys)


__all__ = ["META_COLUMNS", "SliceReadOptions", "read_base_file", "SliceRead", "read_file_slice", "read_file_slice_counted", "scan_log_pieces", "unify_tables"]
