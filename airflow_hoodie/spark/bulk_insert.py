"""bulk_insert the way Hudi's row-writer path does it: no index lookup, no small-file
packing, every Spark task writes new file groups straight from its own Arrow batches.

The general write flow spends a persisted pass to find the batch's partitions, a counting
job to size buckets and a shuffle to route rows into buckets; none of that is needed when
nothing existing is read. The layout follows ``hoodie.bulkinsert.sort.mode`` (Hudi's
default NONE keeps the input partitioning, as ``df.write.parquet`` would), the number of
Spark partitions ``hoodie.bulkinsert.shuffle.parallelism`` where the mode shuffles (0 =
Spark's default parallelism), and a task rolls to a new file group when its rows for a
partition exceed what fits in ``hoodie.parquet.max.file.size``.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.actions.bucketing import average_record_size
from airflow_hoodie.actions.file_group_write import (
    FileGroupTask,
    WriteContext,
    write_file_group,
)
from airflow_hoodie.actions.write import make_context, run_commit_callback, summarize
from airflow_hoodie.actions.write_client import WriteClient, WriteResult
from airflow_hoodie.actions.write_records import prepare_batch, with_auto_record_keys
from airflow_hoodie.actions.write_settings import WriteSettings
from airflow_hoodie.config_keys.keygen import KEYGENERATOR_CLASS
from airflow_hoodie.errors import HoodieError
from airflow_hoodie.spark.job_errors import translate_job_error
from airflow_hoodie.spark.keyed_records import deduplicated, keyed_dataframe
from airflow_hoodie.spark.worker_heap import freeze_worker_heap
from airflow_hoodie.table.file_group.file_naming import new_file_id
from airflow_hoodie.table.file_group.partition_metadata import PARTITION_METAFILE
from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH, RECORD_KEY
from airflow_hoodie.table.timeline.instant import Action


def _task_partition_id() -> int:
    from pyspark import TaskContext  # noqa: PLC0415 - exists on executors only

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def _write_task(ctx: WriteContext, props: Mapping[str, str] | None, ordering: list[str], rows_per_file: int,
                batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: one new file group per partition path the task holds (more when
    they exceed a file). ``props`` set means the rows still need their keys: they are made
    and checked (keys, partition paths, ``ordering`` values) for all the task's rows before
    its first file, so a refused record fails the job and the write is rolled back. The
    worker's heap is frozen first (:func:`freeze_worker_heap`): PySpark collects garbage
    after every task, and walking the imported modules cost 44 ms of a 100 ms task."""
    freeze_worker_heap()
    batches = list(batches)
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    if props is not None:
        table = prepare_batch(table, props, "bulk_insert", ordering)
    task_id = _task_partition_id()
    # auto-generated keys number the task's rows across all the files it writes
    table = with_auto_record_keys(table, ctx.instant_time, task_id)
    stats: list[dict[str, Any]] = []
    parts = sorted(pc.unique(table.column(PARTITION_PATH)).to_pylist())
    for part in parts:
        # a task of one partition path (every task of the PARTITION_PATH_REPARTITION modes)
        # writes its rows as they came: a filter would copy all of them first
        rows = table if len(parts) == 1 else table.filter(pc.equal(table.column(PARTITION_PATH), part))
        for start in range(0, rows.num_rows, rows_per_file):
            task = FileGroupTask(task_id, "INSERT", part, new_file_id())
            stats.extend(write_file_group(ctx, task, rows.slice(start, rows_per_file)))
    yield pa.RecordBatch.from_pydict({"stat": pa.array([json.dumps(s) for s in stats], pa.string())})


def _raw_partition_fields(settings: WriteSettings) -> list[str] | None:
    """The partition fields when Spark can group rows by them as they are: with the simple
    and complex key generators a path is made of the fields' values one segment each, so
    rows of one path meet in one task without a Python pass computing paths before the
    shuffle (the tasks compute keys and paths once, while writing)."""
    fields = list(settings.partition_fields)
    generator = settings.key_generator[KEYGENERATOR_CLASS.key].rsplit(".", 1)[-1]
    if fields and generator in ("SimpleKeyGenerator", "ComplexKeyGenerator") and not any(":" in f for f in fields):
        return fields
    return None


def _laid_out(keyed: Any, mode: str, parallelism: int) -> Any:
    """Hudi's BulkInsertSortMode applied to rows that carry their keys."""
    if mode == "GLOBAL_SORT":
        return keyed.repartitionByRange(parallelism, PARTITION_PATH, RECORD_KEY).sortWithinPartitions(
            PARTITION_PATH, RECORD_KEY)
    if mode == "PARTITION_SORT":
        return keyed.sortWithinPartitions(PARTITION_PATH, RECORD_KEY)
    if mode == "PARTITION_PATH_REPARTITION":
        return keyed.repartition(parallelism, PARTITION_PATH)
    if mode == "PARTITION_PATH_REPARTITION_AND_SORT":
        return keyed.repartition(parallelism, PARTITION_PATH).sortWithinPartitions(PARTITION_PATH, RECORD_KEY)
    return keyed


def bulk_insert_dataframe(
    spark: Any,
    df: Any,
    in_schema: pa.Schema,
    client: WriteClient,
    settings: WriteSettings,
    avro: Mapping[str, Any],
    rolled: list[str],
    first_write: bool = False,
) -> WriteResult:
    """Write ``df`` as new file groups of one new commit (after ``begin_write``). The
    records are checked in the write job itself (a separate pass cost a job and a third of
    the time); when ``first_write`` (the table was created for this write) and the write
    fails, the new table is removed too, so a refused first batch leaves nothing behind."""
    mode = settings.bulk_insert_sort_mode
    props = dict(settings.key_generator)
    dedupe = settings.dedupe
    ordering = list(settings.required_ordering_fields)
    rows_to_write, task_props = df, props
    parallelism = settings.bulk_insert_parallelism or spark.sparkContext.defaultParallelism
    raw_fields = _raw_partition_fields(settings)
    if mode == "PARTITION_PATH_REPARTITION" and not dedupe and raw_fields:
        rows_to_write = df.repartition(parallelism, *raw_fields)
    elif mode != "NONE" or dedupe:
        keyed = keyed_dataframe(df, in_schema, props, "bulk_insert", ordering)
        if dedupe:
            keyed = deduplicated(keyed, settings.dedupe_ordering_fields, global_keys=False)
        rows_to_write, task_props = _laid_out(keyed, mode, parallelism), None
    instant = client.new_instant_time()
    action = client.commit_action("bulk_insert")
    instant = client.start(instant, action, "bulk_insert")
    try:
        with client.aborting_on_failure(instant):
            client.inflight(instant, action, [], "bulk_insert")
            ctx = make_context(client, settings, instant, avro)
            rows_per_file = max(1, settings.sizing.max_file_size
                                // max(1, average_record_size(client.table, settings.sizing)))
            try:
                rows = rows_to_write.mapInArrow(partial(_write_task, ctx, task_props, ordering, rows_per_file),
                                                "stat string").collect()
            except Exception as exc:  # noqa: BLE001 - key errors surface from the Python workers
                raise translate_job_error(exc) from exc
            stats = [json.loads(r[0]) for r in rows]
            done = client.commit(instant, action, "bulk_insert", stats, avro, None)
    except BaseException as exc:
        if first_write:
            try:
                drop_new_table(client)
            except Exception as cleanup:  # noqa: BLE001 - reported on the cause, which is re-raised
                exc.add_note(f"Removing the table this first write created failed too: {type(cleanup).__name__}: "
                             f"{cleanup}. It holds no commit; delete {client.base_uri} before writing again.")
        raise
    result = WriteResult(instant, action, "COMPLETED", "bulk_insert", rolled_back=rolled,
                           unknown_keys=client.config.unknown_keys(), completion_time=done.completion_time)
    summarize(result, stats)
    run_commit_callback(client, settings, result)
    return result


def drop_new_table(client: WriteClient) -> None:
    """Remove the table a failed first write created, once its instant is rolled back: the
    records are checked only in the write tasks, after the table exists, and a refused first
    batch must leave nothing behind (no table whose only history is a rollback). Left as it
    is when anything else is on its timeline (another writer created it or wrote to it
    meanwhile) or when the rollback itself failed."""
    table = client.table
    if table is None:
        return
    try:
        timeline = table.reload_timeline()
    except HoodieError:
        return
    if any(i.action != Action.ROLLBACK for i in timeline.all_instants):
        return  # our instant still pending (the rollback failed) or another writer's work
    storage = table.storage
    # partition metadata files our tasks wrote beside the data files the rollback removed
    for f in storage.walk_files(table.base_path):
        if f.path.rsplit("/", 1)[-1].startswith(PARTITION_METAFILE) and not f.path.startswith(table.meta_path + "/"):
            storage.delete(f.path)
    storage.delete_dir(table.meta_path)
    client.table = None
