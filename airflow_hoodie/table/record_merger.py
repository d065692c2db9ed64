"""Merging the versions of a record (base file row, log records, deletes) into the one a reader sees.

A merge-on-read file slice holds several versions of the same record key: the row in the
base file, rows in log data blocks, entries of delete blocks. Which one wins depends on the
table's merge semantics, which Hudi 0.14/0.15 (table version 6) derives from the payload
class in ``hoodie.properties`` (1.x tables, versions 8 and 9, also write
``hoodie.record.merge.mode``; :mod:`merge_config` reads them once per table):

* **event-time ordering** (``DefaultHoodieRecordPayload``, ``EventTimeAvroPayload``, merge
  mode ``EVENT_TIME_ORDERING``): the version with the greatest ordering (precombine) value
  wins; on equal ordering values the later one wins. Several ordering fields
  (``hoodie.table.ordering.fields``, or a precombine field list) compare as a tuple, in order:
  the first decides, the next breaks its ties.
* **commit-time ordering** (``OverwriteWithLatestAvroPayload``, Hudi's default for version 6,
  merge mode ``COMMIT_TIME_ORDERING``): the later version wins. One Hudi 0.x subtlety is kept:
  with a payload class (no explicit merge mode) and a precombine field, the log scanner
  pre-combines the *log* records of a slice by ordering value (``preCombine``); only the
  merged log record then overwrites the base file's row (``combineAndGetUpdateValue``).

Deletes follow Hudi's log scanner: a delete carrying an ordering value competes like a
record (a delete older in event time than the stored record is stale and loses); a delete
without one (``null`` or the ``0`` Hudi writes for "natural order") removes every earlier
version of its key. Rows with ``_hoodie_is_deleted = true`` (or the configured
``hoodie.payload.delete.field``/``marker``) are deletes that win or lose like records.

"Later" is the position in the slice: base file rows first, then log blocks in the order the
log scanner returns them, then the rows of a block in order. The merge is done with
pyarrow kernels (one sort over key, ordering value and position, then "last row per key"),
never with a Python loop over records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieConfigError, HoodieCorruptedDataError
from airflow_hoodie.table.merge_config import MergeConfig, MergeMode
from airflow_hoodie.table.ordering_values import java_comparable
from airflow_hoodie.table.schema.meta_fields import (
    IS_DELETED,
    RECORD_KEY,
)


# Column names used internally by the merge; chosen not to clash with user columns.
_KEY = "__hoodie_merge_key"
_ORDER = "__hoodie_merge_order"  # + the ordering field's position: one column per ordering field
_SEQ = "__hoodie_merge_seq"
_DEL = "__hoodie_merge_is_delete"
_SRC = "__hoodie_merge_src"


@dataclass(frozen=True)
class DeleteSet:
    """The keys one delete block removes.

    ``keys`` is a string array of record keys; ``ordering_values`` holds each delete's ordering
    value as Hudi stored it (null, or 0, means "natural order": the delete beats every earlier
    version of its key).
    """

    keys: pa.Array
    ordering_values: pa.Array | None = None

    @classmethod
    def from_records(cls, records: Sequence[Any]) -> "DeleteSet":
        """Build from ``DeleteRecord``-like objects (``record_key``, ``ordering_value``).

        This is the one place that touches deletes one by one: a delete block's records are
        decoded from Avro into Python objects anyway.
        """
        keys = pa.array([r.record_key for r in records], pa.string())
        values = [getattr(r, "ordering_value", None) for r in records]
        return cls(keys, _ordering_array(values))

    def __len__(self) -> int:
        return len(self.keys)


Piece = Union[pa.Table, DeleteSet]


def _ordering_array(values: list[Any]) -> pa.Array:
    """Ordering values of deletes, with Java's "natural order" ``0`` turned into null."""
    cleaned = [None if (v is None or (isinstance(v, int) and not isinstance(v, bool) and v == 0)) else v for v in values]
    try:
        return pa.array(cleaned)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else str(v) for v in cleaned], pa.string())


def _arange(start: int, stop: int) -> pa.Array:
    return pa.array(np.arange(start, stop, dtype=np.int64))


def _const(value: bool, n: int) -> pa.Array:
    return pa.array(np.full(n, value, dtype=np.bool_))


def _natural_mask(values: pa.Array) -> pa.Array:
    """Deletes that carry no ordering: null, or Java's ``0`` placeholder for "natural order"."""
    if pa.types.is_integer(values.type):
        return pc.fill_null(pc.equal(values, 0), True)
    return pc.is_null(values)


def _is_delete_mask(table: pa.Table, config: MergeConfig) -> pa.Array:
    """Which data rows are deletes: ``_hoodie_is_deleted`` or the configured delete marker."""
    mask = _const(False, table.num_rows)
    names = set(table.column_names)
    if IS_DELETED in names:
        col = table.column(IS_DELETED)
        if not pa.types.is_boolean(col.type):
            col = pc.equal(pc.utf8_lower(pc.cast(col, pa.string())), "true")
        mask = pc.or_(mask, pc.fill_null(col, False))
    if config.delete_field and config.delete_marker is not None and config.delete_field in names:
        col = pc.cast(table.column(config.delete_field), pa.string())
        mask = pc.or_(mask, pc.fill_null(pc.equal(col, config.delete_marker), False))
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return mask


def _ordering_type(tables: Sequence[pa.Table], field: str) -> pa.DataType | None:
    for t in tables:
        if field in t.column_names:
            return t.schema.field(field).type
    return None


def _cast_ordering(values: pa.Array | pa.ChunkedArray, typ: pa.DataType) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.type == typ:
        return values
    if pa.types.is_null(values.type):
        return pa.nulls(len(values), typ)
    try:
        return pc.cast(values, typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return pc.cast(pc.cast(values, pa.string()), typ)


def unify_tables(tables: Sequence[pa.Table]) -> pa.Table:
    """Concatenate tables whose schemas differ only as Hudi allows (added/reordered nullable columns,
    widened types), in the column order of the first table."""
    tables = [t for t in tables]
    if not tables:
        return pa.table({})
    if len(tables) == 1:
        return tables[0]
    first = tables[0].schema
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        pass
    # cast every table to the first table's type for shared columns, then promote
    fixed = []
    for t in tables:
        cols, names = [], []
        for name in t.column_names:
            col = t.column(name)
            idx = first.get_field_index(name)
            if idx >= 0 and first.field(idx).type != col.type:
                col = col.cast(first.field(idx).type)
            cols.append(col)
            names.append(name)
        fixed.append(pa.table(cols, names=names))
    return pa.concat_tables(fixed, promote_options="permissive")


def _sort_indices(table: pa.Table, sort_keys: list[tuple]) -> pa.Array:
    """Sort with per-key null placement where pyarrow supports it (>= 20), else globally."""
    try:
        return pc.sort_indices(table, options=pc.SortOptions(sort_keys=sort_keys))
    except (TypeError, ValueError, pa.ArrowInvalid):
        plain = [(k[0], k[1]) for k in sort_keys]
        return pc.sort_indices(table, sort_keys=plain, null_placement="at_start")


def _order_columns(table: pa.Table) -> list[str]:
    """The candidate table's ordering columns, first ordering field first."""
    return sorted((c for c in table.column_names if c.startswith(_ORDER)), key=lambda c: int(c[len(_ORDER):]))


def _rank(cand: pa.Table, natural: pa.Array, use_ordering: bool) -> pa.Table:
    """The winning candidate per key (which may be a delete)."""
    if use_ordering and cand.num_rows and pc.any(natural).as_py():
        # A delete without ordering value wipes out every earlier version of its key.
        names = cand.column_names
        cutoffs = (
            cand.filter(natural)
            .group_by(_KEY)
            .aggregate([(_SEQ, "max")])
            .rename_columns({f"{_SEQ}_max": "__cut"})
        )
        joined = cand.append_column("__natural", natural).join(cutoffs, _KEY, join_type="left outer")
        cut = pc.fill_null(joined.column("__cut"), -1)
        seq = joined.column(_SEQ)
        keep = pc.or_(
            pc.greater(seq, cut),
            pc.and_(pc.equal(seq, cut), joined.column("__natural")),
        )
        # survivors: the natural delete itself (null ordering, so any later version outranks it)
        # and the versions written after it
        cand = joined.filter(keep).select(names)

    # nulls first: a version with no ordering value is the oldest in event time
    sort_keys: list[tuple] = [(_KEY, "ascending")]
    if use_ordering:
        # the ordering fields compare as a tuple: each one only breaks the ties of those before
        # it, as Hudi's compareTo orders them (a NaN above every number)
        for c in _order_columns(cand):
            values = cand.column(c)
            rank = java_comparable(values)
            if rank is not values:
                cand = cand.set_column(cand.column_names.index(c), c, rank)
        sort_keys += [(c, "ascending", "at_start") for c in _order_columns(cand)]
    sort_keys.append((_SEQ, "ascending"))
    cand = cand.take(_sort_indices(cand, sort_keys))
    keys = cand.column(_KEY)
    n = cand.num_rows
    if n > 1:
        last = pc.not_equal(keys.slice(0, n - 1), keys.slice(1))
        last = pa.concat_arrays([c for c in pa.chunked_array(last).chunks] + [pa.array([True])])
    else:
        last = _const(True, n)
    return cand.filter(last)


def _with_virtual_keys(pieces: Sequence[Piece], props: Mapping[str, str]) -> list[Piece]:
    """Give every data piece its record keys from the key generator, as Hudi's merged log
    scanner does for tables written with ``hoodie.populate.meta.fields=false``."""
    from airflow_hoodie.table.keygen.key_generator import KeyGenerator  # noqa: PLC0415 - keygen imports schema

    kg = KeyGenerator.from_config(props)
    if kg.auto_record_keys:
        raise HoodieConfigError(
            "this MERGE_ON_READ table has neither meta fields (hoodie.populate.meta.fields=false) nor "
            "hoodie.table.recordkey.fields: its records cannot be matched across base and log files.")
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, pa.Table) and piece.num_rows:
            keys = kg.record_keys(piece)
            if RECORD_KEY in piece.column_names:
                piece = piece.set_column(piece.schema.get_field_index(RECORD_KEY), RECORD_KEY, keys)
            else:
                piece = piece.append_column(RECORD_KEY, keys)
        out.append(piece)
    return out


@dataclass(frozen=True)
class MergeResult:
    """The visible rows of a merge, and how many of them carry a key of the base file.

    A compaction reports updates and deletes against the base file; the merge already
    knows which base keys the logs touched, so it counts them instead of the caller
    hashing every output key against every base key again (a third of a compaction's
    merge time)."""

    table: pa.Table
    base_keys_kept: int
    #: keys of the rows whose key the base file did not have (None without a base file)
    new_keys: pa.Array | None = None
    #: distinct record keys among the log pieces' records and deletes (the merge ranks one
    #: candidate per key: a compaction's count needs no hash of them of its own); None: not known
    log_keys: int | None = None


def merge_records(pieces: Sequence[Piece], config: MergeConfig, has_base: bool = False) -> pa.Table:
    """Merge the versions of each record key in ``pieces`` (in slice order) into the visible rows.

    ``pieces`` are data tables (each with ``_hoodie_record_key``) and :class:`DeleteSet`s, in
    the order they were written: base file first (say so with ``has_base``), then log blocks.
    Returns the surviving data rows (one per key, deletes removed), in the column layout of
    the concatenated data tables and in slice order (base rows first, then new keys in log
    order).

    With commit-time ordering and an ordering field (``OverwriteWithLatestAvroPayload`` on a
    version-6 table), Hudi's log scanner still pre-combines log records by ordering value
    (``preCombine``) and only the base-versus-log step is "latest wins"
    (``combineAndGetUpdateValue``); ``has_base`` says the first piece is that base file.
    """
    return merge_records_counted(pieces, config, has_base, counted=False).table


def merge_records_counted(pieces: Sequence[Piece], config: MergeConfig, has_base: bool = False,
                          counted: bool = True) -> MergeResult:
    """:func:`merge_records`, with the number of output rows whose key is in the base file.

    ``counted=False``: the rows only (``base_keys_kept`` 0, ``new_keys`` None), for readers,
    which need neither: the counts cost about a tenth of a read's merge."""
    if config.virtual_key_props is not None:
        pieces = _with_virtual_keys(pieces, dict(config.virtual_key_props))
    data_tables = [p for p in pieces if isinstance(p, pa.Table)]
    if not data_tables:
        return MergeResult(pa.table({}), 0)
    data = unify_tables(data_tables)
    if RECORD_KEY not in data.column_names:
        raise HoodieConfigError(
            "cannot merge records without the _hoodie_record_key meta column and without the table's "
            "key generator settings (hoodie.populate.meta.fields=false needs hoodie.table.recordkey.fields)"
        )
    has_ordering = config.ordering_field is not None and config.ordering_field in data.column_names
    use_ordering = config.uses_ordering and has_ordering
    # Hudi 0.x commit-time ordering with an ordering field: logs pre-combined by ordering
    # value, the result replaces the base row
    two_step = config.mode is MergeMode.COMMIT_TIME_ORDERING and config.log_precombine and has_ordering
    order_types = ([_ordering_type(data_tables, f) or pa.null() for f in config.ordering_fields]
                   if (use_ordering or two_step) else None)
    base_rows = pieces[0].num_rows if has_base and isinstance(pieces[0], pa.Table) else 0
    if base_rows:
        return _merge_over_base(data, pieces, config, order_types, use_ordering, two_step, counted)
    cand, natural = _candidates(pieces, config, order_types)
    if cand is None:
        return MergeResult(data.slice(0, 0), 0)
    ranked = _rank(cand, natural, use_ordering or two_step)
    winners = ranked.filter(pc.invert(ranked.column(_DEL)))
    src = pc.sort_indices(winners, sort_keys=[(_SEQ, "ascending")])
    src = winners.column(_SRC).take(src)
    return MergeResult(data.take(src), 0, log_keys=ranked.num_rows)


def _parts(order_types: list[pa.DataType] | None) -> dict[str, list[pa.Array]]:
    """The candidate columns, empty, in the one order every candidate table has."""
    parts: dict[str, list[pa.Array]] = {_KEY: [], _SEQ: [], _DEL: [], _SRC: []}
    parts.update({f"{_ORDER}{i}": [] for i in range(len(order_types or ()))})
    return parts


def _candidates(pieces: Sequence[Piece], config: MergeConfig, order_types: list[pa.DataType] | None,
                seq_start: int = 0, data_start: int = 0) -> tuple[pa.Table | None, pa.Array | None]:
    """One candidate row per data row and per delete, in write order: its key, global
    position, whether it deletes, its row in the concatenated data, its ordering value; and
    whether each candidate is in natural (commit-time) order. (None, None) when empty.
    ``seq_start``/``data_start``: the position and data row of the first piece (pieces
    before it are merged apart, as a base file is)."""
    parts = _parts(order_types)
    natural_parts: list[pa.Array] = []
    position, data_offset = seq_start, data_start
    for piece in pieces:
        n = piece.num_rows if isinstance(piece, pa.Table) else len(piece)
        if n == 0:
            continue
        if isinstance(piece, pa.Table):
            _data_candidates(piece, config, order_types, _arange(data_offset, data_offset + n), parts,
                             natural_parts)
            data_offset += n
        else:
            _delete_candidates(piece, order_types, parts, natural_parts)
        parts[_SEQ].append(_arange(position, position + n))
        position += n
    if not parts[_KEY]:
        return None, None
    columns = {name: pa.concat_arrays(arrays) for name, arrays in parts.items() if arrays}
    return pa.table(columns), pa.concat_arrays(natural_parts)


def _data_rows_candidates(rows: pa.Table, config: MergeConfig, order_types: list[pa.DataType] | None,
                          positions: pa.Array) -> pa.Table:
    """Candidates for some rows of the base file, each at its own row number ``positions``
    (its place in the slice, and its row in the data)."""
    parts = _parts(order_types)
    _data_candidates(rows, config, order_types, positions, parts, [])
    parts[_SEQ].append(positions)
    return pa.table({name: pa.concat_arrays(arrays) for name, arrays in parts.items() if arrays})


def _candidate_columns(table: pa.Table, config: MergeConfig) -> list[str]:
    """The columns of ``table`` that :func:`_data_candidates` reads: key, delete flags, ordering."""
    wanted = {RECORD_KEY, IS_DELETED, *config.ordering_fields}
    if config.delete_field:
        wanted.add(config.delete_field)
    return [name for name in table.column_names if name in wanted]


def _data_candidates(piece: pa.Table, config: MergeConfig, order_types: list[pa.DataType] | None, rows: pa.Array,
                     parts: dict[str, list[pa.Array]], natural_parts: list[pa.Array]) -> None:
    """``rows``: each row's row number in the concatenated data."""
    n = piece.num_rows
    if RECORD_KEY not in piece.column_names:
        raise HoodieCorruptedDataError(
            f"a log data block of this file slice has no {RECORD_KEY} column while the others do: "
            "its SCHEMA header is corrupt. Put the log file back from a backup, or restore the table to "
            "a savepoint before the instant that wrote it.")
    parts[_KEY].append(pc.cast(piece.column(RECORD_KEY), pa.string()).combine_chunks())
    parts[_DEL].append(_is_delete_mask(piece, config))
    natural_parts.append(_const(False, n))
    parts[_SRC].append(rows)
    for i, (field, typ) in enumerate(zip(config.ordering_fields, order_types or ())):
        if field in piece.column_names:
            parts[f"{_ORDER}{i}"].append(_cast_ordering(piece.column(field), typ))
        else:
            parts[f"{_ORDER}{i}"].append(pa.nulls(n, typ))


def _delete_candidates(piece: DeleteSet, order_types: list[pa.DataType] | None,
                       parts: dict[str, list[pa.Array]], natural_parts: list[pa.Array]) -> None:
    n = len(piece)
    parts[_KEY].append(pc.cast(piece.keys, pa.string()))
    parts[_DEL].append(_const(True, n))
    parts[_SRC].append(pa.nulls(n, pa.int64()))
    values = piece.ordering_values if piece.ordering_values is not None else pa.nulls(n)
    if not order_types:
        natural_parts.append(_const(True, n))
        return
    mask = _natural_mask(values)
    natural_parts.append(mask)
    # a natural-order delete has no place in event time: rank it below everything. A delete
    # block keeps one ordering value, the first field's; the fields after it stay null.
    first = order_types[0]
    parts[f"{_ORDER}0"].append(pc.if_else(mask, pa.scalar(None, first), _cast_ordering(values, first)))
    for i, typ in enumerate(order_types[1:], start=1):
        parts[f"{_ORDER}{i}"].append(pa.nulls(n, typ))


def _merge_over_base(data: pa.Table, pieces: Sequence[Piece], config: MergeConfig,
                     order_types: list[pa.DataType] | None, use_ordering: bool, two_step: bool,
                     counted: bool = True) -> MergeResult:
    """The merge of a slice with a base file. Base file keys are unique, and usually few of
    them are touched by the logs: only those (and the log records) are ranked. Every other
    base row wins as it is and is kept by a filter of the base rows in place, so the bulk
    of the slice is never sorted, gathered or hashed beyond one membership test."""
    base = pieces[0]
    assert isinstance(base, pa.Table)
    base_rows = base.num_rows
    log_cand, log_natural = _candidates(pieces[1:], config, order_types, seq_start=base_rows,
                                        data_start=base_rows)
    base_deleted = _is_delete_mask(base, config)
    if log_cand is None:
        keep = pc.invert(base_deleted)
        return MergeResult(data.slice(0, base_rows).filter(keep), pc.sum(keep).as_py() or 0, pa.array([], pa.string()))
    assert log_natural is not None
    base_keys = base.column(RECORD_KEY)
    if base_keys.type != pa.string():
        base_keys = pc.cast(base_keys, pa.string())
    # is_in builds its own hash set of the value set (duplicates fold there): a pc.unique
    # first would hash the log keys twice
    touched = pc.is_in(base_keys, value_set=log_cand.column(_KEY))
    if isinstance(touched, pa.ChunkedArray):
        touched = touched.combine_chunks()
    touched_rows = pc.cast(pc.indices_nonzero(touched), pa.int64())
    if two_step:
        contested = _rank(log_cand, log_natural, use_ordering=True)
    else:
        # only the columns a candidate is built from: the touched rows' other columns are
        # never ranked, and a base row that wins is kept from the base file in place
        contested_base = _data_rows_candidates(base.select(_candidate_columns(base, config)).take(touched_rows),
                                               config, order_types, touched_rows)
        contested = _rank(
            pa.concat_tables([contested_base, log_cand]),
            pa.concat_arrays([_const(False, contested_base.num_rows), log_natural]),
            use_ordering,
        )
    live = contested.filter(pc.invert(contested.column(_DEL)))
    # base rows that stay: the untouched ones that are not deletes, and the touched ones whose
    # base version won; in base order, as the slice holds them
    keep = pc.and_(pc.invert(touched), pc.invert(base_deleted))
    from_base = pc.less(live.column(_SEQ), base_rows)
    base_won = live.filter(from_base).column(_SEQ)
    if len(base_won):
        marks = np.zeros(base_rows, dtype=np.bool_)
        marks[base_won.to_numpy()] = True
        keep = pc.or_(keep, pa.array(marks))
    log_won = live.filter(pc.invert(from_base))
    log_won = log_won.take(pc.sort_indices(log_won, sort_keys=[(_SEQ, "ascending")]))
    logs = data.slice(base_rows)
    if logs.num_rows and len(log_won) == logs.num_rows:
        # every log row wins, each under its own key: the log rows in log order, as they are
        # (in one chunk, as a take returns them: a file's pages follow its chunks)
        from_logs = logs.combine_chunks()
    else:
        from_logs = logs.take(pc.subtract(log_won.column(_SRC), base_rows))
    merged = pa.concat_tables([data.slice(0, base_rows).filter(keep), from_logs])
    if not counted:
        return MergeResult(merged, 0, log_keys=contested.num_rows)
    return _counted(merged, base_keys, touched, touched_rows, base_deleted, contested, base_won, log_won)


def _counted(merged: pa.Table, base_keys: pa.Array | pa.ChunkedArray, touched: pa.Array, touched_rows: pa.Array,
             base_deleted: pa.Array, contested: pa.Table, base_won: pa.Array | pa.ChunkedArray,
             log_won: pa.Table) -> MergeResult:
    """:func:`_merge_over_base`'s result with its counts, from what the merge already computed
    (which base keys the logs touched, which candidates won): no key is hashed again."""
    # output keys from the base file: the untouched live rows, and every touched key whose
    # winner is not a delete
    touched_count = len(touched_rows)
    touched_keys = base_keys.take(touched_rows)
    deleted = contested.filter(contested.column(_DEL)).column(_KEY)
    deleted_base = 0
    if touched_count and len(deleted):
        deleted_base = pc.sum(pc.is_in(deleted, value_set=touched_keys)).as_py() or 0
    untouched_live = pc.sum(pc.and_(pc.invert(touched), pc.invert(base_deleted))).as_py() or 0
    log_keys = log_won.column(_KEY)
    # every touched base key has one winner: its base row, a delete or a log row; the log
    # rows left over carry new keys. All log winners updates (a compaction of updates): no
    # second hash of their keys (2 ms per 30k)
    log_won_base_keys = touched_count - len(base_won) - deleted_base
    if log_won_base_keys == len(log_keys):
        new_keys = log_keys.slice(0, 0)
    elif touched_count:
        new_keys = log_keys.filter(pc.invert(pc.is_in(log_keys, value_set=touched_keys)))
    else:
        new_keys = log_keys
    # every key the logs hold has one ranked candidate (a touched base key is one of them)
    return MergeResult(merged, untouched_live + touched_count - deleted_base, new_keys.combine_chunks(),
                       contested.num_rows)


def merge_config_from_table(table_config: Mapping[str, str]) -> MergeConfig:
    """Convenience for callers holding a ``TableConfig`` (a mapping of ``hoodie.properties``)."""
    return MergeConfig.from_properties(table_config)
