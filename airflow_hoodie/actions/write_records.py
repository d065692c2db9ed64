"""The records of one write batch: keys and partition paths added, deduped, tagged.

A batch travels as an Arrow table with the record key, partition path and an operation
column beside the data, so indexing and bucketing work column-wise; the internal columns
named here never reach a file.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.actions.index import LOC_FILE, LOC_PART, is_global, lookup
from airflow_hoodie.errors import (
    HoodieKeyError,
)
from airflow_hoodie.table.file_group.base_file_writer import seqno_array
from airflow_hoodie.table.keygen.key_generator import KeyGenerator
from airflow_hoodie.table.keygen.partition_path_check import check_partition_paths
from airflow_hoodie.table.ordering_values import java_comparable
from airflow_hoodie.table.schema.meta_fields import (
    IS_DELETED,
    META_COLUMNS,
    PARTITION_PATH,
    RECORD_KEY,
)

OP_COL = "_hoodie_op"          # 'I' insert, 'U' update, 'D' delete
BUCKET_COL = "_hoodie_bucket"  # target bucket id
ORDER_COL = "_hoodie_ordering"
DELETE_OPS = pa.array(["D", "S"])  # D: delete operation (always wins), S: _hoodie_is_deleted
INTERNAL_COLS = (OP_COL, BUCKET_COL, ORDER_COL, "_hoodie_loc_file", "_hoodie_loc_part")

#: one ordering field, or several compared in order (a comma-separated string is a list too)
OrderingFields = Union[str, Sequence[str], None]


def ordering_field_list(fields: OrderingFields) -> list[str]:
    """The ordering fields as a list: ``"a,b"``, ``["a", "b"]`` and ``None`` all accepted."""
    if not fields:
        return []
    if isinstance(fields, str):
        return [f.strip() for f in fields.split(",") if f.strip()]
    return [f for f in fields if f]


def check_auto_keys_operation(operation: str) -> None:
    """Hudi refuses upsert and delete on tables with auto-generated keys: nothing could
    name the records to update."""
    if operation not in ("insert", "bulk_insert"):
        raise HoodieKeyError(
            f"{operation} needs record keys, but this table has none configured: its keys are generated at "
            "write time (hoodie.datasource.write.recordkey.field unset, as Hudi 0.14+ allows). Hudi refuses "
            "upsert and delete on such tables too; append with insert or bulk_insert, or write to a table "
            "created with a record key field.")


def with_auto_record_keys(records: pa.Table, instant_time: str, partition_id: int, start: int = 0) -> pa.Table:
    """Fill missing record keys Hudi's way: ``<instant>_<partition id>_<row id>``."""
    keys = records.column(RECORD_KEY)
    if keys.null_count == 0:
        return records
    made = seqno_array(instant_time, partition_id, start, records.num_rows)
    filled = pc.coalesce(keys, made)
    return records.set_column(records.schema.get_field_index(RECORD_KEY), RECORD_KEY, filled)


def check_ordering_values(data: pa.Table, ordering_fields: OrderingFields) -> None:
    """Refuse records whose ordering (precombine) value is null, in any of the ordering fields.
    Hudi builds the payload of every record it combines with that value and refuses a null one
    (BaseAvroPayload: "Ordering value is null for record"); accepted, a null made COW keep the
    newest row and MOR keep the oldest."""
    for ordering_field in ordering_field_list(ordering_fields):
        if ordering_field in data.column_names:
            _check_no_null_ordering(data, ordering_field)


def _check_no_null_ordering(data: pa.Table, ordering_field: str) -> None:
    nulls = data.column(ordering_field).null_count
    if nulls == 0:
        return
    raise HoodieKeyError(
        f"The ordering field {ordering_field!r} (hoodie.datasource.write.precombine.field) is null in "
        f"{nulls:,} of {data.num_rows:,} records; Hudi refuses a record without an ordering "
        "value, since it could not tell which version of a key is the latest. Fill the column (or choose "
        "other ordering fields: hoodie.table.ordering.fields or the precombine field); nothing was written.")


def prepare_batch(data: pa.Table, props: Mapping[str, str], operation: str,
                  ordering_field: OrderingFields = None) -> pa.Table:
    """Data plus ``_hoodie_record_key``, ``_hoodie_partition_path`` and ``_hoodie_op``.

    Existing meta columns in the input are replaced. ``_hoodie_is_deleted = true`` marks a
    soft delete ('S'); the delete operation marks every record 'D'. ``ordering_field``: the
    field(s) every record must carry a value of (see :func:`write_config.checked_ordering_field`).
    """
    data = data.drop_columns([c for c in META_COLUMNS + INTERNAL_COLS if c in data.column_names])
    if operation != "delete":
        check_ordering_values(data, ordering_field)
    kg = KeyGenerator.from_config(props)
    if kg.auto_record_keys:
        check_auto_keys_operation(operation)
        keys = pa.nulls(data.num_rows, pa.string())  # made by the file-group writer: they need the instant
    else:
        keys = kg.record_keys(data)
    parts = kg.partition_paths(data)
    check_partition_paths(parts)
    if operation == "delete":
        op = pa.repeat(pa.scalar("D", pa.string()), data.num_rows)
    elif IS_DELETED in data.column_names:
        flag = pc.fill_null(data.column(IS_DELETED).cast(pa.bool_()), False)
        op = pc.if_else(flag, "S", "U")
    else:
        op = pa.repeat(pa.scalar("U", pa.string()), data.num_rows)  # 100k rows: 0.25 ms, 4-5 ms as a list
    out = data
    out = out.append_column(RECORD_KEY, pa.chunked_array([keys]) if isinstance(keys, pa.Array) else keys)
    out = out.append_column(PARTITION_PATH, pa.chunked_array([parts]) if isinstance(parts, pa.Array) else parts)
    out = out.append_column(OP_COL, op if isinstance(op, (pa.Array, pa.ChunkedArray)) else pa.array(op))
    return out


def dedupe(batch: pa.Table, ordering_field: OrderingFields, global_index: bool) -> pa.Table:
    """Keep one record per key (per key+partition for non-global indexes): greatest ordering value,
    the later record on ties (OverwriteWithLatestAvroPayload.preCombine). Several ordering fields
    compare as a tuple, in order; none (commit-time ordering) keeps the later record."""
    if batch.num_rows <= 1:
        return batch
    # most batches repeat no key: counting distinct keys is one hash pass, where combining
    # is two sorts of the whole batch (distinct keys are distinct with their partitions too)
    if len(pc.unique(batch.column(RECORD_KEY))) == batch.num_rows:  # a null counts once, as in count_distinct
        return batch
    row = "__row"
    b = batch.append_column(row, pa.array(np.arange(batch.num_rows, dtype=np.int64)))
    group = [RECORD_KEY] if global_index else [RECORD_KEY, PARTITION_PATH]
    sort = [(g, "ascending") for g in group]
    ranks = []
    for i, field in enumerate(ordering_field_list(ordering_field)):
        if field in b.column_names:
            # ranked as Hudi's compareTo ranks them (a NaN above every number)
            values = b.column(field)
            rank = java_comparable(values)
            if rank is not values:
                ranks.append(f"__rank{i}")
                b = b.append_column(ranks[-1], rank)
                field = ranks[-1]
            sort.append((field, "descending"))
    sort.append((row, "descending"))
    b = b.sort_by(sort)
    keys = b.column(RECORD_KEY).combine_chunks()
    first = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1))
    if not global_index:
        parts = b.column(PARTITION_PATH).combine_chunks()
        first = pc.or_(first, pc.not_equal(parts.slice(1), parts.slice(0, len(parts) - 1)))
    mask = pa.concat_arrays([pa.array([True]), pc.fill_null(first, True)])
    out = b.filter(mask)
    return out.sort_by(row).drop_columns([row, *ranks])


def at_least(incoming: Sequence[pa.Array], stored: Sequence[pa.Array]) -> pa.Array:
    """Whether each incoming ordering tuple is >= the stored one, fields compared in order
    (the first decides, the next breaks its ties) as Hudi's compareTo does; an unknown
    comparison counts as true."""
    incoming = [java_comparable(v) for v in incoming]
    stored = [java_comparable(v) for v in stored]
    result = pc.fill_null(pc.greater_equal(incoming[-1], stored[-1]), True)
    for inc, old in zip(reversed(incoming[:-1]), reversed(stored[:-1])):
        tie = pc.fill_null(pc.equal(inc, old), False)
        result = pc.or_(pc.fill_null(pc.greater(inc, old), False), pc.and_(tie, result))
    return result


#: reads the stored records at given locations: (key, loc part, loc file) rows in, the same
#: columns plus the ordering fields of the record each location holds out
StoredRecords = Callable[[pa.Table], pa.Table]


def tag_records(batch: pa.Table, existing: pa.Table, index_type: str, update_partition_path: bool,
                ordering: Sequence[str] = (), stored: StoredRecords | None = None) -> pa.Table:
    """Index tagging: location columns filled; a global index with a changed partition either
    moves the record (delete in the old group + insert in the new partition) or keeps it in
    its old partition.

    ``ordering``: the fields a record must beat the stored one by (event-time ordering); with
    them, a record that would move is first merged with the stored record, read through
    ``stored``, as Hudi does (``HoodieIndexUtils.mergeForPartitionUpdatesIfNeeded``): when the
    stored record wins, the merge's result is the stored record in its own partition, so the
    record does not move. Without that, a late record with an older ordering value would
    replace a newer one and take it to another partition."""

    glob = is_global(index_type)
    tagged = lookup(batch, existing, glob)
    if not glob:
        return tagged
    moved = pc.fill_null(pc.and_(pc.is_valid(tagged.column(LOC_PART)),
                                 pc.not_equal(tagged.column(LOC_PART), tagged.column(PARTITION_PATH))), False)
    if not pc.any(moved).as_py():
        return tagged
    if update_partition_path:
        if ordering and stored is not None:
            stays = _stored_wins(tagged, moved, ordering, stored)
            if stays is not None:
                moved = pc.and_(moved, pc.invert(stays))
                tagged = tagged.set_column(tagged.column_names.index(PARTITION_PATH), PARTITION_PATH,
                                           pc.if_else(stays, tagged.column(LOC_PART), tagged.column(PARTITION_PATH)))
        old = tagged.filter(moved)
        dels = old.set_column(old.column_names.index(OP_COL), OP_COL,
                              pa.repeat(pa.scalar("D", pa.string()), old.num_rows))
        dels = dels.set_column(dels.column_names.index(PARTITION_PATH), PARTITION_PATH, dels.column(LOC_PART))
        new = tagged.filter(moved)
        new = new.set_column(new.column_names.index(LOC_FILE), LOC_FILE, pa.nulls(new.num_rows, pa.string()))
        new = new.set_column(new.column_names.index(LOC_PART), LOC_PART, pa.nulls(new.num_rows, pa.string()))
        # a moved soft-delete/delete only needs the delete in the old partition
        new = new.filter(pc.equal(new.column(OP_COL), "U"))
        return pa.concat_tables([tagged.filter(pc.invert(moved)), dels, new])
    # keep the record where it is
    return tagged.set_column(tagged.column_names.index(PARTITION_PATH), PARTITION_PATH,
                             pc.coalesce(tagged.column(LOC_PART), tagged.column(PARTITION_PATH)))


def _stored_wins(tagged: pa.Table, moved: pa.Array, ordering: Sequence[str], stored: StoredRecords
                 ) -> pa.Array | None:
    """Which of ``tagged``'s moving upserts lose to the record stored at their location (None:
    none does). Deletes move nothing either way, and a key the stored slice no longer holds
    is a new record, as in Hudi."""
    upserts = pc.and_(moved, pc.equal(tagged.column(OP_COL), "U"))
    fields = [f for f in ordering if f in tagged.column_names]
    if not fields or not pc.any(upserts).as_py():
        return None
    rows = pc.indices_nonzero(upserts)
    moving = tagged.take(rows)
    loc = [RECORD_KEY, LOC_PART, LOC_FILE]
    found = stored(moving.select(loc))
    fields = [f for f in fields if f in found.column_names]
    if not fields or not found.num_rows:
        return None
    # a key held at one location is one stored record there: the join keeps the rows 1:1
    row = "__moving_row"
    joined = moving.select(loc).append_column(row, pa.array(np.arange(moving.num_rows, dtype=np.int64))).join(
        found.select(loc + fields), keys=loc, join_type="inner")
    inc = [moving.column(f).combine_chunks().take(joined.column(row)) for f in fields]
    old = [joined.column(f).combine_chunks() for f in fields]
    old = [o.cast(i.type) if o.type != i.type else o for o, i in zip(old, inc)]
    losers = pc.filter(joined.column(row), pc.invert(at_least(inc, old))).to_numpy()
    stays = np.zeros(tagged.num_rows, dtype=np.bool_)
    stays[rows.to_numpy()[losers]] = True
    return pa.array(stays)
