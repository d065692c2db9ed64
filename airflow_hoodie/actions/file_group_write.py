"""The write handle of one file group: the work of one Spark task.

Runs on an executor (or in-process) over the Arrow rows routed to one bucket: a COW
merge into a new base file version, a new base file for inserts, or a MOR append of an
Avro data block and a delete block to the slice's log. Nothing here touches the timeline.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_hoodie.actions.cdc_write import merge_changes, write_cdc_log
from airflow_hoodie.actions.index import LOC_FILE
from airflow_hoodie.actions.schema_evolution import align_to_schema
from airflow_hoodie.actions.write_records import (
    DELETE_OPS,
    OP_COL,
    OrderingFields,
    at_least,
    ordering_field_list,
    with_auto_record_keys,
)
from airflow_hoodie.settings.base_file import BaseFileSettings
from airflow_hoodie.settings.cdc import CdcSettings
from airflow_hoodie.settings.log_file import LogFileSettings
from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.table.file_group.base_file_writer import (
    ONE_VALUE_META_COLUMNS,
    repeated_string,
    stamp_meta_columns,
    with_meta_fields,
    write_base_file,
)
from airflow_hoodie.table.file_group.file_naming import (
    base_file_name,
    make_write_token,
    parse_log_file_name,
)
from airflow_hoodie.table.file_group.slice_keys import derived_record_keys
from airflow_hoodie.table.log.data_block import avro_data_block
from airflow_hoodie.table.log.delete_block import DeleteRecord, delete_block
from airflow_hoodie.table.log.log_block import LogBlock
from airflow_hoodie.table.log.log_writer import LogWriter
from airflow_hoodie.table.metadata.commit_metadata import WriteStat
from airflow_hoodie.table.schema.avro_convert import avro_to_arrow_schema
from airflow_hoodie.table.schema.meta_fields import (
    FILE_NAME,
    META_COLUMNS,
    RECORD_KEY,
    without_meta_values,
)
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.table_format import TableFormat


@dataclass
class FileGroupTask:
    """One bucket: the work of one Spark task, one file group."""

    bucket: int
    kind: str                      # "UPDATE" (existing group) or "INSERT" (new group)
    partition_path: str
    file_id: str
    base_file: str | None = None   # latest base file, relative path (COW merge / MOR base instant)
    base_instant: str | None = None
    prev_commit: str = "null"
    log_files: list[str] = field(default_factory=list)  # relative paths of the latest slice's logs
    expected_records: int = 0
    #: MOR small-file correction: the group's records become a new base file version
    #: instead of a log append (Hudi's handleUpdate for the partitioner's small file ids)
    merge_base: bool = False
    #: a group this write creates as logs only (NBCC's new buckets): its records are inserts,
    #: as Hudi's HoodieAppendHandle counts records without a current location
    new_group: bool = False


@dataclass
class WriteContext:
    """Everything a task needs, picklable."""

    base_uri: str
    storage_options: dict[str, str]
    instant_time: str
    table_type: str
    table_name: str
    avro_schema: dict[str, Any]     # data schema, without meta fields
    #: how the task writes base files and appends to logs (parsed once, on the driver)
    file_settings: BaseFileSettings
    log_settings: LogFileSettings
    #: the fields an incoming record must beat the stored one by, compared in order; empty: the
    #: latest write wins (commit-time ordering, OverwriteWithLatestAvroPayload)
    ordering_fields: tuple[str, ...]
    operation: str
    #: the table's format: its log-file layout decides how log files are named and appended
    table_format: TableFormat
    stage_id: int = 0
    #: the ordering field whose value a delete block keeps per key: the write's own ordering
    #: fields when it names them, else the table's (``ordering_fields``)
    delete_ordering_fields: tuple[str, ...] = ()
    #: the key generator's settings of a table whose files carry no meta fields
    #: (hoodie.populate.meta.fields=false): stored keys are derived, written meta columns null
    key_generator: dict[str, str] | None = None
    #: whether and how the table logs changes (hoodie.table.cdc.*): a merged file group gets a
    #: CDC log of the mode's records
    cdc: CdcSettings = CdcSettings()

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    def storage(self) -> tuple[Storage, str]:
        return Storage.for_uri(self.base_uri, self.storage_options or None)


def task_attempt() -> tuple[int, int]:
    """(stage id, attempt number) of the Spark task we run in, (0, 0) elsewhere."""
    try:
        from pyspark import TaskContext  # noqa: WPS433 - optional
        tc = TaskContext.get()
        if tc is not None:
            return tc.stageId(), tc.attemptNumber()
    except Exception:  # noqa: BLE001
        pass
    return 0, 0


def write_stat(**json_fields: Any) -> dict[str, Any]:
    """A HoodieWriteStat as Hudi's JSON has it, made by the commit-metadata model. Stats
    travel from executors to the driver as these dicts (JSON on the Spark path); the
    driver turns them back into the model for the commit."""
    return WriteStat.new(**json_fields).to_dict()


def _stored_rows(old_keys: pa.ChunkedArray, incoming_keys: pa.Array) -> tuple[pa.Array, np.ndarray | None]:
    """(each incoming key's first row among the stored ones, null for a new key; each
    stored row's incoming record as a position, -1 when untouched, or None).

    A file group's batch is a few thousand keys against the file's hundred thousand: hashing
    the batch and probing it with the stored keys costs a fifth of hashing every stored key
    (1.4 against 7.7 ms per 100k-row file), and the same positions then tell which stored
    rows are replaced. Only a batch of distinct keys maps back one to one (the upsert's
    dedupe makes it so; with ``hoodie.combine.before.upsert=false`` it may not be): else
    the stored keys are hashed as the value set, and the positions are None."""
    n = len(incoming_keys)
    # pc.unique, not pc.count_distinct: the same count (a null counts once) in a third of the time
    if len(pc.unique(incoming_keys)) != n:
        return pc.index_in(incoming_keys, value_set=old_keys.combine_chunks()), None
    old_at = pc.fill_null(pc.index_in(old_keys, value_set=incoming_keys), -1).to_numpy()
    touched = np.flatnonzero(old_at >= 0)
    # a key stored twice (inserts allowed duplicates) is looked up at its first row, as
    # index_in over the stored keys answers
    hit, first = np.unique(old_at[touched], return_index=True)
    rows = np.zeros(n, dtype=np.int64)
    rows[hit] = touched[first]
    new = np.ones(n, dtype=np.bool_)
    new[hit] = False
    return pa.array(rows, mask=new), old_at


def merge_cow(
    old: pa.Table,
    incoming: pa.Table,
    ordering_field: OrderingFields,
) -> tuple[pa.Table, pa.Table, int, int, pa.Array]:
    """Merge incoming (keys, op col, data) into ``old`` (meta + data) rows.

    ``ordering_field``: the ordering field(s) an incoming record must reach the stored record's
    values in (a tuple compared in order); none: the incoming record wins. Returns (kept old rows
    with their meta columns, winning incoming upserts without meta, n_updates, n_deletes, the keys
    of the upserts that are new to the file). Old rows replaced or deleted are dropped.
    """
    kept, upserts, n_updates, n_deletes, new_keys, _keep_old = _merge_cow(old, incoming, ordering_field)
    return kept, upserts, n_updates, n_deletes, new_keys


def _merge_cow(old: pa.Table, incoming: pa.Table, ordering_field: OrderingFields
               ) -> tuple[pa.Table, pa.Table, int, int, pa.Array, pa.Array]:
    """:func:`merge_cow`, and which old rows it kept (a mask over ``old``): a CDC table's log
    takes the rows it did not keep as the before images, instead of finding them again by
    hashing every kept key (most of the CDC step's cost on a 100k-row file group)."""
    old_keys = old.column(RECORD_KEY)
    ops = incoming.column(OP_COL)
    idx, old_at = _stored_rows(old_keys, incoming.column(RECORD_KEY).combine_chunks())
    in_old = pc.is_valid(idx)
    winning = in_old
    fields = [f for f in ordering_field_list(ordering_field)
              if f in old.column_names and f in incoming.column_names]
    if fields:
        # look up the stored ordering values of each incoming key
        inc_orders, stored_orders = [], []
        for f in fields:
            stored = pc.take(old.column(f).combine_chunks(), idx)  # null for a new key
            inc_order = incoming.column(f).combine_chunks()
            if stored.type != inc_order.type:
                stored = stored.cast(inc_order.type)
            inc_orders.append(inc_order)
            stored_orders.append(stored)
        ge = at_least(inc_orders, stored_orders)
        is_hard_delete = pc.equal(ops, "D")
        beats = pc.or_(ge, is_hard_delete)
        winning = pc.and_(winning, pc.fill_null(beats, True))
    else:
        winning = pc.and_(winning, pa.scalar(True))
    if old_at is None:
        replaced_keys = pc.filter(incoming.column(RECORD_KEY), winning)
        keep_old = pc.invert(pc.is_in(old_keys, value_set=replaced_keys.combine_chunks()))
    else:  # a stored row goes when the one incoming record of its key wins
        touched = np.flatnonzero(old_at >= 0)
        dropped = np.zeros(len(old_at), dtype=np.bool_)
        dropped[touched] = winning.to_numpy(zero_copy_only=False)[old_at[touched]]
        keep_old = pa.array(~dropped)
    kept = old.filter(keep_old)
    losing_existing = pc.and_(pc.fill_null(in_old, False), pc.invert(winning))
    upserts_mask = pc.and_(pc.invert(losing_existing), pc.invert(pc.is_in(ops, value_set=DELETE_OPS)))
    upserts = incoming.filter(upserts_mask)
    n_updates = pc.sum(pc.and_(winning, pc.invert(pc.is_in(ops, value_set=DELETE_OPS)))).as_py() or 0
    n_deletes = pc.sum(pc.and_(winning, pc.is_in(ops, value_set=DELETE_OPS))).as_py() or 0
    new_keys = pc.filter(incoming.column(RECORD_KEY), pc.and_(upserts_mask, pc.invert(in_old)))
    return kept, upserts, n_updates, n_deletes, new_keys.combine_chunks(), keep_old


def _arrow_data_schema(avro_schema: Mapping[str, Any]) -> pa.Schema:
    return avro_to_arrow_schema(avro_schema)


def write_file_group(ctx: WriteContext, task: FileGroupTask, records: pa.Table) -> list[dict[str, Any]]:
    """Write one bucket; returns write stat dicts. Runs in a Spark task or locally.

    ``records`` carries ``_hoodie_record_key``, ``_hoodie_partition_path``, ``_hoodie_op``
    and the data columns (already aligned to the table schema, dedupe done).
    """
    records = with_auto_record_keys(records, ctx.instant_time, task.bucket)
    storage, base_path = ctx.storage()
    stage_id, attempt = task_attempt()
    token = make_write_token(task.bucket, stage_id or ctx.stage_id, attempt)
    data_schema = _arrow_data_schema(ctx.avro_schema)
    started = time.time()
    if ctx.is_mor and task.kind == "UPDATE" and not task.merge_base:
        return _append_to_log(ctx, storage, base_path, task, records, token, data_schema)

    file_name = base_file_name(task.file_id, token, ctx.instant_time)
    io_type = mk.IO_MERGE if task.base_file else mk.IO_CREATE
    mk.create_marker(storage, base_path, ctx.instant_time, task.partition_path, file_name, io_type)
    incoming = records
    n_updates = n_deletes = 0
    old_part: pa.Table | None = None
    old_full: pa.Table | None = None
    keep_old: pa.Array | None = None
    bloom = None
    # a table that stores its meta fields gets them as one-value dictionaries: the old file's
    # are read as parquet stores them, and none is decoded into strings and hashed again
    dictionary = ctx.key_generator is None
    if task.base_file:
        old = pq.read_table(storage.open_input(storage.join(base_path, task.base_file)),
                            read_dictionary=list(ONE_VALUE_META_COLUMNS) if dictionary else None)
        old_meta = old.select(list(META_COLUMNS))
        old_data = align_to_schema(old.drop_columns([c for c in META_COLUMNS if c in old.column_names]), data_schema)
        old_full = pa.Table.from_arrays(
            list(old_meta.columns) + list(old_data.columns), names=list(META_COLUMNS) + data_schema.names
        )
        if ctx.key_generator is not None:  # the stored rows' keys, from their key fields
            old_full = old_full.set_column(old_full.schema.get_field_index(RECORD_KEY), RECORD_KEY,
                                           derived_record_keys(old_data, ctx.key_generator))
        kept, incoming, n_updates, n_deletes, new_keys, keep_old = _merge_cow(old_full, records, ctx.ordering_fields)
        if not n_deletes and ctx.key_generator is None:
            from airflow_hoodie.table.bloom.bloom_footer import extended_footer_filter  # noqa: PLC0415

            # the new file keeps every key of the old one: extend its filter with the new keys
            # instead of hashing all of them again
            bloom = extended_footer_filter(old.schema.metadata, ctx.file_settings.bloom, new_keys)
        # carried-over rows now live in the new file: Hudi's merge handle rewrites the name
        old_part = kept.set_column(kept.schema.get_field_index(FILE_NAME), FILE_NAME,
                                   repeated_string(file_name, kept.num_rows, dictionary))
    else:
        incoming = _kept(records, pc.invert(pc.is_in(records.column(OP_COL), value_set=DELETE_OPS)))
    new_data = align_to_schema(incoming, data_schema)
    carried = old_part is not None and old_part.num_rows > 0
    stamped = stamp_meta_columns(new_data, incoming.column(RECORD_KEY), task.partition_path, ctx.instant_time,
                                 file_name, partition_id=task.bucket, dictionary=dictionary)
    cdc_stats = _log_changes(ctx, storage, base_path, task, token, old_full, keep_old, incoming, new_data)
    # one dictionary per column across old and new rows: Arrow's parquet writer writes a
    # column whose dictionary changes between chunks in plain pages (10x the bytes here)
    out = pa.concat_tables([old_part, stamped]).unify_dictionaries() if carried else stamped
    if ctx.key_generator is not None:
        out = without_meta_values(out)
    # Hudi's merge handle keeps the file sorted the way it read it; new records go last.
    stats = write_base_file(storage, base_path, task.partition_path, file_name, out, ctx.avro_schema, ctx.file_settings,
                            bloom_filter=bloom)
    _fault_injection_pause()
    n_inserts = stamped.num_rows - n_updates
    elapsed = int((time.time() - started) * 1000)
    return [write_stat(
        fileId=task.file_id, path=stats.path, prevCommit=task.prev_commit, numWrites=out.num_rows,
        numDeletes=n_deletes, numUpdateWrites=n_updates, numInserts=n_inserts,
        totalWriteBytes=stats.file_size, partitionPath=task.partition_path, fileSizeInBytes=stats.file_size,
        cdcStats=cdc_stats,
        runtimeStats={"totalScanTime": 0, "totalUpsertTime": elapsed if task.base_file else 0,
                      "totalCreateTime": 0 if task.base_file else elapsed},
    )]


def _log_changes(ctx: WriteContext, storage: Storage, base_path: str, task: FileGroupTask, token: str,
                 old_full: pa.Table | None, keep_old: pa.Array | None, incoming: pa.Table, new_data: pa.Table
                 ) -> dict[str, int] | None:
    """The CDC log of a merged file group of a CDC table (its ``cdcStats``), else None: a new
    file group's inserts are read from its base file, as Hudi's create handle logs none.
    ``keep_old``: the merge's mask of the old rows it carried over; the others were replaced
    or deleted."""
    if not ctx.cdc.enabled or old_full is None or keep_old is None:
        return None
    written = new_data.append_column(RECORD_KEY, incoming.column(RECORD_KEY))
    changes = merge_changes(old_full.filter(pc.invert(keep_old)), written, ctx.cdc.mode)
    return write_cdc_log(storage, base_path, task.partition_path, task.file_id, ctx.instant_time, token,
                         ctx.table_format.release.cdc_log_suffix, ctx.avro_schema, ctx.cdc.mode, changes)


def _kept(table: pa.Table, mask: pa.Array | pa.ChunkedArray) -> pa.Table:
    """``table`` filtered by ``mask``, or ``table`` itself when the mask keeps every row:
    Arrow's filter copies every buffer even then, which held a whole file group of inserts
    twice in a write task's memory."""
    if mask.null_count == 0 and pc.all(mask).as_py() is not False:
        return table
    return table.filter(mask)


def _fault_injection_pause() -> None:
    """Tests kill a job while its tasks are writing: AIRFLOW_HOODIE_TEST_PAUSE_AFTER_FILE=seconds."""
    pause = os.environ.get("AIRFLOW_HOODIE_TEST_PAUSE_AFTER_FILE")
    if pause:
        time.sleep(float(pause))


def _delete_block(ctx: WriteContext, task: FileGroupTask, deletes: pa.Table, field: str | None) -> LogBlock:
    """The delete block of a log append. A hard delete (the delete operation) has no ordering
    value: Hudi writes IntWrapper{0}; a soft delete (_hoodie_is_deleted) keeps its record's
    ordering value and type (any payload carries the precombine value as its ordering value)."""
    has_order = bool(field) and field in deletes.column_names
    order = deletes.column(field).to_pylist() if has_order else [None] * deletes.num_rows
    hard = deletes.column(OP_COL).to_pylist()
    keys = [DeleteRecord(k, task.partition_path, None if op == "D" else o)
            for k, o, op in zip(deletes.column(RECORD_KEY).to_pylist(), order, hard)]
    order_type = deletes.schema.field(field).type if has_order else None
    return delete_block(keys, ctx.instant_time, order_type, schema=_with_meta(ctx.avro_schema))


def _append_to_log(ctx: WriteContext, storage: Storage, base_path: str, task: FileGroupTask,
                   records: pa.Table, token: str, data_schema: pa.Schema) -> list[dict[str, Any]]:
    """MOR update bucket: Avro data block for upserts, delete block for deletes, one log append."""

    ops = records.column(OP_COL)
    fields = list(ctx.delete_ordering_fields or ctx.ordering_fields)
    if len(ctx.ordering_fields) > 1:
        # a delete block keeps one ordering value per key; Hudi 1.1 wraps an ordering tuple in an
        # ArrayWrapper there. A soft delete (_hoodie_is_deleted) travels as a data record instead,
        # which every reader merges as a delete ranked by its whole ordering tuple
        is_delete = pc.equal(ops, "D")
    else:
        is_delete = pc.is_in(ops, value_set=DELETE_OPS)
    upserts = records.filter(pc.invert(is_delete))
    deletes = records.filter(is_delete)
    blocks = []
    if upserts.num_rows:
        data = align_to_schema(upserts, data_schema)
        stamped = stamp_meta_columns(data, upserts.column(RECORD_KEY), task.partition_path, ctx.instant_time,
                                     task.file_id, partition_id=task.bucket)
        avro = _with_meta(ctx.avro_schema)
        max_block = ctx.log_settings.max_block_size
        # split into blocks of roughly max_block bytes
        per_row = max(1, stamped.nbytes // max(1, stamped.num_rows))
        rows_per_block = max(1, max_block // per_row)
        for start in range(0, stamped.num_rows, rows_per_block):
            blocks.append(avro_data_block(stamped.slice(start, rows_per_block), avro, ctx.instant_time))
    if deletes.num_rows:
        blocks.append(_delete_block(ctx, task, deletes, fields[0] if fields else None))
    layout = ctx.table_format.log_file_layout
    part_dir = storage.join(base_path, task.partition_path) if task.partition_path else base_path
    writer = LogWriter.for_instant(storage, part_dir, task.file_id, task.base_instant, ctx.instant_time, token,
                                   layout, max_file_size=ctx.log_settings.max_file_size,
                                   known_log_files=[p.rsplit("/", 1)[-1] for p in task.log_files])
    # the marker names the very file this call's blocks go to (one call never rolls over)
    mk.create_marker(storage, base_path, ctx.instant_time, task.partition_path,
                     writer.next_log_path().rsplit("/", 1)[-1], mk.IO_APPEND)
    try:
        results = writer.append(blocks)
    finally:
        writer.close()
    _fault_injection_pause()
    stats = []
    by_path: dict[str, list] = {}
    for r in results:
        by_path.setdefault(r.log_path, []).append(r)
    n_up = upserts.num_rows
    # records the index did not locate are inserts appended to a small slice's log
    # (all of them in a group this write creates as logs only: no record had a location)
    n_ins = n_up if task.new_group else (
        upserts.column(LOC_FILE).null_count if LOC_FILE in upserts.column_names else 0)
    for i, (path, rs) in enumerate(by_path.items()):
        name = path.rsplit("/", 1)[-1]
        rel = f"{task.partition_path}/{name}" if task.partition_path else name
        appended = sum(r.size for r in rs)
        try:
            version = parse_log_file_name(name).version
        except Exception:  # noqa: BLE001
            version = 1
        slice_fields = layout.delta_stat_fields(ctx.instant_time, task.base_instant,
                                                (task.base_file or "").rsplit("/", 1)[-1], [name])
        stats.append(write_stat(
            fileId=task.file_id, path=rel, prevCommit=slice_fields["prevCommit"],
            numWrites=n_up if i == 0 else 0, numDeletes=deletes.num_rows if i == 0 else 0,
            numUpdateWrites=n_up - n_ins if i == 0 else 0, numInserts=n_ins if i == 0 else 0,
            totalWriteBytes=appended,
            partitionPath=task.partition_path, totalLogBlocks=len(rs),
            fileSizeInBytes=storage.size(path), logVersion=version, logOffset=rs[0].offset,
            baseFile=slice_fields["baseFile"],
            logFiles=slice_fields["logFiles"],
        ))
    return stats


def _with_meta(avro_schema: Mapping[str, Any]) -> dict[str, Any]:
    return with_meta_fields(avro_schema)

