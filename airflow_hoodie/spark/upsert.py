"""The Spark engines of the write flow: a small batch on the driver, a large one as a DataFrame.

:func:`airflow_hoodie.actions.write.run_write` owns the flow and the timeline; an engine
does its data-parallel steps. :func:`upsert_dataframe` picks one by Spark's size estimate
of the batch. :class:`DriverBatchEngine` holds a small batch as Arrow on the driver (one
Spark job to read it) and sends file work to Spark tasks only when it is big.
:class:`SparkWriteEngine` keeps the records on the executors: keys are computed with
``mapInArrow``, deduplication is a window, the index is a join against the keys of the
candidate file groups (read by tasks), bucket counts are the only thing collected, and
``groupBy(bucket).applyInArrow`` runs
:func:`airflow_hoodie.actions.file_group_write.write_file_group` once per file group."""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from airflow_hoodie.actions.executor import LocalExecutor
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
    file_footer,
    file_keys,
    in_key_range,
    is_global,
    keys_by_partition,
    metadata_footers,
    probe_file,
    record_index_lookup,
)
from airflow_hoodie.actions.merge_settings import dedupe_ordering_fields
from airflow_hoodie.actions.write import (
    ArrowWriteEngine,
    begin_write,
    file_refs,
    open_for_write,
    run_write,
    update_partition_path,
    uses_record_index,
)
from airflow_hoodie.actions.write_client import WriteClient, WriteResult
from airflow_hoodie.actions.write_config import (
    DRIVER_BATCH_MAX_BYTES,
    DRIVER_FILES_MAX_BYTES,
    checked_ordering_field,
    dedupe_enabled,
    key_generator_props,
)
from airflow_hoodie.actions.write_records import BUCKET_COL, OP_COL, OrderingFields, prepare_batch
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import (
    HoodieError,
    HoodieIOError,
    HoodieKeyError,
    HoodieSchemaError,
)
from airflow_hoodie.spark.bulk_insert import bulk_insert_dataframe
from airflow_hoodie.spark.executor import SparkExecutor
from airflow_hoodie.spark.progress import progress
from airflow_hoodie.table.file_group.file_system_view import ExistingFile
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.record_index import file_group_index, record_index_file_group_count
from airflow_hoodie.table.schema.meta_fields import (
    META_COLUMNS,
    PARTITION_PATH,
    RECORD_KEY,
)
from airflow_hoodie.table.storage.storage import Storage

SOURCE_FORMATS = ("parquet", "json", "csv", "orc")
_HOODIE_ERRORS = {"HoodieKeyError": HoodieKeyError, "HoodieSchemaError": HoodieSchemaError}


def read_source(spark: Any, path: str, fmt: str, options: Mapping[str, str] | None = None) -> Any:
    """The input batch as a DataFrame; csv gets a header and inferred types."""
    fmt = (fmt or "parquet").lower()
    if fmt not in SOURCE_FORMATS:
        raise HoodieError(f"--source-format {fmt!r} is not supported; use one of {', '.join(SOURCE_FORMATS)}.")
    storage, fs_path = Storage.for_uri(path, None)
    if not storage.exists(fs_path):
        raise HoodieIOError(f"Source path {path!r} does not exist; check --source.")
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    for k, v in (options or {}).items():
        reader = reader.option(k, v)
    return reader.load(path)


def _arrow_schema(df: Any) -> pa.Schema:
    """The Arrow schema Spark's own Arrow batches carry: timestamps in the session time zone
    (PySpark 4 cannot convert a timestamp column without one: every batch with a timestamp
    failed with a bare AssertionError)."""
    return to_arrow_schema(df.schema, timezone=df.sparkSession.conf.get("spark.sql.session.timeZone"))


def _prepare_batches(props: dict[str, str], operation: str, ordering_field: OrderingFields, batches):  # executors
    for b in batches:
        t = prepare_batch(pa.Table.from_batches([b]), props, operation, ordering_field)
        yield from t.to_batches()


def _keys_of_files(refs: list, batches):  # runs on executors
    for b in batches:
        for i in b.column(0).to_pylist():
            yield from file_keys(refs[i]).to_batches()


def _key_range(ref: FileRef) -> tuple[str | None, str | None]:
    """A base file's min and max record key from its footer (None when unknown, as with log
    files); its bloom filter (about 1 MB) stays on the executor."""
    footer = file_footer(ref)
    return footer["min"], footer["max"]


def _range_pairs(ranges: list[tuple[str, str | None, str | None]], global_index: bool, batches):  # executors
    """(file, key) for every key a file's partition and key range admit (Hudi's BLOOM index
    compares each record with the files its range tree finds the same way)."""
    for b in batches:
        t = pa.Table.from_batches([b])
        keys = t.column(RECORD_KEY).combine_chunks()
        by_part = None if global_index else keys_by_partition(keys, t.column(PARTITION_PATH).combine_chunks())
        for i, (part, lo, hi) in enumerate(ranges):
            wanted = keys if by_part is None else by_part.get(part)
            if wanted is not None and lo is not None and hi is not None:
                wanted = wanted.filter(in_key_range(wanted, lo, hi))
            if wanted is not None and len(wanted):
                yield pa.RecordBatch.from_pydict({"i": pa.repeat(pa.scalar(i, pa.int32()), len(wanted)),
                                                  "key": wanted})


def _with_record_index_group(count: int, batches):  # executors
    for b in batches:
        keys = b.column(0)
        groups = pa.array([file_group_index(k, count) for k in keys.to_pylist()], pa.int32())
        yield pa.RecordBatch.from_arrays([groups, keys], names=["g", "key"])


def _record_index_group_lookup(base_uri: str, storage_options: Mapping[str, str] | None):
    def lookup(table: pa.Table) -> pa.Table:  # applyInArrow body: the keys of one record-index file group
        hoodie = HoodieTable.load(base_uri, storage_options or None)
        return record_index_lookup(hoodie, table.column("key").combine_chunks())
    return lookup


def _file_prober(refs: list[FileRef], footers: list[dict[str, Any] | None]):
    """``footers``: each file's filter from the metadata table, or None to read its footer."""
    def probe(table: pa.Table) -> pa.Table:  # applyInArrow body: the keys compared with one file
        wanted = pc.unique(table.column("key").combine_chunks())
        i = table.column("i")[0].as_py()
        return probe_file(refs[i], wanted, use_bloom=True, prune_by_ranges=False, footer=footers[i])
    return probe


def translate_job_error(exc: Exception) -> Exception:
    text = str(exc)
    for name, cls in _HOODIE_ERRORS.items():
        if name in text:
            line = next((ln for ln in text.splitlines() if name + ":" in ln), text.splitlines()[-1] if text else "")
            return cls(line.split(name + ":", 1)[-1].strip() or text[-500:])
    return exc


def _write_groups(ctx: WriteContext, tasks: dict[int, FileGroupTask], keep: list[str], table: pa.Table):
    """applyInArrow body: one group = one bucket = one file group."""
    bucket = table.column(BUCKET_COL)[0].as_py()
    cols = [c for c in keep if c in table.column_names]
    stats = write_file_group(ctx, tasks[bucket], table.select(cols))
    return pa.table({"stat": pa.array([json.dumps(s) for s in stats], pa.string())})


def _group_writer(ctx: WriteContext, tasks: dict[int, FileGroupTask], keep: list[str]):
    def write_group(table: pa.Table) -> pa.Table:
        return _write_groups(ctx, tasks, keep, table)
    return write_group


def _driver_table(spark: Any, rows: list[tuple], schema: pa.Schema) -> Any:
    """A small DataFrame of driver-side rows, built from Arrow: from a Python list Spark
    would start Python workers to evaluate it (measured 1.1 s per broadcast join)."""
    columns = list(zip(*rows)) if rows else [[] for _ in schema]
    return spark.createDataFrame(pa.table([pa.array(c, f.type) for c, f in zip(columns, schema)], schema=schema))


def _existing_keys_df(spark: Any, refs: list) -> Any:
    n = len(refs)
    # spark.range: no Python-side rows, no shuffle (createDataFrame + repartition cost a job)
    idx = spark.range(0, n, 1, max(1, min(n, spark.sparkContext.defaultParallelism * 2))).select(F.col("id").cast("int").alias("i"))
    return idx.mapInArrow(partial(_keys_of_files, refs), from_arrow_schema(KEYS_SCHEMA))


def keyed_dataframe(df: Any, in_schema: pa.Schema, props: dict[str, str], operation: str,
                    ordering_field: OrderingFields = None) -> Any:
    """``df`` with the record key, partition path and operation columns, computed on the
    executors (which also refuse null ``ordering_field`` values)."""

    out_schema = pa.schema(list(in_schema) + [pa.field(RECORD_KEY, pa.string()), pa.field(PARTITION_PATH, pa.string()),
                                              pa.field(OP_COL, pa.string())])
    return df.mapInArrow(partial(_prepare_batches, props, operation, ordering_field), from_arrow_schema(out_schema))


def deduplicated(prepared: Any, cfg: HoodieConfig, global_keys: bool) -> Any:
    """One row per key (per key and partition unless ``global_keys``): the greatest
    ordering value wins, ties go to the later input row, as Hudi's preCombine does."""

    # several ordering fields compare as a tuple; none under commit-time ordering (later row wins)
    order = [F.col(f).desc_nulls_last() for f in dedupe_ordering_fields(cfg) if f in prepared.columns]
    order.append(F.monotonically_increasing_id().desc())
    part_by = [RECORD_KEY] if global_keys else [RECORD_KEY, PARTITION_PATH]
    return (prepared.withColumn("__rn", F.row_number().over(Window.partitionBy(*part_by).orderBy(*order)))
            .filter("__rn = 1").drop("__rn"))


def _prepared(df: Any, in_schema: pa.Schema, cfg: HoodieConfig, operation: str, global_keys: bool
              ) -> tuple[Any, list[str]]:
    """Keyed and deduped records (persisted: indexing, counting and writing read them) and
    the partitions they touch (Hudi collects these too, to list only those partitions)."""
    prepared = keyed_dataframe(df, in_schema, key_generator_props(cfg), operation,
                               checked_ordering_field(cfg, operation))
    if dedupe_enabled(cfg, operation):
        prepared = deduplicated(prepared, cfg, global_keys)
    try:
        prepared = prepared.persist()
        return prepared, [r[0] for r in prepared.select(PARTITION_PATH).distinct().collect()]
    except Exception as exc:  # noqa: BLE001 - key errors surface from the Python workers
        raise translate_job_error(exc) from exc


def _existing_keys(spark: Any, prepared: Any, client: WriteClient, cfg: HoodieConfig, index_type: str,
                   files: list[ExistingFile]) -> Any:
    """(key, partition, file_id) rows the index joins the records with. SIMPLE reads every
    key of the files. BLOOM brings only key ranges to the driver. Each file's task then
    gets the keys its range admits, checks them against its bloom filter and returns the
    ones it holds; no footer ever reaches the driver."""
    refs = file_refs(client, files)
    if not refs:
        return spark.createDataFrame([], from_arrow_schema(KEYS_SCHEMA))
    if uses_record_index(client, index_type):
        # one task per record-index file group the keys hash to; it reads that group once
        count = record_index_file_group_count(client.table)
        keyed = prepared.select(RECORD_KEY).where(F.col(RECORD_KEY).isNotNull()).distinct()
        return keyed.mapInArrow(partial(_with_record_index_group, count), "g int, key string") \
            .groupBy("g").applyInArrow(_record_index_group_lookup(client.base_uri, client.storage_options),
                                       from_arrow_schema(KEYS_SCHEMA))
    if index_type not in ("BLOOM", "GLOBAL_BLOOM"):
        return _existing_keys_df(spark, refs)
    prune = cfg.get_bool("hoodie.bloom.index.prune.by.ranges")
    # hoodie.bloom.index.use.metadata: ranges and filters of the files the metadata table
    # describes come from it (batched lookups on the driver); only the others' footers are read
    known = metadata_footers(client.table, refs, prune) if cfg.get_bool("hoodie.bloom.index.use.metadata") \
        and client.table is not None else {}
    unknown = [r for r in refs if (r.partition_path, r.file_id) not in known]
    read = dict(zip([(r.partition_path, r.file_id) for r in unknown],
                    SparkExecutor(spark).map(_key_range, unknown) if prune and unknown else []))
    bounds = [((known[k]["min"], known[k]["max"]) if k in known else read.get(k, (None, None)))
              for k in ((r.partition_path, r.file_id) for r in refs)]
    ranges = [(ref.partition_path, lo, hi) for ref, (lo, hi) in zip(refs, bounds)]
    pairs = prepared.select(RECORD_KEY, PARTITION_PATH).mapInArrow(
        partial(_range_pairs, ranges, is_global(index_type)), "i int, key string")
    footers = [known.get((r.partition_path, r.file_id)) for r in refs]
    return pairs.groupBy("i").applyInArrow(_file_prober(refs, footers), from_arrow_schema(KEYS_SCHEMA))


def _tagged(spark: Any, prepared: Any, client: WriteClient, cfg: HoodieConfig, index_type: str,
            files: list[ExistingFile]) -> Any:
    """Records with the location (partition, file group) of their existing key, by a join
    against the keys of the candidate files; a global index may move a record."""

    existing = _existing_keys(spark, prepared, client, cfg, index_type, files)
    if not is_global(index_type):
        ex = existing.select(F.col("key").alias("__k"), F.col("partition").alias("__p"),
                             F.col("partition").alias(LOC_PART), F.col("file_id").alias(LOC_FILE))
        return prepared.join(ex, (prepared[RECORD_KEY] == ex["__k"]) & (prepared[PARTITION_PATH] == ex["__p"]),
                             "left").drop("__k", "__p")
    existing = existing.groupBy("key").agg(F.min("partition").alias("partition"), F.min("file_id").alias("file_id"))
    ex = existing.select(F.col("key").alias("__k"), F.col("partition").alias(LOC_PART), F.col("file_id").alias(LOC_FILE))
    tagged = prepared.join(ex, prepared[RECORD_KEY] == ex["__k"], "left").drop("__k")
    moved = F.col(LOC_PART).isNotNull() & (F.col(LOC_PART) != F.col(PARTITION_PATH))
    if not update_partition_path(cfg, index_type):
        return tagged.withColumn(PARTITION_PATH, F.coalesce(F.col(LOC_PART), F.col(PARTITION_PATH)))
    stay = tagged.filter(~moved)
    dels = tagged.filter(moved).withColumn(OP_COL, F.lit("D")).withColumn(PARTITION_PATH, F.col(LOC_PART))
    new = (tagged.filter(moved & (F.col(OP_COL) == "U"))
           .withColumn(LOC_PART, F.lit(None).cast("string")).withColumn(LOC_FILE, F.lit(None).cast("string")))
    return stay.unionByName(dels).unionByName(new)


def _bucket_counts(tagged: Any) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """Updates per (located partition, file group) and inserts per partition, in one job."""

    is_ins = F.col(LOC_FILE).isNull()
    try:
        counts = (tagged.groupBy(F.when(is_ins, F.col(PARTITION_PATH)).alias("__ip"),
                                 F.when(~is_ins, F.col(LOC_PART)).alias("__up"), F.col(LOC_FILE))
                  .count().collect())
    except Exception as exc:  # noqa: BLE001
        raise translate_job_error(exc) from exc
    upd_counts: dict[tuple[str, str], int] = {}
    ins_counts: dict[str, int] = {}
    for ip, up, fid, n in counts:
        if fid is None:
            ins_counts[ip] = ins_counts.get(ip, 0) + n
        else:
            upd_counts[(up, fid)] = upd_counts.get((up, fid), 0) + n
    return upd_counts, ins_counts


def _routed(spark: Any, tagged: Any, tasks: list[FileGroupTask], insert_plan: Mapping[str, list[tuple[int, int]]]
            ) -> Any | None:
    """Records with their bucket: updates by their group, inserts by hash position into
    their partition's insert buckets (small broadcast tables built on the driver)."""

    upd_map = [(t.partition_path, t.file_id, t.bucket) for t in tasks if t.kind == "UPDATE"]
    ranges = []
    for part, plan in insert_plan.items():
        total = sum(c for _, c in plan)
        lo = 0
        for b, c in plan:
            ranges.append((part, lo, lo + c, b, total))
            lo += c
    pieces = []
    if upd_map:
        m = _driver_table(spark, upd_map, pa.schema([("__p", pa.string()), ("__f", pa.string()), ("__b", pa.int32())]))
        pieces.append(tagged.filter(F.col(LOC_FILE).isNotNull())
                      .join(F.broadcast(m), (F.col(LOC_PART) == F.col("__p")) & (F.col(LOC_FILE) == F.col("__f")))
                      .withColumn(BUCKET_COL, F.col("__b")).drop("__p", "__f", "__b"))
    if ranges:
        r = _driver_table(spark, ranges, pa.schema([("__p", pa.string()), ("__lo", pa.int64()), ("__hi", pa.int64()),
                                                    ("__b", pa.int32()), ("__t", pa.int64())]))
        ins = tagged.filter(F.col(LOC_FILE).isNull())
        ins = ins.join(F.broadcast(r), ins[PARTITION_PATH] == F.col("__p"))
        pos = F.pmod(F.xxhash64(F.coalesce(F.col(RECORD_KEY),  # auto keys: spread by row
                                           F.monotonically_increasing_id().cast("string"))), F.col("__t"))
        pieces.append(ins.filter((pos >= F.col("__lo")) & (pos < F.col("__hi")))
                      .withColumn(BUCKET_COL, F.col("__b")).drop("__p", "__lo", "__hi", "__b", "__t"))
    if not pieces:
        return None
    return pieces[0] if len(pieces) == 1 else pieces[0].unionByName(pieces[1])


def _write_buckets(routed: Any, ctx: WriteContext, tasks: list[FileGroupTask], data_columns: list[str]
                   ) -> list[dict[str, Any]]:
    """One task per bucket writes its file group; the write stats come back."""
    # the located file tells a log append which of its records are inserts (small files)
    keep = [RECORD_KEY, PARTITION_PATH, OP_COL, BUCKET_COL, LOC_FILE] + list(data_columns)
    try:
        rows = (routed.groupBy(BUCKET_COL)
                .applyInArrow(_group_writer(ctx, {t.bucket: t for t in tasks}, keep), "stat string").collect())
    except Exception as exc:  # noqa: BLE001
        raise translate_job_error(exc) from exc
    return [json.loads(r[0]) for r in rows]


class SparkWriteEngine:
    """The write's records as a DataFrame: the data-parallel steps run on the executors and
    only counts come back to the driver."""

    def __init__(self, spark: Any, df: Any, in_schema: pa.Schema) -> None:
        self.spark, self.df, self.in_schema = spark, df, in_schema
        self.prepared: Any = None
        self.tagged: Any = None

    def prepare(self, cfg: HoodieConfig, operation: str, global_index: bool) -> list[str]:
        self.prepared, parts = _prepared(self.df, self.in_schema, cfg, operation, global_index)
        return parts

    def tag(self, client: WriteClient, cfg: HoodieConfig, index_type: str, files: list[ExistingFile]) -> None:
        self._located(_tagged(self.spark, self.prepared, client, cfg, index_type, files))

    def untag(self) -> None:
        none = F.lit(None).cast("string")
        self._located(self.prepared.withColumn(LOC_PART, none).withColumn(LOC_FILE, none))

    def _located(self, tagged: Any) -> None:
        # deletes of unknown keys and soft deletes of new keys write nothing
        self.tagged = tagged.filter(~(F.col(LOC_FILE).isNull() & F.col(OP_COL).isin("D", "S"))).persist()

    def bucket_counts(self) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        return _bucket_counts(self.tagged)

    def write(self, tasks: list[FileGroupTask], insert_plan: Mapping[str, list[tuple[int, int]]],
              ctx: WriteContext) -> list[dict[str, Any]]:
        routed = _routed(self.spark, self.tagged, tasks, insert_plan)
        return _write_buckets(routed, ctx, tasks, self.df.columns) if routed is not None else []

    def report(self, message: str) -> None:
        progress(message)

    def release(self) -> None:
        for frame in (self.prepared, self.tagged):
            if frame is not None:
                frame.unpersist()


class DriverBatchEngine(ArrowWriteEngine):
    """A small batch held by the driver as Arrow: Spark's cost per shuffle and job outweighs
    the work of a batch that fits in memory (an upsert of 100k records into 1M: one to
    three jobs instead of about twelve). File work goes to Spark tasks unless its bytes
    (existing files read plus records) stay under ``hoodie.airflow.write.driver.files.max.bytes``;
    then this process does it, as starting and warming Python workers would cost more."""

    def __init__(self, spark: Any, data: pa.Table, files_max_bytes: int) -> None:
        self.spark_executor = SparkExecutor(spark)
        super().__init__(data, self.spark_executor)
        self.files_max_bytes = files_max_bytes
        self.file_bytes: dict[tuple[str, str], int] = {}

    def _run_where(self, existing_bytes: int) -> None:
        small = existing_bytes + self.batch.nbytes <= self.files_max_bytes
        self.executor = LocalExecutor() if small else self.spark_executor

    def tag(self, client: WriteClient, cfg: HoodieConfig, index_type: str, files: list[ExistingFile]) -> None:
        self.file_bytes = {(f.partition_path, f.file_id): f.base_size + f.log_size for f in files}
        self._run_where(sum(self.file_bytes.values()))
        super().tag(client, cfg, index_type, files)

    def write(self, tasks: list[FileGroupTask], insert_plan: Mapping[str, list[tuple[int, int]]],
              ctx: WriteContext) -> list[dict[str, Any]]:
        # a merge reads its base file (a COW update, an insert into a small file, a MOR
        # small-file correction); a MOR append only adds to the log
        read = sum(self._base_bytes(ctx, t) for t in tasks if t.base_file and (t.merge_base or not ctx.is_mor))
        self._run_where(read)
        return super().write(tasks, insert_plan, ctx)

    def _base_bytes(self, ctx: WriteContext, task: FileGroupTask) -> int:
        known = self.file_bytes.get((task.partition_path, task.file_id))
        if known is not None:
            return known
        storage, base_path = ctx.storage()  # inserts were not indexed: ask the storage
        return storage.size(storage.join(base_path, task.base_file))

    def report(self, message: str) -> None:
        progress(message)


def driver_batch(df: Any, config: HoodieConfig) -> pa.Table | None:
    """The batch as Arrow when Spark's own size estimate (the one it uses to choose a
    broadcast join) is at most ``hoodie.airflow.write.driver.batch.max.bytes``; else None."""
    limit = config.get_int(DRIVER_BATCH_MAX_BYTES)
    if limit <= 0:
        return None
    try:
        estimate = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    except Exception:  # noqa: BLE001 - no estimate (e.g. Spark Connect): keep the DataFrame path
        return None
    return df.toArrow() if estimate <= limit else None


def upsert_dataframe(
    spark: Any,
    df: Any,
    base_uri: str,
    operation: str,
    config: HoodieConfig,
    table_name: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> WriteResult:
    """Write ``df`` into the Hudi table at ``base_uri``; returns the committed instant's totals."""
    client = WriteClient(base_uri, config, storage_options, table_name)
    df = df.drop(*[c for c in df.columns if c in META_COLUMNS])
    in_schema = _arrow_schema(df)
    if operation == "bulk_insert":  # Hudi's row-writer path: no index, its own layout
        cfg, avro = begin_write(client, in_schema, operation)
        if client.table is None:
            # the row writer meets each record only in its write task: on a first write the
            # key, partition and ordering checks run first, in one pass without a shuffle, so
            # a refused batch leaves no table behind
            try:
                keyed_dataframe(df, in_schema, key_generator_props(cfg), operation,
                                checked_ordering_field(cfg, operation)).write.format("noop").mode("overwrite").save()
            except Exception as exc:  # noqa: BLE001 - key errors surface from the Python workers
                raise translate_job_error(exc) from exc
        rolled = open_for_write(client, avro)
        return bulk_insert_dataframe(spark, df, in_schema, client, cfg, avro, rolled, config)
    small = driver_batch(df, config)
    if small is not None:
        engine = DriverBatchEngine(spark, small, config.get_int(DRIVER_FILES_MAX_BYTES))
        return run_write(client, engine, small.schema, operation)
    return run_write(client, SparkWriteEngine(spark, df, in_schema), in_schema, operation)
