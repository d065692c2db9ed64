"""The Hudi write client, driver side: start commit, plan buckets, write file groups, commit.

The flow is Hudi's (HoodieSparkSqlWriter -> SparkRDDWriteClient): roll back failed
earlier writes, create ``<ts>.<action>.requested``, tag records with their current file
group (index), assign buckets (updates to their group, inserts to small files then new
groups), write one task per file group, then complete the instant with the commit
metadata JSON. Nothing here imports Spark: the per-file-group work is the plain function
:func:`write_file_group` over Arrow data, run by whatever executor the caller has.
"""

from __future__ import annotations

from contextlib import contextmanager

import json
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_hoodie.config import ConfigKey, HoodieConfig, register, register_prefix
from airflow_hoodie.errors import (
    HoodieConcurrentWriterError,
    HoodieConfigError,
    HoodieError,
    HoodieIOError,
    HoodieKeyError,
    HoodieSchemaError,
    HoodieWriteConflictError,
)
from airflow_hoodie.table.supported_features import check_merge_supported
from airflow_hoodie.table.log.log_writer import latest_log_file
from airflow_hoodie.table.file_group.file_system_view import ExistingFile
from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.actions.transaction.conflict_resolution import TimelineSnapshot, check_no_conflict
from airflow_hoodie.actions.transaction.failed_writes import live_writes, rollback_failed_writes
from airflow_hoodie.actions.transaction.transaction_manager import (
    CONCURRENCY_MODE,
    EAGER,
    OCC,
    SINGLE_WRITER,
    TransactionManager,
)
from airflow_hoodie.table.keygen.partition_path_check import check_partition_paths
from airflow_hoodie.table.timeline.instant import is_utc_timeline
from airflow_hoodie.table.file_group.file_naming import base_file_name, log_file_name, make_write_token, new_file_id
from airflow_hoodie.table.keygen.key_generator import KeyGenerator
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.file_group.base_file_writer import seqno_array
from airflow_hoodie.table.file_group.base_file_writer import (
    FILE_NAME, IS_DELETED, META_COLUMNS, PARTITION_PATH, RECORD_KEY,
    stamp_meta_columns, write_base_file,
)
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.actions.write_identity import commit_extra_metadata

# ----------------------------------------------------------------------------- settings
TABLE_TYPE = "hoodie.table.type"
RECORD_KEY_FIELD = "hoodie.datasource.write.recordkey.field"
PRECOMBINE_FIELD = "hoodie.datasource.write.precombine.field"
PARTITION_FIELD = "hoodie.datasource.write.partitionpath.field"

register(
    ConfigKey(TABLE_TYPE, "COPY_ON_WRITE", "COPY_ON_WRITE or MERGE_ON_READ", ("hoodie.datasource.write.table.type",)),
    ConfigKey("hoodie.table.name", None, "table name", ("hoodie.datasource.write.table.name",)),
    ConfigKey(RECORD_KEY_FIELD, None, "record key field(s); unset: keys generated at write time (insert only)",
              ("hoodie.table.recordkey.fields",)),
    ConfigKey(PRECOMBINE_FIELD, "ts", "ordering field used to dedupe", ("hoodie.table.precombine.field",)),
    ConfigKey(PARTITION_FIELD, "", "partition path field(s)", ("hoodie.table.partition.fields",)),
    ConfigKey("hoodie.datasource.write.keygenerator.class", None, "key generator class",
              ("hoodie.table.keygenerator.class",)),
    ConfigKey("hoodie.datasource.write.keygenerator.type", None, "key generator type"),
    ConfigKey("hoodie.datasource.write.hive_style_partitioning", "false", "",
              ("hoodie.table.hive_style_partitioning",)),
    ConfigKey("hoodie.datasource.write.partitionpath.urlencode", "false", ""),
    ConfigKey("hoodie.datasource.write.operation", "upsert", ""),
    ConfigKey("hoodie.datasource.write.payload.class", "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload", "",
              ("hoodie.compaction.payload.class",)),
    ConfigKey("hoodie.payload.ordering.field", None, "ordering field of DefaultHoodieRecordPayload"),
    ConfigKey("hoodie.index.type", "SIMPLE", "SIMPLE, GLOBAL_SIMPLE, BLOOM, GLOBAL_BLOOM, IN_MEMORY"),
    ConfigKey("hoodie.combine.before.upsert", "true", ""),
    ConfigKey("hoodie.combine.before.insert", "false", ""),
    ConfigKey("hoodie.combine.before.delete", "true", ""),
    ConfigKey("hoodie.simple.index.update.partition.path", "true", ""),
    ConfigKey("hoodie.bloom.index.update.partition.path", "true", ""),
    ConfigKey("hoodie.bloom.index.prune.by.ranges", "true", ""),
    ConfigKey("hoodie.bloom.index.use.metadata", "false", ""),
    ConfigKey("hoodie.index.bloom.num_entries", "60000", ""),
    ConfigKey("hoodie.index.bloom.fpp", "0.000000001", ""),
    ConfigKey("hoodie.bloom.index.filter.type", "DYNAMIC_V0", ""),
    ConfigKey("hoodie.bloom.index.filter.dynamic.max.entries", "100000", ""),
    ConfigKey("hoodie.parquet.small.file.limit", str(104857600), ""),
    ConfigKey("hoodie.parquet.max.file.size", str(125829120), ""),
    ConfigKey("hoodie.parquet.block.size", str(125829120), ""),
    ConfigKey("hoodie.parquet.page.size", str(1048576), ""),
    ConfigKey("hoodie.parquet.compression.codec", "gzip", ""),
    ConfigKey("hoodie.copyonwrite.record.size.estimate", "1024", ""),
    ConfigKey("hoodie.record.size.estimation.threshold", "1.0", ""),
    ConfigKey("hoodie.copyonwrite.insert.split.size", "500000", ""),
    ConfigKey("hoodie.copyonwrite.insert.auto.split", "true", ""),
    ConfigKey("hoodie.logfile.max.size", str(1073741824), ""),
    ConfigKey("hoodie.logfile.data.block.max.size", str(268435456), ""),
    ConfigKey("hoodie.logfile.data.block.format", "avro", ""),
    ConfigKey("hoodie.upsert.shuffle.parallelism", "0", ""),
    ConfigKey("hoodie.insert.shuffle.parallelism", "0", ""),
    ConfigKey("hoodie.bulkinsert.shuffle.parallelism", "0", ""),
    ConfigKey("hoodie.bulkinsert.sort.mode", "NONE", "bulk_insert layout: NONE, GLOBAL_SORT, PARTITION_SORT, "
              "PARTITION_PATH_REPARTITION or PARTITION_PATH_REPARTITION_AND_SORT"),
    ConfigKey("hoodie.delete.shuffle.parallelism", "0", ""),
    ConfigKey("hoodie.populate.meta.fields", "true", ""),
    ConfigKey("hoodie.table.timeline.timezone", "LOCAL", ""),
    ConfigKey("hoodie.datasource.write.reconcile.schema", "false", ""),
    ConfigKey("hoodie.table.base.file.format", "PARQUET", ""),
    ConfigKey("hoodie.database.name", None, ""),
    ConfigKey("hoodie.write.markers.type", "DIRECT", "we write direct markers"),
    ConfigKey("hoodie.rollback.using.markers", "true", ""),
    ConfigKey("hoodie.metadata.enable", "false", "the metadata table is not maintained by airflow-hoodie"),
)
register_prefix("hoodie.write.commit.callback.")
register_prefix("hoodie.datasource.write.keygenerator.")
register_prefix("hoodie.keygen.")

OPERATIONS = ("insert", "upsert", "bulk_insert", "delete", "insert_overwrite", "insert_overwrite_table")
OPERATION_TYPE = {
    "insert": "INSERT", "upsert": "UPSERT", "bulk_insert": "BULK_INSERT", "delete": "DELETE",
    "insert_overwrite": "INSERT_OVERWRITE", "insert_overwrite_table": "INSERT_OVERWRITE_TABLE",
}
GLOBAL_INDEXES = ("GLOBAL_SIMPLE", "GLOBAL_BLOOM")
INDEX_TYPES = ("SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM", "IN_MEMORY")

#: internal columns of a tagged batch (dropped before anything is written)
OP_COL = "_hoodie_op"          # 'I' insert, 'U' update, 'D' delete
BUCKET_COL = "_hoodie_bucket"  # target bucket id
ORDER_COL = "_hoodie_ordering"
DELETE_OPS = pa.array(["D", "S"])  # D: delete operation (always wins), S: _hoodie_is_deleted
INTERNAL_COLS = (OP_COL, BUCKET_COL, ORDER_COL, "_hoodie_loc_file", "_hoodie_loc_part")


# ----------------------------------------------------------------------------- plain data
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


@dataclass
class WriteContext:
    """Everything a task needs, picklable."""

    base_uri: str
    storage_options: dict[str, str]
    instant_time: str
    table_type: str
    table_name: str
    avro_schema: dict[str, Any]     # data schema, without meta fields
    props: dict[str, str]
    ordering_field: str | None      # None => latest wins (OverwriteWithLatestAvroPayload)
    operation: str
    stage_id: int = 0

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    def storage(self) -> tuple[Storage, str]:
        return Storage.for_uri(self.base_uri, self.storage_options or None)


def _task_attempt() -> tuple[int, int]:
    """(stage id, attempt number) of the Spark task we run in, (0, 0) elsewhere."""
    try:
        from pyspark import TaskContext  # noqa: WPS433 - optional
        tc = TaskContext.get()
        if tc is not None:
            return tc.stageId(), tc.attemptNumber()
    except Exception:  # noqa: BLE001
        pass
    return 0, 0








def write_stat(**kw: Any) -> dict[str, Any]:
    """A HoodieWriteStat as Hudi's JSON has it (field order as Jackson writes it)."""
    stat: dict[str, Any] = {
        "fileId": "", "path": None, "cdcStats": None, "prevCommit": "null", "numWrites": 0,
        "numDeletes": 0, "numUpdateWrites": 0, "numInserts": 0, "totalWriteBytes": 0,
        "totalWriteErrors": 0, "tempPath": None, "partitionPath": None, "totalLogRecords": 0,
        "totalLogFilesCompacted": 0, "totalLogSizeCompacted": 0, "totalUpdatedRecordsCompacted": 0,
        "totalLogBlocks": 0, "totalCorruptLogBlock": 0, "totalRollbackBlocks": 0, "fileSizeInBytes": 0,
        "minEventTime": None, "maxEventTime": None, "runtimeStats": None,
    }
    stat.update(kw)
    return stat


# ----------------------------------------------------------------------------- merging
def align_to_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Columns of ``schema`` in its order; missing ones null-filled, types cast (safe only)."""
    cols = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name)
            if col.type != f.type:
                try:
                    col = col.cast(f.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise HoodieSchemaError(
                        f"Column {f.name!r} has type {col.type} but the table stores {f.type}: {exc}. "
                        "Write a compatible type or evolve the table schema explicitly."
                    ) from exc
            cols.append(col)
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=pa.schema([pa.field(f.name, f.type) for f in schema]))


def _winner_mask(new_order: pa.ChunkedArray | None, old_order: pa.ChunkedArray | None) -> pa.Array | None:
    """True where the incoming value wins (>= stored, as DefaultHoodieRecordPayload)."""
    if new_order is None or old_order is None:
        return None
    ge = pc.greater_equal(new_order, old_order)
    return pc.fill_null(ge, True)


def merge_cow(
    old: pa.Table,
    incoming: pa.Table,
    ordering_field: str | None,
) -> tuple[pa.Table, pa.Table, int, int]:
    """Merge incoming (keys, op col, data) into ``old`` (meta + data) rows.

    Returns (kept old rows with their meta columns, winning incoming upserts without meta,
    n_updates, n_deletes). Old rows replaced or deleted are dropped.
    """
    old_keys = old.column(RECORD_KEY)
    ops = incoming.column(OP_COL)
    # which incoming rows target an existing key
    in_old = pc.is_in(incoming.column(RECORD_KEY), value_set=old_keys.combine_chunks())
    winning = pc.fill_null(in_old, False)
    if ordering_field and ordering_field in old.column_names and ordering_field in incoming.column_names:
        # look up the stored ordering value of each incoming key
        idx = pc.index_in(incoming.column(RECORD_KEY), value_set=old_keys.combine_chunks())
        stored = pc.take(old.column(ordering_field).combine_chunks(), pc.fill_null(idx, 0))
        inc_order = incoming.column(ordering_field).combine_chunks()
        if stored.type != inc_order.type:
            stored = stored.cast(inc_order.type)
        ge = pc.fill_null(pc.greater_equal(inc_order, stored), True)
        is_hard_delete = pc.equal(ops, "D")
        beats = pc.or_(ge, is_hard_delete)
        winning = pc.and_(winning, pc.fill_null(beats, True))
    else:
        winning = pc.and_(winning, pa.scalar(True))
    replaced_keys = pc.filter(incoming.column(RECORD_KEY), winning)
    keep_old = pc.invert(pc.is_in(old_keys, value_set=replaced_keys.combine_chunks()))
    kept = old.filter(keep_old)
    losing_existing = pc.and_(pc.fill_null(in_old, False), pc.invert(winning))
    upserts_mask = pc.and_(pc.invert(losing_existing), pc.invert(pc.is_in(ops, value_set=DELETE_OPS)))
    upserts = incoming.filter(upserts_mask)
    n_updates = pc.sum(pc.and_(winning, pc.invert(pc.is_in(ops, value_set=DELETE_OPS)))).as_py() or 0
    n_deletes = pc.sum(pc.and_(winning, pc.is_in(ops, value_set=DELETE_OPS))).as_py() or 0
    return kept, upserts, n_updates, n_deletes


def _arrow_data_schema(avro_schema: Mapping[str, Any]) -> pa.Schema:
    from airflow_hoodie.table.schema.avro_convert import avro_to_arrow_schema
    return avro_to_arrow_schema(avro_schema)


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


def write_file_group(ctx: WriteContext, task: FileGroupTask, records: pa.Table) -> list[dict[str, Any]]:
    """Write one bucket; returns write stat dicts. Runs in a Spark task or locally.

    ``records`` carries ``_hoodie_record_key``, ``_hoodie_partition_path``, ``_hoodie_op``
    and the data columns (already aligned to the table schema, dedupe done).
    """
    records = with_auto_record_keys(records, ctx.instant_time, task.bucket)
    storage, base_path = ctx.storage()
    stage_id, attempt = _task_attempt()
    token = make_write_token(task.bucket, stage_id or ctx.stage_id, attempt)
    data_schema = _arrow_data_schema(ctx.avro_schema)
    started = time.time()
    if ctx.is_mor and task.kind == "UPDATE":
        return _append_to_log(ctx, storage, base_path, task, records, token, data_schema)

    file_name = base_file_name(task.file_id, token, ctx.instant_time)
    io_type = mk.IO_MERGE if task.base_file else mk.IO_CREATE
    mk.create_marker(storage, base_path, ctx.instant_time, task.partition_path, file_name, io_type)
    incoming = records
    n_updates = n_deletes = 0
    old_part: pa.Table | None = None
    if task.base_file:
        old = pq.read_table(storage.open_input(storage.join(base_path, task.base_file)))
        old_meta = old.select(list(META_COLUMNS))
        old_data = align_to_schema(old.drop_columns([c for c in META_COLUMNS if c in old.column_names]), data_schema)
        old_full = pa.Table.from_arrays(
            list(old_meta.columns) + list(old_data.columns), names=list(META_COLUMNS) + data_schema.names
        )
        kept, incoming, n_updates, n_deletes = merge_cow(old_full, records, ctx.ordering_field)
        # carried-over rows now live in the new file: Hudi's merge handle rewrites the name
        old_part = kept.set_column(kept.schema.get_field_index(FILE_NAME), FILE_NAME,
                                   pa.repeat(pa.scalar(file_name, pa.string()), kept.num_rows))
    else:
        incoming = records.filter(pc.invert(pc.is_in(records.column(OP_COL), value_set=DELETE_OPS)))
    new_data = align_to_schema(incoming, data_schema)
    stamped = stamp_meta_columns(new_data, incoming.column(RECORD_KEY), task.partition_path, ctx.instant_time,
                                 file_name, partition_id=task.bucket)
    out = pa.concat_tables([old_part, stamped]) if old_part is not None and old_part.num_rows else stamped
    # Hudi's merge handle keeps the file sorted the way it read it; new records go last.
    stats = write_base_file(storage, base_path, task.partition_path, file_name, out, ctx.avro_schema, ctx.props)
    _fault_injection_pause()
    n_inserts = stamped.num_rows - n_updates
    elapsed = int((time.time() - started) * 1000)
    return [write_stat(
        fileId=task.file_id, path=stats.path, prevCommit=task.prev_commit, numWrites=out.num_rows,
        numDeletes=n_deletes, numUpdateWrites=n_updates, numInserts=n_inserts,
        totalWriteBytes=stats.file_size, partitionPath=task.partition_path, fileSizeInBytes=stats.file_size,
        runtimeStats={"totalScanTime": 0, "totalUpsertTime": elapsed if task.base_file else 0,
                      "totalCreateTime": 0 if task.base_file else elapsed},
    )]


def _fault_injection_pause() -> None:
    """Tests kill a job while its tasks are writing: AIRFLOW_HOODIE_TEST_PAUSE_AFTER_FILE=seconds."""
    import os
    pause = os.environ.get("AIRFLOW_HOODIE_TEST_PAUSE_AFTER_FILE")
    if pause:
        time.sleep(float(pause))


def _append_to_log(ctx: WriteContext, storage: Storage, base_path: str, task: FileGroupTask,
                   records: pa.Table, token: str, data_schema: pa.Schema) -> list[dict[str, Any]]:
    """MOR update bucket: Avro data block for upserts, delete block for deletes, one log append."""
    from airflow_hoodie.table.log import log_block as lb
    from airflow_hoodie.table.log.log_writer import LogWriter

    ops = records.column(OP_COL)
    is_delete = pc.is_in(ops, value_set=DELETE_OPS)
    upserts = records.filter(pc.invert(is_delete))
    deletes = records.filter(is_delete)
    blocks = []
    if upserts.num_rows:
        data = align_to_schema(upserts, data_schema)
        stamped = stamp_meta_columns(data, upserts.column(RECORD_KEY), task.partition_path, ctx.instant_time,
                                     task.file_id, partition_id=task.bucket)
        avro = _with_meta(ctx.avro_schema)
        max_block = int(ctx.props.get("hoodie.logfile.data.block.max.size", 268435456))
        # split into blocks of roughly max_block bytes
        per_row = max(1, stamped.nbytes // max(1, stamped.num_rows))
        rows_per_block = max(1, max_block // per_row)
        for start in range(0, stamped.num_rows, rows_per_block):
            blocks.append(lb.avro_data_block(stamped.slice(start, rows_per_block), avro, ctx.instant_time))
    if deletes.num_rows:
        # a hard delete (the delete operation) has no ordering value: Hudi writes IntWrapper{0};
        # a soft delete (_hoodie_is_deleted) keeps its record's ordering value and type
        # (any payload carries the precombine value as its ordering value)
        field = ctx.props.get(PRECOMBINE_FIELD) or ctx.ordering_field
        has_order = bool(field) and field in deletes.column_names
        order = deletes.column(field).to_pylist() if has_order else [None] * deletes.num_rows
        hard = deletes.column(OP_COL).to_pylist()
        keys = [lb.DeleteRecord(k, task.partition_path, None if op == "D" else o)
                for k, o, op in zip(deletes.column(RECORD_KEY).to_pylist(), order, hard)]
        order_type = deletes.schema.field(field).type if has_order else None
        blocks.append(lb.delete_block(keys, ctx.instant_time, order_type, schema=_with_meta(ctx.avro_schema)))
    base_instant = task.base_instant or ctx.instant_time
    part_dir = storage.join(base_path, task.partition_path) if task.partition_path else base_path
    # markers for the file the writer appends to and the one it may roll over to
    latest_version = latest_log_file(storage, part_dir, task.file_id, base_instant)[0]
    for v in {max(latest_version, 1), latest_version + 1}:
        mk.create_marker(storage, base_path, ctx.instant_time, task.partition_path,
                         log_file_name(task.file_id, base_instant, v, token), mk.IO_APPEND)
    writer = LogWriter(storage, part_dir, task.file_id, base_instant, token,
                       max_file_size=int(ctx.props.get("hoodie.logfile.max.size", 1073741824)))
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
    for i, (path, rs) in enumerate(by_path.items()):
        name = path.rsplit("/", 1)[-1]
        rel = f"{task.partition_path}/{name}" if task.partition_path else name
        appended = sum(r.size for r in rs)
        try:
            from airflow_hoodie.table.file_group.file_naming import parse_log_file_name
            version = parse_log_file_name(name).version
        except Exception:  # noqa: BLE001
            version = 1
        stats.append(write_stat(
            fileId=task.file_id, path=rel, prevCommit=task.base_instant or "null",
            numWrites=n_up if i == 0 else 0, numDeletes=deletes.num_rows if i == 0 else 0,
            numUpdateWrites=n_up if i == 0 else 0, totalWriteBytes=appended,
            partitionPath=task.partition_path, totalLogBlocks=len(rs),
            fileSizeInBytes=storage.size(path), logVersion=version, logOffset=rs[0].offset,
            baseFile=(task.base_file or "").rsplit("/", 1)[-1],
            logFiles=[name],
        ))
    return stats


def _with_meta(avro_schema: Mapping[str, Any]) -> dict[str, Any]:
    from airflow_hoodie.table.file_group.base_file_writer import with_meta_fields
    return with_meta_fields(avro_schema)


# ============================================================================ driver side
def _now_ms() -> int:
    return int(time.time() * 1000)


def existing_files(table: Any, partitions: Iterable[str] | None = None) -> list[ExistingFile]:
    """Latest committed file slices the index and bucketing work on (the table's view)."""
    return table.file_system_view().existing_files(partitions)


def average_record_size(table: Any, config: HoodieConfig) -> int:
    """Hudi's AverageRecordSizeUtils: newest commit that wrote enough bytes, else the estimate."""
    estimate = config.get_int("hoodie.copyonwrite.record.size.estimate")
    threshold = config.get_float("hoodie.record.size.estimation.threshold") * config.get_int(
        "hoodie.parquet.small.file.limit")
    tl = table.timeline
    for inst in reversed(tl.completed_commits().instants):
        try:
            meta = json.loads(tl.read_details(inst) or b"{}")
        except (ValueError, HoodieError):
            continue
        total_bytes = total_recs = 0
        for stats in (meta.get("partitionToWriteStats") or {}).values():
            for st in stats:
                p = st.get("path") or ""
                if p.endswith(".parquet"):
                    total_bytes += int(st.get("totalWriteBytes") or 0)
                    total_recs += int(st.get("numWrites") or 0)
        if total_bytes > threshold and total_recs > 0:
            return int(math.ceil(total_bytes / total_recs))
    return estimate


def assign_buckets(
    update_counts: Mapping[tuple[str, str], int],
    insert_counts: Mapping[str, int],
    files: Sequence[ExistingFile],
    config: HoodieConfig,
    avg_record_size: int,
    is_mor: bool,
    use_small_files: bool = True,
) -> tuple[list[FileGroupTask], dict[str, list[tuple[int, int]]]]:
    """Hudi's UpsertPartitioner: one bucket per updated group, inserts to small files, then new groups.

    Returns the tasks and, per partition, the insert buckets as ``(bucket, record count)``.
    """
    small_limit = config.get_int("hoodie.parquet.small.file.limit")
    max_size = config.get_int("hoodie.parquet.max.file.size")
    by_key = {(f.partition_path, f.file_id): f for f in files}
    tasks: list[FileGroupTask] = []
    bucket_of: dict[tuple[str, str], int] = {}
    for (part, fid), n in sorted(update_counts.items()):
        f = by_key.get((part, fid))
        if f is not None and f.in_clustering:
            from airflow_hoodie.errors import HoodieWriteConflictError
            raise HoodieWriteConflictError(
                f"{n} record(s) update file group {fid} in partition {part!r}, which a pending clustering "
                "plan is rewriting (Hudi's reject-update strategy). Run or roll back the clustering first.")
        t = FileGroupTask(len(tasks), "UPDATE", part, fid, f.base_file if f else None,
                          f.base_instant if f else None, f.base_instant if f else "null",
                          list(f.log_files) if f else [], n)
        bucket_of[(part, fid)] = t.bucket
        tasks.append(t)
    inserts: dict[str, list[tuple[int, int]]] = {}
    per_bucket = (max(1, max_size // max(1, avg_record_size))
                  if config.get_bool("hoodie.copyonwrite.insert.auto.split")
                  else config.get_int("hoodie.copyonwrite.insert.split.size"))
    for part, n in sorted(insert_counts.items()):
        remaining = n
        plan: list[tuple[int, int]] = []
        if use_small_files and small_limit > 0 and not is_mor:
            smalls = sorted((f for f in files if f.partition_path == part and f.base_file
                             and not f.in_clustering and f.base_size < small_limit), key=lambda f: f.base_size)
            for f in smalls:
                if remaining <= 0:
                    break
                room = (max_size - f.base_size) // max(1, avg_record_size)
                take = int(min(room, remaining))
                if take <= 0:
                    continue
                b = bucket_of.get((part, f.file_id))
                if b is None:
                    t = FileGroupTask(len(tasks), "UPDATE", part, f.file_id, f.base_file, f.base_instant,
                                      f.base_instant, list(f.log_files), 0)
                    tasks.append(t)
                    b = bucket_of[(part, f.file_id)] = t.bucket
                tasks[b].expected_records += take
                plan.append((b, take))
                remaining -= take
        while remaining > 0:
            take = int(min(per_bucket, remaining))
            t = FileGroupTask(len(tasks), "INSERT", part, new_file_id(), expected_records=take)
            tasks.append(t)
            plan.append((t.bucket, take))
            remaining -= take
        inserts[part] = plan
    return tasks, inserts


def commit_metadata_json(
    stats: Sequence[Mapping[str, Any]],
    operation: str,
    schema_json: str | None,
    replaced: Mapping[str, list[str]] | None = None,
    extra: Mapping[str, str] | None = None,
) -> bytes:
    """HoodieCommitMetadata / HoodieReplaceCommitMetadata JSON, as Hudi's Jackson writes it."""
    by_part: dict[str, list] = {}
    for st in stats:
        by_part.setdefault(st.get("partitionPath") or "", []).append(dict(st))
    extra_md = dict(extra or {})
    if schema_json is not None:
        extra_md["schema"] = schema_json
    doc: dict[str, Any] = {"partitionToWriteStats": by_part, "compacted": False,
                           "extraMetadata": extra_md, "operationType": OPERATION_TYPE.get(operation, operation)}
    if replaced is not None:
        doc["partitionToReplaceFileIds"] = {k: list(v) for k, v in replaced.items()}
    return json.dumps(doc, indent=2).encode()


def workload_profile_json(tasks: Sequence[FileGroupTask], operation: str,
                          extra: Mapping[str, str] | None = None) -> bytes:
    """What Hudi puts in the inflight file: one stat per bucket with expected counts."""
    stats = []
    for t in tasks:
        stats.append(write_stat(
            fileId=t.file_id if t.kind == "UPDATE" else "", prevCommit=t.prev_commit if t.kind == "UPDATE" else "null",
            numUpdateWrites=t.expected_records if t.kind == "UPDATE" else 0,
            numInserts=t.expected_records if t.kind == "INSERT" else 0,
            partitionPath=t.partition_path,
        ))
    by_part: dict[str, list] = {}
    for st in stats:
        part = st.pop("partitionPath")
        st["partitionPath"] = None
        by_part.setdefault(part, []).append(st)
    return json.dumps({"partitionToWriteStats": by_part, "compacted": False, "extraMetadata": dict(extra or {}),
                       "operationType": OPERATION_TYPE.get(operation, operation)}, indent=2).encode()


def table_config_from_write_config(config: HoodieConfig, table_name: str, avro_schema: Mapping[str, Any]) -> dict[str, str]:
    """hoodie.properties of a table created by its first write (Hudi's HoodieTableMetaClient.initTable)."""
    table_type = config.get(TABLE_TYPE) or "COPY_ON_WRITE"
    if table_type not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        raise HoodieConfigError(f"hoodie.table.type={table_type!r} is not a table type; use COPY_ON_WRITE or MERGE_ON_READ.")
    part_fields = config.get_list(PARTITION_FIELD)
    keygen = key_generator_class(config)
    props = {
        "hoodie.table.name": table_name,
        "hoodie.table.type": table_type,
        "hoodie.table.version": "6",
        "hoodie.timeline.layout.version": "1",
        "hoodie.archivelog.folder": "archived",
        "hoodie.table.recordkey.fields": ",".join(config.get_list(RECORD_KEY_FIELD)),
        "hoodie.table.partition.fields": ",".join(part_fields),
        "hoodie.table.keygenerator.class": keygen,
        "hoodie.datasource.write.hive_style_partitioning": config.get("hoodie.datasource.write.hive_style_partitioning") or "false",
        "hoodie.datasource.write.partitionpath.urlencode": config.get("hoodie.datasource.write.partitionpath.urlencode") or "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.populate.meta.fields": "true",
        "hoodie.database.name": config.get("hoodie.database.name") or "default",
        "hoodie.table.create.schema": json.dumps(avro_schema, separators=(",", ":")),
    }
    pre = config.get(PRECOMBINE_FIELD)
    if pre and pre in {f["name"] for f in avro_schema.get("fields", [])}:
        props["hoodie.table.precombine.field"] = pre
    if table_type == "MERGE_ON_READ":
        props["hoodie.compaction.payload.class"] = config.get("hoodie.datasource.write.payload.class")
    if config.get("hoodie.table.timeline.timezone", "LOCAL").upper() == "UTC":
        props["hoodie.table.timeline.timezone"] = "UTC"
    # Hudi leaves a key out rather than writing it empty (a non-partitioned table has no
    # hoodie.table.partition.fields, a table without metadata table no metadata.partitions)
    return {k: v for k, v in props.items() if v not in (None, "")}


def key_generator_class(config: HoodieConfig) -> str:
    cls = config.get("hoodie.datasource.write.keygenerator.class")
    if cls:
        return cls
    kind = (config.get("hoodie.datasource.write.keygenerator.type") or "").upper()
    types = {"SIMPLE": "SimpleKeyGenerator", "COMPLEX": "ComplexKeyGenerator",
             "NON_PARTITION": "NonpartitionedKeyGenerator", "TIMESTAMP": "TimestampBasedKeyGenerator",
             "CUSTOM": "CustomKeyGenerator"}
    if kind:
        if kind not in types:
            raise HoodieConfigError(f"hoodie.datasource.write.keygenerator.type={kind!r} is unknown; use one of {sorted(types)}.")
        return "org.apache.hudi.keygen." + types[kind]
    parts = config.get_list(PARTITION_FIELD)
    keys = config.get_list(RECORD_KEY_FIELD)
    if not parts:
        return "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
    if len(parts) > 1 or len(keys) > 1:
        return "org.apache.hudi.keygen.ComplexKeyGenerator"
    return "org.apache.hudi.keygen.SimpleKeyGenerator"


# ------------------------------------------------------------------------------ the client
@dataclass
class WriteResult:
    instant: str
    action: str
    state: str
    operation: str
    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    files_written: int = 0
    bytes_written: int = 0
    partitions: int = 0
    rolled_back: list[str] = field(default_factory=list)
    unknown_keys: list[str] = field(default_factory=list)
    replaced_file_groups: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_unknown_keys(config: HoodieConfig) -> list[str]:
    """Every hoodie.* key nobody registered; callers report them (typos must not pass silently)."""
    return config.unknown_keys()


class WriteClient:
    """Driver side of one write: owns the timeline steps, never touches records itself."""

    def __init__(self, base_uri: str, config: HoodieConfig, storage_options: Mapping[str, str] | None = None,
                 table_name: str | None = None) -> None:
        self.base_uri = base_uri
        self.config = config
        self.storage_options = dict(storage_options or {})
        self.table_name = table_name or config.get("hoodie.table.name")
        self.storage, self.base_path = Storage.for_uri(base_uri, self.storage_options or None)
        self.table: Any = None
        self._txn: TransactionManager | None = None
        self._started: TimelineSnapshot | None = None

    @property
    def txn(self) -> TransactionManager:
        """Concurrency mode, heartbeats and lock of this table for this client."""
        if self._txn is None:
            props = dict(self.table.config.items()) if self.table is not None else dict(self.config.as_dict())
            self._txn = TransactionManager(self.config, self.base_uri, self.storage, self.base_path,
                                           self.storage_options, is_utc_timeline(props))
        return self._txn

    # ---------------------------------------------------------------- table
    def load_table(self) -> Any | None:
        from airflow_hoodie.table.hoodie_table import HoodieTable
        from airflow_hoodie.errors import HoodieTableNotFoundError
        # a custom payload or merger in the job's own options: refused before anything is written
        check_merge_supported(self.config.as_dict(), f"The write to {self.base_uri}")
        try:
            self.table = HoodieTable.load(self.base_uri, self.storage_options or None)
        except HoodieTableNotFoundError:
            self.table = None
        if self.table is not None:
            self.table.check_writable()
            self.table.check_latest_commit()
            self._check_table_matches()
            # a write planned on a view missing a latest file would make the older data permanent
            self.table.file_system_view().check_latest_files_present()
        return self.table

    def _check_table_matches(self) -> None:
        want = self.config.get(TABLE_TYPE)
        if TABLE_TYPE in self.config or "hoodie.datasource.write.table.type" in self.config:
            if want not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
                raise HoodieConfigError(f"hoodie.table.type={want!r} is not a table type; use COPY_ON_WRITE or MERGE_ON_READ.")
            if want != self.table.table_type:
                raise HoodieConfigError(
                    f"The table at {self.base_uri} is {self.table.table_type}, but the write asks for {want}; "
                    "drop hoodie.table.type or write to a new path.")

    def effective_config(self) -> HoodieConfig:
        """Write settings with the table's own key/partition/precombine fields filling the gaps."""
        if self.table is None:
            return self.config
        tc = self.table.config
        extra: dict[str, str] = {}
        mapping = {
            RECORD_KEY_FIELD: ",".join(tc.record_key_fields or []),
            PARTITION_FIELD: ",".join(tc.partition_fields or []),
            "hoodie.datasource.write.keygenerator.class": tc.key_generator_class or "",
            "hoodie.datasource.write.hive_style_partitioning": str(tc.hive_style_partitioning).lower(),
            TABLE_TYPE: self.table.table_type,
        }
        if tc.precombine_field:
            mapping[PRECOMBINE_FIELD] = tc.precombine_field
        for k, v in mapping.items():
            if k not in self.config and v:
                extra[k] = v
        return self.config.with_values(extra)

    def create_table(self, avro_schema: Mapping[str, Any]) -> Any:
        from airflow_hoodie.table.hoodie_table import HoodieTable
        if not self.table_name:
            raise HoodieConfigError("Creating a table needs a name: pass --table-name or hoodie.table.name.")
        props = table_config_from_write_config(self.config, self.table_name, avro_schema)
        self.table = HoodieTable.create(self.base_uri, props, self.storage_options or None)
        return self.table

    @property
    def is_mor(self) -> bool:
        return self.table is not None and self.table.table_type == "MERGE_ON_READ"

    def commit_action(self, operation: str) -> str:
        from airflow_hoodie.table.timeline.instant import Action
        if operation in ("insert_overwrite", "insert_overwrite_table"):
            return Action.REPLACE_COMMIT
        return Action.DELTA_COMMIT if self.is_mor else Action.COMMIT

    # ------------------------------------------------------------ schema
    def table_avro_schema(self) -> dict[str, Any] | None:
        """Schema of the latest completed write (extraMetadata.schema), else hoodie.table.create.schema."""
        if self.table is None:
            return None
        tl = self.table.timeline
        for inst in reversed(tl.completed_commits().instants):
            try:
                meta = json.loads(tl.read_details(inst) or b"{}")
            except (ValueError, HoodieError):
                continue
            sch = (meta.get("extraMetadata") or {}).get("schema")
            if sch:
                return json.loads(sch)
        raw = self.table.config.get("hoodie.table.create.schema") if hasattr(self.table.config, "get") else None
        return json.loads(raw) if raw else None

    # ------------------------------------------------------------ timeline
    def rollback_failed_writes(self) -> list[str]:
        """Before a write: a single writer refuses to run beside a live one; failed writes
        (heartbeat expired) are rolled back now under EAGER, by clean under LAZY."""
        if self.table is None:
            return []
        self.table.reload_timeline()
        tm = self.txn
        if not tm.is_occ:
            self._refuse_beside_live_writer()
        if tm.failed_writes_policy == EAGER:
            return rollback_failed_writes(self.table, tm, self.config)
        return []

    def _refuse_beside_live_writer(self, own: str | None = None) -> None:
        """SINGLE_WRITER: stop when another pending write has a live heartbeat."""
        live = live_writes(self.table, self.txn, exclude=own)
        if live:
            other = live[0]
            raise HoodieConcurrentWriterError(
                f"Another writer is running on {self.base_uri}: {other.action} {other.timestamp} is pending "
                f"and its heartbeat is live. {CONCURRENCY_MODE} is {SINGLE_WRITER}, so this write stops before "
                f"touching anything. Either run the table's write tasks one at a time (an Airflow pool with one "
                f"slot for this table), or let them overlap safely with {CONCURRENCY_MODE}={OCC} and a lock "
                "provider (hoodie.write.lock.provider).")

    def new_instant_time(self) -> str:
        """The table's next instant time (its time zone, after its last instant)."""
        if self.table is not None:
            return self.table.new_instant_time()
        from airflow_hoodie.table.timeline.instant import new_instant_time

        utc = self.config.get("hoodie.table.timeline.timezone", "LOCAL").upper() == "UTC"
        return new_instant_time(utc=utc, table=self.base_uri)

    def start(self, instant_time: str, action: str, operation: str) -> str:
        """Create our requested instant and start its heartbeat; returns the instant time
        actually used (with optimistic concurrency a later one when another writer took it)."""
        from airflow_hoodie.table.timeline.instant import Instant, State
        from airflow_hoodie.table.timeline.timeline import TimelineWriter
        content = b""
        if action == "replacecommit":
            content = _requested_replace_metadata(operation)
        if self.table is not None:
            self.table.prepare_for_change()
        with self.txn.transaction("start a write"):
            if self.table is not None and self.txn.is_occ:
                # under the lock no other instant can take this time (Hudi 1.x does the same)
                last = self.table.reload_timeline().last()
                if last is not None and instant_time <= last.timestamp:
                    instant_time = self.new_instant_time()
            TimelineWriter(self.storage, self.base_path).create_requested(
                Instant(instant_time, action, State.REQUESTED), content)
        self.txn.heartbeats.start(instant_time)
        # Plan on the timeline as it is now that our instant exists: a compaction or
        # clustering scheduled meanwhile is seen, and anything completing later is checked
        # for conflicts at commit.
        if self.table is not None:
            self._started = TimelineSnapshot.of(self.table.reload_timeline())
            if not self.txn.is_occ:
                # Without a lock two writers can both pass the check before either exists:
                # checked again now that ours is visible; at worst both stop, never both run.
                try:
                    self._refuse_beside_live_writer(own=instant_time)
                except HoodieConcurrentWriterError:
                    # a rollback, not a silent delete: a writer that saw our instant pending
                    # must learn it was undone, or its conflict check takes it for archived
                    self.abort(instant_time)
                    raise
        return instant_time

    def inflight(self, instant_time: str, action: str, tasks: Sequence[FileGroupTask], operation: str) -> None:
        from airflow_hoodie.table.timeline.instant import Instant, State
        from airflow_hoodie.table.timeline.timeline import TimelineWriter
        TimelineWriter(self.storage, self.base_path).transition_to_inflight(
            Instant(instant_time, action, State.REQUESTED),
            workload_profile_json(tasks, operation, commit_extra_metadata(self.config)))

    def commit(self, instant_time: str, action: str, operation: str, stats: Sequence[Mapping[str, Any]],
               avro_schema: Mapping[str, Any], replaced: Mapping[str, list[str]] | None = None) -> None:
        """Reconcile against markers, write partition metadata, complete the instant, drop markers."""
        from airflow_hoodie.table.timeline.instant import Instant, State
        from airflow_hoodie.table.timeline.timeline import TimelineWriter
        written = {st["path"] for st in stats if st.get("path")}
        for m in mk.list_markers(self.storage, self.base_path, instant_time):
            if m.io_type in (mk.IO_CREATE, mk.IO_MERGE) and m.data_path not in written:
                # a retried or speculative task left a duplicate file: Hudi deletes it before commit
                self.storage.delete(self.storage.join(self.base_path, m.data_path))
        for part in sorted({st.get("partitionPath") or "" for st in stats}):
            write_partition_metadata(self.storage, self.base_path, part, instant_time)
        schema_json = json.dumps(avro_schema, separators=(",", ":"))
        body = commit_metadata_json(stats, operation, schema_json, replaced, commit_extra_metadata(self.config))
        own = Instant(instant_time, action, State.INFLIGHT)
        groups = {(st.get("partitionPath") or "", st["fileId"]) for st in stats if st.get("fileId")}
        groups |= {(p, f) for p, ids in (replaced or {}).items() for f in ids}
        try:
            with self.txn.transaction(f"commit {instant_time}"):
                if self.table is not None and self._started is not None:
                    timeline = self.table.reload_timeline()
                    current = timeline.get(instant_time, action)
                    if current is None or current.is_completed:
                        raise HoodieWriteConflictError(
                            f"{action} {instant_time} was rolled back by another task while it ran (its heartbeat "
                            "was judged expired); nothing of it is visible. A retry of this task redoes it cleanly; "
                            "if this repeats, raise hoodie.client.heartbeat.interval_in_ms / tolerable.misses.")
                    check_no_conflict(timeline, own, groups, self._started)
                TimelineWriter(self.storage, self.base_path).complete(own, body)
        except HoodieWriteConflictError:
            self.abort(instant_time)
            raise
        self.txn.heartbeats.stop(instant_time)
        mk.delete_marker_dir(self.storage, self.base_path, instant_time)

    @contextmanager
    def aborting_on_failure(self, instant_time: str) -> Iterator[None]:
        """Whatever fails between start and commit leaves nothing behind: our instant is
        rolled back and its heartbeat removed before the error propagates (a SIGKILL
        leaves it to the next writer, once the heartbeat shows the process gone)."""
        try:
            yield
        except HoodieIOError as exc:
            self.abort(instant_time)
            if self.txn.is_occ and "does not exist" in str(exc):
                # another task (clean of replaced or old slices, a clustering) removed a file
                # this write planned on: the same situation as a failed conflict check
                raise HoodieWriteConflictError(
                    f"{exc}. A concurrent table service removed a file this write was reading; {instant_time} "
                    "was rolled back and nothing of it is visible. A retry of this task redoes it cleanly on the "
                    "current table.") from exc
            raise
        except BaseException:
            self.abort(instant_time)
            raise

    def abort(self, instant_time: str) -> None:
        """Undo our own pending instant after a failure: its files go, its heartbeat stops."""
        from airflow_hoodie.actions.rollback import discard_after_rollback, rollback_instant

        try:
            if self.table is not None:
                pending = self.table.reload_timeline().get(instant_time)
                if pending is not None and not pending.is_completed:
                    rollback_instant(self.table, instant_time, config=self.config, pending_only=True)
                elif pending is None:
                    # rolled back by another task while our tasks still wrote: what they
                    # wrote after that rollback is ours to remove
                    discard_after_rollback(self.table, instant_time)
        finally:
            self.txn.heartbeats.stop(instant_time)


def _requested_replace_metadata(operation: str) -> bytes:
    from airflow_hoodie.table.metadata import avro_codec

    return avro_codec.serialize("HoodieRequestedReplaceMetadata", {
        "operationType": OPERATION_TYPE.get(operation, operation), "clusteringPlan": None,
        "extraMetadata": {}, "version": 1})



# ---------------------------------------------------------------------------- schema evolution
_WIDENINGS = {
    pa.int8(): (pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64()),
    pa.int16(): (pa.int32(), pa.int64(), pa.float32(), pa.float64()),
    pa.int32(): (pa.int64(), pa.float32(), pa.float64()),
    pa.int64(): (pa.float32(), pa.float64()),
    pa.float32(): (pa.float64(),),
    pa.string(): (pa.large_string(),),
    pa.large_string(): (pa.string(),),
}


def _compatible(incoming: pa.DataType, stored: pa.DataType) -> bool:
    if incoming == stored or pa.types.is_null(incoming):
        return True
    if pa.types.is_timestamp(incoming) and pa.types.is_timestamp(stored):
        return True
    if pa.types.is_decimal(incoming) and pa.types.is_decimal(stored):
        return incoming.scale == stored.scale and incoming.precision <= stored.precision
    if pa.types.is_dictionary(incoming):
        return _compatible(incoming.value_type, stored)
    if pa.types.is_struct(incoming) and pa.types.is_struct(stored):
        names = {stored.field(i).name: stored.field(i).type for i in range(stored.num_fields)}
        return all(incoming.field(i).name not in names or _compatible(incoming.field(i).type, names[incoming.field(i).name])
                   for i in range(incoming.num_fields))
    if (pa.types.is_list(incoming) or pa.types.is_large_list(incoming)) and (pa.types.is_list(stored) or pa.types.is_large_list(stored)):
        return _compatible(incoming.value_type, stored.value_type)
    if pa.types.is_map(incoming) and pa.types.is_map(stored):
        return _compatible(incoming.item_type, stored.item_type)
    return stored in _WIDENINGS.get(incoming, ())


def evolve_schema(table_avro: Mapping[str, Any] | None, incoming: pa.Schema, table_name: str) -> dict[str, Any]:
    """The table's Avro schema after this batch: old fields kept, new nullable columns appended.

    A column whose type cannot be read as the stored type raises HoodieSchemaError before
    anything is written, so an incompatible batch leaves the table untouched.
    """
    from airflow_hoodie.table.schema.avro_convert import arrow_schema_to_avro, avro_to_arrow_schema, table_record_name

    incoming = pa.schema([f for f in incoming if f.name not in META_COLUMNS and f.name not in INTERNAL_COLS
                          and f.name != PARTITION_PATH and f.name != RECORD_KEY])
    rec, ns = table_record_name(table_name)
    if table_avro is None:
        fields = [pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type, True)
                  for f in incoming if f.name not in META_COLUMNS]
        fields = [pa.field(f.name, pa.string(), True) if pa.types.is_null(f.type) else f for f in fields]
        return arrow_schema_to_avro(pa.schema(fields), rec, ns)
    stored = avro_to_arrow_schema(table_avro)
    stored = pa.schema([f for f in stored if f.name not in META_COLUMNS])
    bad = []
    for f in incoming:
        if f.name in stored.names:
            st = stored.field(f.name).type
            if not _compatible(f.type, st):
                bad.append(f"{f.name}: {f.type} (table has {st})")
    if bad:
        raise HoodieSchemaError(
            "The batch is not compatible with the table schema: " + "; ".join(bad)
            + ". Cast the columns to the stored types (only widening such as int->long is allowed); "
            "the table was not changed.")
    added = [f for f in incoming if f.name not in stored.names and f.name not in META_COLUMNS]
    if not added:
        return dict(table_avro)
    evolved = pa.schema(list(stored) + [pa.field(f.name, pa.string() if pa.types.is_null(f.type) else f.type, True)
                                        for f in added])
    out = arrow_schema_to_avro(evolved, rec, ns)
    # keep the stored field definitions byte for byte
    old = {f["name"]: f for f in table_avro.get("fields", [])}
    out["fields"] = [old.get(f["name"], f) for f in out["fields"]]
    return out


# ---------------------------------------------------------------------------- records
def key_generator_props(config: HoodieConfig) -> dict[str, str]:
    props = config.as_dict()
    for k in (RECORD_KEY_FIELD, PARTITION_FIELD, "hoodie.datasource.write.keygenerator.class",
              "hoodie.datasource.write.hive_style_partitioning", "hoodie.datasource.write.partitionpath.urlencode"):
        v = config.get(k)
        if v is not None:
            props[k] = v
    props["hoodie.datasource.write.keygenerator.class"] = key_generator_class(config)
    return props


def prepare_batch(data: pa.Table, props: Mapping[str, str], operation: str) -> pa.Table:
    """Data plus ``_hoodie_record_key``, ``_hoodie_partition_path`` and ``_hoodie_op``.

    Existing meta columns in the input are replaced. ``_hoodie_is_deleted = true`` marks a
    soft delete ('S'); the delete operation marks every record 'D'.
    """
    data = data.drop_columns([c for c in META_COLUMNS + INTERNAL_COLS if c in data.column_names])
    kg = KeyGenerator.from_config(props)
    if kg.auto_record_keys:
        check_auto_keys_operation(operation)
        keys = pa.nulls(data.num_rows, pa.string())  # made by the file-group writer: they need the instant
    else:
        keys = kg.record_keys(data)
    parts = kg.partition_paths(data)
    check_partition_paths(parts)
    if operation == "delete":
        op = pa.array(["D"] * data.num_rows, pa.string())
    elif IS_DELETED in data.column_names:
        flag = pc.fill_null(data.column(IS_DELETED).cast(pa.bool_()), False)
        op = pc.if_else(flag, "S", "U")
    else:
        op = pa.array(["U"] * data.num_rows, pa.string())
    out = data
    out = out.append_column(RECORD_KEY, pa.chunked_array([keys]) if isinstance(keys, pa.Array) else keys)
    out = out.append_column(PARTITION_PATH, pa.chunked_array([parts]) if isinstance(parts, pa.Array) else parts)
    out = out.append_column(OP_COL, op if isinstance(op, (pa.Array, pa.ChunkedArray)) else pa.array(op))
    return out


def dedupe(batch: pa.Table, ordering_field: str | None, global_index: bool) -> pa.Table:
    """Keep one record per key (per key+partition for non-global indexes): greatest ordering value,
    the later record on ties (OverwriteWithLatestAvroPayload.preCombine)."""
    if batch.num_rows <= 1:
        return batch
    row = "__row"
    b = batch.append_column(row, pa.array(range(batch.num_rows), pa.int64()))
    group = [RECORD_KEY] if global_index else [RECORD_KEY, PARTITION_PATH]
    sort = [(g, "ascending") for g in group]
    if ordering_field and ordering_field in b.column_names:
        sort.append((ordering_field, "descending"))
    sort.append((row, "descending"))
    b = b.sort_by(sort)
    keys = b.column(RECORD_KEY).combine_chunks()
    first = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1))
    if not global_index:
        parts = b.column(PARTITION_PATH).combine_chunks()
        first = pc.or_(first, pc.not_equal(parts.slice(1), parts.slice(0, len(parts) - 1)))
    mask = pa.concat_arrays([pa.array([True]), pc.fill_null(first, True)])
    out = b.filter(mask)
    return out.sort_by(row).drop_columns([row])


def ordering_field_for_merge(config: HoodieConfig) -> str | None:
    """Ordering-aware merging (DefaultHoodieRecordPayload semantics) only when asked for."""
    payload = config.get("hoodie.datasource.write.payload.class") or ""
    explicit = config.get("hoodie.payload.ordering.field") if "hoodie.payload.ordering.field" in config else None
    if explicit:
        return explicit
    if payload.endswith("DefaultHoodieRecordPayload"):
        return config.get(PRECOMBINE_FIELD)
    return None


def tag_records(batch: pa.Table, existing: pa.Table, index_type: str, update_partition_path: bool) -> pa.Table:
    """Index tagging: location columns filled; a global index with a changed partition either
    moves the record (delete in the old group + insert in the new partition) or keeps it in
    its old partition."""
    from airflow_hoodie.actions.index import LOC_FILE, LOC_PART, is_global, lookup

    glob = is_global(index_type)
    tagged = lookup(batch, existing, glob)
    if not glob:
        return tagged
    moved = pc.fill_null(pc.and_(pc.is_valid(tagged.column(LOC_PART)),
                                 pc.not_equal(tagged.column(LOC_PART), tagged.column(PARTITION_PATH))), False)
    if not pc.any(moved).as_py():
        return tagged
    if update_partition_path:
        old = tagged.filter(moved)
        dels = old.set_column(old.column_names.index(OP_COL), OP_COL, pa.array(["D"] * old.num_rows, pa.string()))
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


# ---------------------------------------------------------------------------- planning
@dataclass
class WritePlan:
    tasks: list[FileGroupTask]
    routed: pa.Table                       # prepared records with BUCKET_COL
    replaced: dict[str, list[str]] | None  # partition -> replaced file ids (replacecommit)


def dedupe_enabled(config: HoodieConfig, operation: str) -> bool:
    if operation == "upsert":
        return config.get_bool("hoodie.combine.before.upsert")
    if operation == "delete":
        return config.get_bool("hoodie.combine.before.delete")
    return config.get_bool("hoodie.combine.before.insert")


def file_refs(client: WriteClient, files: Sequence[ExistingFile]) -> list[Any]:
    from airflow_hoodie.actions.index import FileRef
    tl = client.table.timeline
    valid = [i.timestamp for i in tl.completed().instants]
    latest = valid[-1] if valid else ""
    return [FileRef(client.base_uri, client.storage_options, f.partition_path, f.file_id,
                    f.lookup_base_file if f.lookup_log_files is not None else f.base_file,
                    list(f.lookup_log_files if f.lookup_log_files is not None else f.log_files),
                    f.base_instant, valid, latest, tl.first_non_savepoint_commit()) for f in files]


def lookup_existing_keys(client: WriteClient, batch: pa.Table, files: Sequence[ExistingFile], index_type: str,
                         executor: Any, prune_by_ranges: bool = True) -> pa.Table:
    """Keys of the candidate files as (key, partition, file_id); BLOOM prunes files first."""
    from airflow_hoodie.actions.index import KEYS_SCHEMA, bloom_candidates, file_footer, file_keys
    refs = file_refs(client, files)
    if not refs:
        return KEYS_SCHEMA.empty_table()
    if index_type in ("BLOOM", "GLOBAL_BLOOM"):
        footers = executor.map(file_footer, refs)
        keep = []
        for ref, ft in zip(refs, footers):
            keys = batch.column(RECORD_KEY).combine_chunks()
            if index_type == "BLOOM":
                keys = pc.filter(keys, pc.equal(batch.column(PARTITION_PATH), ref.partition_path))
            if len(keys) and pc.any(bloom_candidates(keys, ft, prune_by_ranges)).as_py():
                keep.append(ref)
        refs = keep
    tables = executor.map(file_keys, refs)
    return pa.concat_tables(tables) if tables else KEYS_SCHEMA.empty_table()


def plan_write(client: WriteClient, prepared: pa.Table, operation: str, config: HoodieConfig,
               executor: Any) -> WritePlan:
    """Tag, bucket and route one prepared batch (pure Arrow; the Spark path has its own)."""
    from airflow_hoodie.actions.index import LOC_FILE, LOC_PART, is_global, validate_index_type

    index_type = validate_index_type(config.get("hoodie.index.type") or "SIMPLE")
    glob = is_global(index_type)
    batch = prepared
    if dedupe_enabled(config, operation):
        batch = dedupe(batch, config.get(PRECOMBINE_FIELD), glob)
    is_mor = client.is_mor
    files: list[ExistingFile] = []
    replaced: dict[str, list[str]] | None = None
    batch_parts = sorted(set(batch.column(PARTITION_PATH).to_pylist())) if batch.num_rows else []
    if client.table is not None:
        if operation in ("upsert", "delete") and glob:
            files = existing_files(client.table)
        else:
            files = existing_files(client.table, batch_parts)
    if operation in ("upsert", "delete") and client.table is not None:
        existing = lookup_existing_keys(client, batch, files, index_type, executor,
                                        config.get_bool("hoodie.bloom.index.prune.by.ranges"))
        upd_flag = config.get_bool("hoodie.bloom.index.update.partition.path" if "BLOOM" in index_type
                                   else "hoodie.simple.index.update.partition.path")
        batch = tag_records(batch, existing, index_type, upd_flag)
    else:
        batch = batch.append_column(LOC_PART, pa.nulls(batch.num_rows, pa.string())) \
                     .append_column(LOC_FILE, pa.nulls(batch.num_rows, pa.string()))
    found = pc.is_valid(batch.column(LOC_FILE))
    ops = batch.column(OP_COL)
    # deletes of unknown keys and soft deletes of new keys write nothing
    useless = pc.and_(pc.invert(found), pc.is_in(ops, value_set=DELETE_OPS))
    batch = batch.filter(pc.invert(useless))
    found = pc.is_valid(batch.column(LOC_FILE))
    if operation in ("insert_overwrite", "insert_overwrite_table"):
        scope = existing_files(client.table) if (client.table is not None and operation == "insert_overwrite_table") else files
        replaced = {}
        for f in scope:
            replaced.setdefault(f.partition_path, []).append(f.file_id)
        files = []
    upd = batch.filter(found)
    ins = batch.filter(pc.invert(found))
    update_counts: dict[tuple[str, str], int] = {}
    if upd.num_rows:
        g = upd.group_by([LOC_PART, LOC_FILE]).aggregate([(RECORD_KEY, "count")])
        for p, f, n in zip(g.column(LOC_PART).to_pylist(), g.column(LOC_FILE).to_pylist(),
                           g.column(RECORD_KEY + "_count").to_pylist()):
            update_counts[(p, f)] = n
    insert_counts: dict[str, int] = {}
    if ins.num_rows:
        g = ins.group_by([PARTITION_PATH]).aggregate([([], "count_all")])  # keys may be null (auto keys)
        insert_counts = dict(zip(g.column(PARTITION_PATH).to_pylist(), g.column("count_all").to_pylist()))
    avg = average_record_size(client.table, config) if client.table is not None else \
        config.get_int("hoodie.copyonwrite.record.size.estimate")
    tasks, insert_plan = assign_buckets(update_counts, insert_counts, files, config, avg, is_mor,
                                        use_small_files=operation not in ("bulk_insert",))
    bucket_of = {(t.partition_path, t.file_id): t.bucket for t in tasks if t.kind == "UPDATE"}
    pieces = []
    if upd.num_rows:
        b = [bucket_of[(p, f)] for p, f in zip(upd.column(LOC_PART).to_pylist(), upd.column(LOC_FILE).to_pylist())]
        pieces.append(upd.append_column(BUCKET_COL, pa.array(b, pa.int32())))
    if ins.num_rows:
        if operation == "bulk_insert":
            ins = ins.sort_by([(PARTITION_PATH, "ascending"), (RECORD_KEY, "ascending")])
        for part, plan in insert_plan.items():
            rows = ins.filter(pc.equal(ins.column(PARTITION_PATH), part))
            start = 0
            for bucket, count in plan:
                chunk = rows.slice(start, count)
                start += count
                pieces.append(chunk.append_column(BUCKET_COL, pa.array([bucket] * chunk.num_rows, pa.int32())))
    routed = pa.concat_tables(pieces) if pieces else batch.append_column(BUCKET_COL, pa.array([], pa.int32()))
    return WritePlan(tasks, routed, replaced)


def _run_bucket(ctx: WriteContext, item: tuple[FileGroupTask, pa.Table]) -> list[dict[str, Any]]:
    return write_file_group(ctx, item[0], item[1])


def summarize(result: WriteResult, stats: Sequence[Mapping[str, Any]]) -> WriteResult:
    result.inserts = sum(int(s.get("numInserts") or 0) for s in stats)
    result.updates = sum(int(s.get("numUpdateWrites") or 0) for s in stats)
    result.deletes = sum(int(s.get("numDeletes") or 0) for s in stats)
    result.files_written = len({s.get("path") for s in stats if s.get("path")})
    result.bytes_written = sum(int(s.get("totalWriteBytes") or 0) for s in stats)
    result.partitions = len({s.get("partitionPath") for s in stats})
    return result


def begin_write(client: WriteClient, data_schema: pa.Schema, operation: str, sample: pa.Table | None = None
                ) -> tuple[HoodieConfig, dict[str, Any], list[str]]:
    """Validation + schema + table creation + failed-write rollback; nothing is written before
    the batch is known to be valid. Returns (effective config, avro schema, rolled back)."""
    if operation not in OPERATIONS:
        raise HoodieConfigError(f"--operation {operation!r} is not one of {', '.join(OPERATIONS)}.")
    client.load_table()
    cfg = client.effective_config()
    from airflow_hoodie.actions.index import validate_index_type
    validate_index_type(cfg.get("hoodie.index.type") or "SIMPLE")
    tt = (cfg.get(TABLE_TYPE) or "COPY_ON_WRITE")
    if tt not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        raise HoodieConfigError(f"hoodie.table.type={tt!r} is not a table type; use COPY_ON_WRITE or MERGE_ON_READ.")
    if not cfg.get_list(RECORD_KEY_FIELD):
        check_auto_keys_operation(operation)
        if dedupe_enabled(cfg, operation):
            raise HoodieConfigError(
                "hoodie.combine.before.insert needs record keys to combine on; this table generates its keys "
                "(no hoodie.datasource.write.recordkey.field). Drop the setting or configure a record key.")
    for f in cfg.get_list(RECORD_KEY_FIELD):
        if f not in data_schema.names:
            raise HoodieError(f"Record key field {f!r} is not a column of the input (columns: {', '.join(data_schema.names)}); "
                              "set hoodie.datasource.write.recordkey.field to an existing column.")
    pre = cfg.get(PRECOMBINE_FIELD)
    pre_explicit = PRECOMBINE_FIELD in cfg or (client.table is not None and client.table.config.precombine_field)
    if pre and pre_explicit and pre not in data_schema.names and operation != "delete":
        raise HoodieError(f"Precombine field {pre!r} is not a column of the input; set "
                          "hoodie.datasource.write.precombine.field to an existing column.")
    for f in cfg.get_list(PARTITION_FIELD):
        name = f.split(":")[0]
        if name not in data_schema.names:
            raise HoodieError(f"Partition path field {name!r} is not a column of the input; set "
                              "hoodie.datasource.write.partitionpath.field to existing columns.")
    name = client.table_name or (client.table.config.table_name if client.table is not None else None)
    if not name:
        raise HoodieConfigError("Creating a table needs a name: pass --table-name or hoodie.table.name.")
    client.table_name = name
    avro = evolve_schema(client.table_avro_schema(), data_schema, name)
    if client.table is None:
        if operation == "delete":
            raise HoodieError(f"No Hudi table at {client.base_uri} to delete from.")
        client.create_table(avro)
    rolled = client.rollback_failed_writes()
    return cfg, avro, rolled


def write_arrow(base_uri: str, data: pa.Table, operation: str, config: HoodieConfig | Mapping[str, str],
                table_name: str | None = None, storage_options: Mapping[str, str] | None = None,
                executor: Any = None) -> WriteResult:
    """The whole write flow over an in-memory Arrow table (local tests, small batches)."""
    from airflow_hoodie.actions.executor import LocalExecutor
    config = config if isinstance(config, HoodieConfig) else HoodieConfig(dict(config))
    executor = executor or LocalExecutor()
    client = WriteClient(base_uri, config, storage_options, table_name)
    data = data.drop_columns([c for c in META_COLUMNS if c in data.column_names])
    cfg, avro, rolled = begin_write(client, data.schema, operation)
    prepared = prepare_batch(data, key_generator_props(cfg), operation)
    instant = client.new_instant_time()
    action = client.commit_action(operation)
    instant = client.start(instant, action, operation)
    with client.aborting_on_failure(instant):
        plan = plan_write(client, prepared, operation, cfg, executor)
        client.inflight(instant, action, plan.tasks, operation)
        ctx = make_context(client, cfg, instant, operation, avro)
        items = []
        for t in plan.tasks:
            rows = plan.routed.filter(pc.equal(plan.routed.column(BUCKET_COL), t.bucket))
            items.append((t, rows))
        from functools import partial
        stats = [s for group in executor.map(partial(_run_bucket, ctx), items) for s in group]
        client.commit(instant, action, operation, stats, avro, plan.replaced)
    result = WriteResult(instant, action, "COMPLETED", operation, rolled_back=rolled,
                         unknown_keys=config.unknown_keys(),
                         replaced_file_groups=sum(len(v) for v in (plan.replaced or {}).values()))
    summarize(result, stats)
    _maybe_callback(client, cfg, result)
    return result


def make_context(client: WriteClient, cfg: HoodieConfig, instant: str, operation: str,
                 avro: Mapping[str, Any]) -> WriteContext:
    return WriteContext(
        base_uri=client.base_uri, storage_options=client.storage_options, instant_time=instant,
        table_type=client.table.table_type, table_name=client.table_name or "", avro_schema=dict(avro),
        props={**cfg.as_dict(), **{k: cfg.get(k) for k in (
            "hoodie.parquet.compression.codec", "hoodie.logfile.max.size", "hoodie.logfile.data.block.max.size",
            "hoodie.index.bloom.num_entries", "hoodie.index.bloom.fpp", "hoodie.bloom.index.filter.type",
            "hoodie.bloom.index.filter.dynamic.max.entries", "hoodie.parquet.page.size") if cfg.get(k) is not None}},
        ordering_field=ordering_field_for_merge(cfg), operation=operation,
    )


def _maybe_callback(client: WriteClient, cfg: HoodieConfig, result: WriteResult) -> None:
    if not cfg.get_bool("hoodie.write.commit.callback.on", False):
        return
    from airflow_hoodie.actions.commit_callback import send_commit_callback
    send_commit_callback(cfg, client.table_name or "", client.base_uri, result.as_dict())
