"""The write flow, one for both engines: validate and create the table, then tag, bucket and route.

The flow is Hudi's (HoodieSparkSqlWriter -> SparkRDDWriteClient): roll back failed
earlier writes, create ``<ts>.<action>.requested``, tag records with their current file
group (index), assign buckets (updates to their group, inserts to small files then new
groups), write one task per file group, then complete the instant with the commit
metadata. :func:`write_arrow` runs it over in-memory Arrow data; ``spark/upsert.py`` runs the
same steps (:func:`begin_write`, :func:`index_scope`, :func:`replaced_file_groups`, the
write client) with DataFrames for the data-parallel ones.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Mapping, Protocol, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.actions.bucket_index_write import (
    BucketRouting,
    bucket_counts_known,
    refuse_unbucketed_write,
    routing_for,
    tag_by_bucket,
)
from airflow_hoodie.actions.bucketing import (
    assign_bucket_tasks,
    assign_buckets,
    average_record_size,
    existing_files,
)
from airflow_hoodie.actions.cdc_write import refuse_unsupported_cdc
from airflow_hoodie.actions.consistent_bucket_write import consistent_routing, refuse_unsupported_bucket_layout
from airflow_hoodie.actions.commit_callback import send_commit_callback
from airflow_hoodie.actions.executor import Executor, LocalExecutor
from airflow_hoodie.actions.file_group_write import (
    FileGroupTask,
    WriteContext,
    write_file_group,
)
from airflow_hoodie.actions.index import (
    KEYS_SCHEMA,
    LOC_FILE,
    LOC_PART,
    FileRef,
    is_global,
    keys_by_partition,
    metadata_footers,
    probe_file,
    record_index_lookup,
    stored_records,
)
from airflow_hoodie.actions.schema_evolution import evolve_schema
from airflow_hoodie.actions.service_common import table_props
from airflow_hoodie.actions.write_client import WriteClient, WriteResult
from airflow_hoodie.actions.transaction.nbcc import check_nbcc_write
from airflow_hoodie.actions.write_config import (
    with_table_settings,
    write_table_version,
)
from airflow_hoodie.actions.write_records import (
    BUCKET_COL,
    DELETE_OPS,
    OP_COL,
    check_auto_keys_operation,
    dedupe,
    prepare_batch,
    tag_records,
)
from airflow_hoodie.actions.write_settings import WriteRequest, WriteSettings
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.write import BUCKET_ENGINE
from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieError,
    HoodieNotSupportedError,
)
from airflow_hoodie.table.bucket_index import BUCKET_INDEX_META_FOLDER
from airflow_hoodie.table.file_group.file_system_view import ExistingFile
from airflow_hoodie.table.metadata_table.record_index import has_record_index
from airflow_hoodie.table.record_merger import MergeConfig
from airflow_hoodie.table.schema.meta_fields import (
    META_COLUMNS,
    PARTITION_PATH,
    RECORD_KEY,
)


def file_refs(client: WriteClient, files: Sequence[ExistingFile], key_generator: Mapping[str, str]) -> list[Any]:
    """What a lookup task needs of each file group; ``key_generator``: the write's key
    generator properties, which derive the stored keys of a table without meta fields."""
    tl = client.table.timeline
    valid = [i.timestamp for i in tl.completed().instants]
    latest = valid[-1] if valid else ""
    keygen = None if client.table.config.populate_meta_fields else dict(key_generator)
    return [FileRef(client.base_uri, client.storage_options, f.partition_path, f.file_id,
                    f.lookup_base_file if f.lookup_log_files is not None else f.base_file,
                    list(f.lookup_log_files if f.lookup_log_files is not None else f.log_files),
                    f.base_instant, valid, latest, tl.first_non_savepoint_commit(), keygen) for f in files]


def lookup_existing_keys(client: WriteClient, batch: pa.Table, files: Sequence[ExistingFile], settings: WriteSettings,
                         executor: Executor) -> pa.Table:
    """(key, partition, file_id) of the batch's keys found in the candidate files: one task
    per file gets the batch keys that may live there (its partition's, or all of them for a
    global index) and returns only the ones it holds."""
    refs = file_refs(client, files, settings.key_generator)
    index_type, prune_by_ranges = settings.index_type, settings.bloom_prune_by_ranges
    use_metadata = settings.bloom_use_metadata
    keys = batch.column(RECORD_KEY).combine_chunks()
    if not refs or not len(keys):
        return KEYS_SCHEMA.empty_table()
    if uses_record_index(client, index_type):
        return record_index_lookup(client.table, keys)
    bloom = index_type in ("BLOOM", "GLOBAL_BLOOM")
    # hoodie.bloom.index.use.metadata: ranges and filters from the metadata table (index.py)
    footers = metadata_footers(client.table, refs, prune_by_ranges) if bloom and use_metadata and \
        client.table is not None else {}
    if is_global(index_type):
        # any file may hold any key: the keys travel once, with the function, not per file
        items = [(ref, footers.get((ref.partition_path, ref.file_id))) for ref in refs]
        tables = executor.map(partial(_probe_for_all, keys, bloom, prune_by_ranges), items)
    else:
        by_part = keys_by_partition(keys, batch.column(PARTITION_PATH).combine_chunks())
        items = [(ref, by_part[ref.partition_path], footers.get((ref.partition_path, ref.file_id)))
                 for ref in refs if ref.partition_path in by_part]
        tables = executor.map(partial(_probe_for_partition, bloom, prune_by_ranges), items)
    found = [t for t in tables if t.num_rows]
    return pa.concat_tables(found) if found else KEYS_SCHEMA.empty_table()


def uses_record_index(client: WriteClient, index_type: str) -> bool:
    """RECORD_INDEX tags through the metadata table's record index when the table has one;
    without it Hudi's writer falls back to GLOBAL_SIMPLE (so do we: same answer, by scan)."""
    return index_type == "RECORD_INDEX" and client.table is not None and has_record_index(client.table.config)


def _probe_for_all(keys: pa.Array, bloom: bool, prune_by_ranges: bool, item: tuple[Any, Any]) -> pa.Table:
    return probe_file(item[0], keys, bloom, prune_by_ranges, item[1])


def _probe_for_partition(bloom: bool, prune_by_ranges: bool, item: tuple[Any, pa.Array, Any]) -> pa.Table:
    return probe_file(item[0], item[1], bloom, prune_by_ranges, item[2])


def index_scope(client: WriteClient, operation: str, global_index: bool, batch_partitions: Sequence[str]
                ) -> list[ExistingFile]:
    """The file groups a write looks at: every one for a global index's upsert or delete
    (a key may live in any partition), else those of the batch's partitions."""
    if client.table is None:
        return []
    if operation in ("upsert", "delete") and global_index:
        return existing_files(client.table)
    return existing_files(client.table, batch_partitions)


def partition_move_merge(client: WriteClient, settings: WriteSettings) -> tuple[list[str], MergeConfig | None]:
    """(ordering fields, the table's merge semantics) when a record that changes partition
    must first be merged with the stored one (:func:`tag_records`): a global index that
    moves records, under event-time ordering. Else ([], None): the incoming record wins
    and moves without a read."""
    if client.table is None or not (is_global(settings.index_type) and settings.update_partition_path):
        return [], None
    ordering = list(settings.merge_ordering_fields)
    if not ordering:
        return [], None
    return ordering, MergeConfig.from_properties(table_props(client.table))


def replaced_file_groups(client: WriteClient, operation: str, files: list[ExistingFile]
                         ) -> tuple[dict[str, list[str]] | None, list[ExistingFile]]:
    """What an insert_overwrite replaces (the batch's partitions, or the whole table), and
    the files left for bucketing (none: an overwrite never appends to a replaced group)."""
    if operation not in ("insert_overwrite", "insert_overwrite_table"):
        return None, files
    scope = existing_files(client.table) if (client.table is not None and operation == "insert_overwrite_table") \
        else files
    replaced: dict[str, list[str]] = {}
    for f in scope:
        replaced.setdefault(f.partition_path, []).append(f.file_id)
    return replaced, []


def _run_bucket(ctx: WriteContext, item: tuple[FileGroupTask, pa.Table | tuple[pa.Table, np.ndarray]]
                ) -> list[dict[str, Any]]:
    """One task's write: its rows, or (the batch, its rows' numbers there) to take them here."""
    task, rows = item
    if isinstance(rows, tuple):
        batch, at = rows
        rows = batch.take(pa.array(at)).append_column(BUCKET_COL, pa.array(np.full(len(at), task.bucket, np.int32)))
    return write_file_group(ctx, task, rows)


def summarize(result: WriteResult, stats: Sequence[Mapping[str, Any]]) -> WriteResult:
    result.inserts = sum(int(s.get("numInserts") or 0) for s in stats)
    result.updates = sum(int(s.get("numUpdateWrites") or 0) for s in stats)
    result.deletes = sum(int(s.get("numDeletes") or 0) for s in stats)
    result.files_written = len({s.get("path") for s in stats if s.get("path")})
    result.bytes_written = sum(int(s.get("totalWriteBytes") or 0) for s in stats)
    result.partitions = len({s.get("partitionPath") for s in stats})
    return result


OPERATION_KEY = "hoodie.datasource.write.operation"


def begin_write(client: WriteClient, data_schema: pa.Schema, operation: str, sample: pa.Table | None = None
                ) -> tuple[WriteSettings, dict[str, Any]]:
    """Validation of the batch's schema and keys against the settings and the table; writes
    nothing (a refused first write must not leave an empty table behind: the table is made
    by :func:`open_for_write` once the records passed too). Returns the write's settings,
    parsed once from its effective options (the job's over the table's), and the avro schema."""
    request = client.request_for(operation)
    # Hudi's writers take the operation from this key: a props file carried over from one
    # would otherwise do something else here, silently
    named = client.config.get(OPERATION_KEY) if OPERATION_KEY in client.config else None
    if named and named.strip().lower() != operation:
        raise HoodieConfigError(
            f"The settings say {OPERATION_KEY}={named} but this write is a {operation}; nothing was written. Drop "
            f"the setting, or run the {named.strip().lower()} operation.")
    client.load_table()
    settings = WriteSettings.from_config(
        with_table_settings(client.effective_config(), client.table.config if client.table is not None else None),
        request, client.table.config.as_dict() if client.table is not None else None)
    refuse_unsupported_cdc(settings.cdc, operation, settings.file.populate_meta_fields)
    check_nbcc_write(client.lock, settings.table_type, settings.index_type, client.config.get(BUCKET_ENGINE),
                     client.table.config.table_version if client.table is not None else write_table_version(client.config))
    if not settings.record_key_fields:
        check_auto_keys_operation(operation)
        if settings.dedupe:
            raise HoodieConfigError(
                "hoodie.combine.before.insert needs record keys to combine on; this table generates its keys "
                "(no hoodie.datasource.write.recordkey.field). Drop the setting or configure a record key.")
    for f in settings.record_key_fields:
        if f not in data_schema.names:
            raise HoodieError(f"Record key field {f!r} is not a column of the input (columns: {', '.join(data_schema.names)}); "
                              "set hoodie.datasource.write.recordkey.field to an existing column.")
    pre_explicit = settings.ordering_named or (client.table is not None and client.table.config.ordering_fields)
    for pre in settings.ordering_fields if pre_explicit and operation != "delete" else []:
        if pre not in data_schema.names:
            raise HoodieError(f"Precombine field {pre!r} is not a column of the input; set "
                              "hoodie.datasource.write.precombine.field (or hoodie.table.ordering.fields) to existing "
                              "columns.")
    for f in settings.partition_fields:
        name = f.split(":")[0]
        if name not in data_schema.names:
            raise HoodieError(f"Partition path field {name!r} is not a column of the input; set "
                              "hoodie.datasource.write.partitionpath.field to existing columns.")
    name = client.table_name or (client.table.config.table_name if client.table is not None else None)
    if not name:
        raise HoodieConfigError("Creating a table needs a name: pass --table-name or hoodie.table.name.")
    client.table_name = name
    # a delete carries only keys; Hudi writes no data columns for it
    avro = evolve_schema(client.table_avro_schema(), data_schema, name, fill_missing=settings.fill_missing_columns,
                         drop_missing=settings.drop_missing_columns)
    if client.table is None and operation == "delete":
        raise HoodieError(f"No Hudi table at {client.base_uri} to delete from.")
    return settings, avro


def check_bucket_layout(client: WriteClient, settings: WriteSettings, batch_partitions: Sequence[str]) -> None:
    """Before any change: a write whose index is not BUCKET into a table laid out by bucket is
    refused, and so is a bucket-index write into groups not named by bucket
    (:mod:`bucket_index_write` says why). The batch's partitions are judged by their own
    groups; a batch of new partitions only, by the whole table's."""
    table_type = client.table.table_type if client.table is not None else \
        (client.config.get("hoodie.table.type") or "COPY_ON_WRITE").upper()
    refuse_unsupported_bucket_layout(client.table, settings.bucket, table_type)
    if client.table is None:
        return
    table = client.table
    if settings.bucket is not None and settings.bucket.consistent:
        return  # its groups are checked against the rings when the write routes them
    if settings.bucket is not None and table.storage.exists(table.storage.join(table.base_path,
                                                                               BUCKET_INDEX_META_FOLDER)):
        raise HoodieNotSupportedError(
            f"{table.base_uri} keeps bucket-index metadata in {BUCKET_INDEX_META_FOLDER} (Hudi's consistent-hashing "
            "or partition-level bucket index: bucket counts vary by partition or over time), which a simple bucket "
            "index with one hoodie.bucket.index.num.buckets cannot follow. Nothing was written. Write this table "
            "with Hudi's own writers.")
    # the view the write loaded (and will plan on): the check lists nothing more
    view = table.loaded_view(client.action.change.metadata is not None)
    files = view.existing_files(batch_partitions) if batch_partitions else []
    if not files:
        files = view.existing_files(None)
    if settings.bucket is None:
        refuse_unbucketed_write(files, settings.index_type)
    else:
        routing_for(files, settings.bucket, client.table.format.release.bucket_hash_key_parser)


def open_for_write(client: WriteClient, avro: Mapping[str, Any]) -> list[str]:
    """Create the table on its first write and roll back failed writes; called once the
    batch's records (keys, partition paths, ordering values) passed validation. Returns the
    rolled back instants."""
    if client.table is None:
        client.create_table(avro)
    return client.rollback_failed_writes()


class WriteEngine(Protocol):
    """The data-parallel steps of a write, over one engine's records (Arrow in-process, or a
    Spark DataFrame). The flow around them (:func:`run_write`) is one: timeline, index
    scope, bucketing and commit never depend on the engine."""

    def prepare(self, settings: WriteSettings) -> list[str]:
        """Add keys, partition paths and operations, dedupe; return the batch's partitions."""

    def tag(self, client: WriteClient, settings: WriteSettings, files: list[ExistingFile]) -> None:
        """Locate each record's existing file group (upsert, delete)."""

    def untag(self) -> None:
        """Mark every record new (inserts, or nothing to look up)."""

    def tag_buckets(self, routing: BucketRouting) -> None:
        """Locate each record at its bucket's group (simple bucket index); name the new
        groups in ``routing``."""

    def bucket_counts(self) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        """Updates per (partition, file group) and inserts per partition."""

    def write(self, tasks: list[FileGroupTask], insert_plan: Mapping[str, list[tuple[int, int]]],
              ctx: WriteContext) -> list[dict[str, Any]]:
        """Route records to their buckets and write one file group per task; the write stats."""

    def report(self, message: str) -> None:
        """A progress line (jobs print them into the task log)."""

    def release(self) -> None:
        """Free what the engine kept for the write."""


def run_write(client: WriteClient, engine: WriteEngine, data_schema: pa.Schema, operation: str) -> WriteResult:
    """The write flow (Hudi's HoodieSparkSqlWriter -> SparkRDDWriteClient), for every engine."""
    settings, avro = begin_write(client, data_schema, operation)
    index_type = settings.index_type
    batch_parts = engine.prepare(settings)
    check_bucket_layout(client, settings, batch_parts)
    rolled = open_for_write(client, avro)
    started = time.monotonic()
    action = client.commit_action(operation)
    instant = client.start(client.new_instant_time(), action, operation)
    with client.aborting_on_failure(instant):
        files = index_scope(client, operation, is_global(index_type), batch_parts)
        if settings.bucket is not None:
            tasks, insert_plan, files, replaced = _bucket_tasks(client, engine, settings, files, batch_parts)
        else:
            if operation in ("upsert", "delete") and files:
                engine.tag(client, settings, files)
            else:
                engine.untag()
            replaced, files = replaced_file_groups(client, operation, files)
            upd_counts, ins_counts = engine.bucket_counts()
            n_upd, n_ins = sum(upd_counts.values()), sum(ins_counts.values())
            engine.report(f"indexing {n_upd + n_ins:,} records against {len(files):,} files: "
                          f"{n_upd:,} to existing file groups, {n_ins:,} new")
            tasks, insert_plan = assign_buckets(upd_counts, ins_counts, files, settings.sizing, settings.index_type,
                                                average_record_size(client.table, settings.sizing), client.is_mor,
                                                use_small_files=operation != "bulk_insert")
        client.inflight(instant, action, tasks, operation)
        engine.report(f"writing {len(tasks):,} file groups ({sum(t.kind == 'INSERT' for t in tasks):,} new) "
                      f"for {action} {instant}")
        stats = engine.write(tasks, insert_plan, make_context(client, settings, instant, avro))
        done = client.commit(instant, action, operation, stats, avro, replaced, bucket_scope=settings.bucket is not None)
    engine.report(f"committed {action} {instant} in {time.monotonic() - started:.1f} s")
    engine.release()
    result = WriteResult(instant, action, "COMPLETED", operation, rolled_back=rolled,
                         unknown_keys=client.config.unknown_keys(),
                         replaced_file_groups=sum(len(v) for v in (replaced or {}).values()),
                         completion_time=done.completion_time)
    summarize(result, stats)
    run_commit_callback(client, settings, result)
    return result


def _bucket_tasks(client: WriteClient, engine: WriteEngine, settings: WriteSettings, files: list[ExistingFile],
                  partitions: Sequence[str] = ()) -> tuple[list[FileGroupTask], dict[str, list[tuple[int, int]]], list[ExistingFile],
                             dict[str, list[str]] | None]:
    """Tagging and bucketing of a simple-bucket-index write: every record to its bucket's
    group (an insert_overwrite replaces the partitions' groups and starts new ones). Returns
    (tasks, insert plan (empty: inserts are located too), the groups kept, replaced groups)."""
    assert settings.bucket is not None and client.table is not None
    replaced, files = replaced_file_groups(client, settings.operation, files)
    parser = client.table.format.release.bucket_hash_key_parser
    nbcc = client.lock.is_nbcc  # new groups under the fixed NBCC id, written as logs
    routing = consistent_routing(client.table, files, partitions, settings.bucket, parser, client.config.get) \
        if settings.bucket.consistent else routing_for(files, settings.bucket, parser, nbcc)
    engine.tag_buckets(routing)
    counts, _ = engine.bucket_counts()
    existing, created = bucket_counts_known(counts, routing)
    engine.report(f"bucket index ({settings.bucket.num_buckets} buckets): {sum(existing.values()):,} records to "
                  f"{len(existing):,} existing bucket groups, {sum(n for _p, _f, n in created):,} to "
                  f"{len(created):,} new ones")
    tasks = assign_bucket_tasks(existing, created, files, routing.child_groups(), new_groups_as_logs=nbcc)
    children = routing.child_groups()
    # the resizes this write dual-writes for: its commit checks they still exist (rolled back: conflict)
    client.dual_writes = {(t.partition_path, t.file_id): children[(t.partition_path, t.file_id)] for t in tasks
                          if (t.partition_path, t.file_id) in children}
    return tasks, {}, files, replaced


def partition_key_order(batch: pa.Table, rows: np.ndarray) -> np.ndarray:
    """Positions in ``rows`` that sort them by (partition path, record key), ties in row
    order: the keys sorted alone, then grouped by partition in a stable sort of each
    partition's rank. Arrow's sort on both string columns compares the partition string of
    every pair first, which took 0.14 s for the 1M rows of a bulk_insert, this 0.07 s."""
    part = batch.column(PARTITION_PATH)
    keys = batch.column(RECORD_KEY)
    if len(rows) != batch.num_rows:  # all rows (a bulk_insert's) need no copy
        part, keys = part.take(pa.array(rows)), keys.take(pa.array(rows))
    if part.null_count:  # (refused before a write gets here) the plain two-column sort
        return pc.sort_indices(pa.table({"p": part, "k": keys}), [("p", "ascending"), ("k", "ascending")]).to_numpy()
    by_key = pc.sort_indices(keys).to_numpy()
    codes = pc.dictionary_encode(part.combine_chunks())
    rank = pc.rank(codes.dictionary, "ascending").to_numpy()
    return by_key[np.argsort(rank[codes.indices.to_numpy()[by_key]], kind="stable")]


def route_rows(batch: pa.Table, tasks: Sequence[FileGroupTask], insert_plan: Mapping[str, list[tuple[int, int]]],
               sort_inserts: bool) -> tuple[np.ndarray, np.ndarray]:
    """(row numbers of ``batch`` grouped by bucket, each one's bucket, ascending): a bucket's
    updates in batch order, then its inserts in their partition's order (by key for a
    bulk_insert); a partition's inserts fill its ``insert_plan`` buckets in turn. One take of
    these rows routes the batch: filtering it once per partition and again once per bucket
    cost 34 of the 100k-record upsert's 660 ms of write CPU (10 file groups)."""
    found = pc.is_valid(batch.column(LOC_FILE)).to_numpy(zero_copy_only=False)
    upd = np.flatnonzero(found)
    ins = np.flatnonzero(~found)
    bucket = np.full(batch.num_rows, -1, np.int32)
    if len(upd):
        # a bucket index locates records at new groups too (INSERT tasks named by bucket), so
        # every record of a bucket-index write is located: each (partition, file group) is
        # one integer (partition code * file codes + file code), not a joined string per record
        located = batch.select([LOC_PART, LOC_FILE]).take(pa.array(upd)).combine_chunks()
        parts = {p: i for i, p in enumerate(sorted({t.partition_path for t in tasks}))}
        fids = {f: i for i, f in enumerate(sorted({t.file_id for t in tasks}))}
        width = max(1, len(fids))
        part_code = pc.index_in(located.column(LOC_PART).chunk(0), value_set=pa.array(list(parts), pa.string()))
        file_code = pc.index_in(located.column(LOC_FILE).chunk(0), value_set=pa.array(list(fids), pa.string()))
        code = pc.add(pc.multiply(part_code.cast(pa.int64()), width), file_code.cast(pa.int64()))
        at = pc.index_in(code, value_set=pa.array([parts[t.partition_path] * width + fids[t.file_id] for t in tasks],
                                                  pa.int64()))
        if at.null_count:  # every located record has its task
            missing = located.filter(pc.is_null(at)).slice(0, 1).to_pylist()[0]
            raise KeyError((missing[LOC_PART], missing[LOC_FILE]))
        bucket[upd] = pa.array([t.bucket for t in tasks], pa.int32()).take(at).to_numpy(zero_copy_only=False)
    if len(ins) and insert_plan:
        if sort_inserts:
            ins = ins[partition_key_order(batch, ins)]
        codes = pc.dictionary_encode(batch.column(PARTITION_PATH).take(pa.array(ins)).combine_chunks())
        part_code = {p: i for i, p in enumerate(codes.dictionary.to_pylist())}
        code = codes.indices.to_numpy(zero_copy_only=False)
        for part, plan in insert_plan.items():
            rows = ins[code == part_code[part]] if part in part_code else ins[:0]
            start = 0
            for b, count in plan:  # rows past a partition's plan are not written (none are planned so)
                bucket[rows[start:start + count]] = b
                start += count
    # stable: within a bucket, updates (batch order) first, then inserts (partition order)
    sequence = np.concatenate([upd, ins])
    sequence = sequence[bucket[sequence] >= 0]
    sequence = sequence[np.argsort(bucket[sequence], kind="stable")]
    return sequence, bucket[sequence]


class ArrowWriteEngine:
    """The write's records as an in-memory Arrow table; file groups written through an
    executor (in this process by default): local runs, tests, small batches."""

    def __init__(self, data: pa.Table, executor: Executor) -> None:
        self.batch = data
        self.executor = executor

    def prepare(self, settings: WriteSettings) -> list[str]:
        batch = prepare_batch(self.batch, dict(settings.key_generator), settings.operation,
                              list(settings.required_ordering_fields))
        if settings.dedupe:
            batch = dedupe(batch, list(settings.dedupe_ordering_fields), is_global(settings.index_type))
        self.batch = batch
        return sorted(pc.unique(batch.column(PARTITION_PATH)).to_pylist()) if batch.num_rows else []

    def tag(self, client: WriteClient, settings: WriteSettings, files: list[ExistingFile]) -> None:
        existing = lookup_existing_keys(client, self.batch, files, settings, self.executor)
        ordering, merge = partition_move_merge(client, settings)
        stored = partial(stored_records, file_refs(client, files, settings.key_generator), merge, ordering) \
            if merge is not None else None
        self._located(tag_records(self.batch, existing, settings.index_type, settings.update_partition_path,
                                  ordering, stored))

    def untag(self) -> None:
        none = pa.nulls(self.batch.num_rows, pa.string())
        self._located(self.batch.append_column(LOC_PART, none).append_column(LOC_FILE, none))

    def tag_buckets(self, routing: BucketRouting) -> None:
        self._located(tag_by_bucket(self.batch, routing))

    def _located(self, batch: pa.Table) -> None:
        # deletes of unknown keys and soft deletes of new keys write nothing
        found = pc.is_valid(batch.column(LOC_FILE))
        useless = pc.and_(pc.invert(found), pc.is_in(batch.column(OP_COL), value_set=DELETE_OPS))
        # most upserts have none: a filter would copy every record to drop nothing
        self.batch = batch.filter(pc.invert(useless)) if pc.any(useless).as_py() else batch

    def bucket_counts(self) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        # only the grouped columns are filtered: the records' own columns are not copied to count them
        found = pc.is_valid(self.batch.column(LOC_FILE))
        upd = self.batch.select([LOC_PART, LOC_FILE]).filter(found)
        ins = self.batch.select([PARTITION_PATH]).filter(pc.invert(found))
        update_counts: dict[tuple[str, str], int] = {}
        if upd.num_rows:
            g = upd.group_by([LOC_PART, LOC_FILE]).aggregate([([], "count_all")])
            update_counts = {(p, f): n for p, f, n in zip(g.column(LOC_PART).to_pylist(), g.column(LOC_FILE).to_pylist(),
                                                          g.column("count_all").to_pylist())}
        insert_counts: dict[str, int] = {}
        if ins.num_rows:
            g = ins.group_by([PARTITION_PATH]).aggregate([([], "count_all")])  # keys may be null (auto keys)
            insert_counts = dict(zip(g.column(PARTITION_PATH).to_pylist(), g.column("count_all").to_pylist()))
        return update_counts, insert_counts

    def write(self, tasks: list[FileGroupTask], insert_plan: Mapping[str, list[tuple[int, int]]],
              ctx: WriteContext) -> list[dict[str, Any]]:
        order, bucket = route_rows(self.batch, tasks, insert_plan, ctx.operation == "bulk_insert")
        ids = np.array([t.bucket for t in tasks], np.int32)
        starts, ends = np.searchsorted(bucket, ids, side="left"), np.searchsorted(bucket, ids, side="right")
        if isinstance(self.executor, LocalExecutor):
            # in this process each task takes its own rows on the executor's threads: the take
            # of a whole 1M-row bulk_insert ran alone before them (0.15 s of its 0.36 s there)
            items = [(t, (self.batch, order[s:e])) for t, s, e in zip(tasks, starts, ends)]
        else:  # a bucket's rows are one run of the routed rows: each task gets a slice, not a copy
            routed = self.batch.take(pa.array(order)).append_column(BUCKET_COL, pa.array(bucket, pa.int32()))
            items = [(t, routed.slice(int(s), int(e - s))) for t, s, e in zip(tasks, starts, ends)]
        return [s for group in self.executor.map(partial(_run_bucket, ctx), items) for s in group]

    def report(self, message: str) -> None:
        """In-process callers read the result, not a log."""

    def release(self) -> None:
        self.batch = None


def write_arrow(base_uri: str, data: pa.Table, operation: str, config: HoodieConfig | Mapping[str, str],
                table_name: str | None = None, storage_options: Mapping[str, str] | None = None,
                executor: Executor | None = None) -> WriteResult:
    """The write flow over an in-memory Arrow table (local tests, small batches)."""
    config = config if isinstance(config, HoodieConfig) else HoodieConfig(dict(config))
    client = WriteClient(base_uri, config, storage_options, table_name, WriteRequest.from_config(config, operation))
    data = data.drop_columns([c for c in META_COLUMNS if c in data.column_names])
    return run_write(client, ArrowWriteEngine(data, executor or LocalExecutor()), data.schema, operation)


def make_context(client: WriteClient, settings: WriteSettings, instant: str, avro: Mapping[str, Any]) -> WriteContext:
    return WriteContext(
        base_uri=client.base_uri, storage_options=client.storage_options, instant_time=instant,
        table_type=client.table.table_type, table_name=client.table_name or "", avro_schema=dict(avro),
        file_settings=settings.file, log_settings=settings.log,
        ordering_fields=settings.merge_ordering_fields, operation=settings.operation,
        delete_ordering_fields=settings.delete_ordering_fields,
        table_format=client.table.format,
        key_generator=None if client.table.config.populate_meta_fields else dict(settings.key_generator),
        cdc=settings.cdc,
    )


def run_commit_callback(client: WriteClient, settings: WriteSettings, result: WriteResult) -> None:
    if not settings.callback.enabled:
        return
    send_commit_callback(settings.callback, client.table_name or "", client.base_uri, result.as_dict())
