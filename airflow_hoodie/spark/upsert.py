"""The Spark engines of the write flow: a small batch on the driver, a large one as a DataFrame.

:func:`airflow_hoodie.actions.write.run_write` owns the flow and the timeline; an engine
does its data-parallel steps, on every table version (6, 8, 9) alike.
:func:`airflow_hoodie.spark.dataframe_write.upsert_dataframe` picks one by Spark's size
estimate of the batch. :class:`DriverBatchEngine` holds a small batch as Arrow on the driver
(one Spark job to read it) and sends file work to Spark tasks only when it is big.
:class:`SparkWriteEngine` keeps the records on the executors: keys are computed with
``mapInArrow``, deduplication is a window, the index is a join against the keys of the
candidate file groups (read by tasks), bucket counts are the only thing collected, and
``groupBy(bucket).applyInArrow`` runs
:func:`airflow_hoodie.actions.file_group_write.write_file_group` once per file group."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import AccumulatorParam
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from airflow_hoodie.actions.bucket_index_write import (
    BUCKET_ID_COL,
    BucketRouting,
    locate_by_bucket,
)
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
    is_global,
    metadata_footers,
    probe_file,
    probe_files,
    record_index_lookup,
    stored_records,
)
from airflow_hoodie.actions.write import (
    ArrowWriteEngine,
    file_refs,
    partition_move_merge,
    uses_record_index,
)
from airflow_hoodie.actions.write_client import WriteClient
from airflow_hoodie.actions.write_records import (
    BUCKET_COL,
    DELETE_OPS,
    OP_COL,
    dedupe,
    tag_records,
)
from airflow_hoodie.actions.write_settings import WriteSettings
from airflow_hoodie.errors import (
    HoodieError,
)
from airflow_hoodie.spark.executor import SparkExecutor
from airflow_hoodie.spark.job_errors import translate_job_error
from airflow_hoodie.spark.keyed_records import keyed_dataframe
from airflow_hoodie.spark.progress import progress
from airflow_hoodie.spark.source import SOURCE_FORMATS, read_source  # noqa: F401 - this module's API before spark/source.py
from airflow_hoodie.spark.task_partitions import (
    insert_positions,
    one_group_per_task,
    tag_slice_target,
)
from airflow_hoodie.spark.worker_heap import freeze_worker_heap
from airflow_hoodie.table.file_group.file_system_view import ExistingFile
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.record_merger import MergeConfig
from airflow_hoodie.table.schema.meta_fields import (
    PARTITION_PATH,
    RECORD_KEY,
)


def _write_groups(ctx: WriteContext, tasks: dict[int, FileGroupTask], keep: list[str], table: pa.Table):
    """applyInArrow body: one group = one bucket = one file group."""
    bucket = table.column(BUCKET_COL)[0].as_py()
    cols = [c for c in keep if c in table.column_names]
    stats = write_file_group(ctx, tasks[bucket], table.select(cols))
    return pa.table({"stat": pa.array([json.dumps(s) for s in stats], pa.string())})


def _group_writer(ctx: WriteContext, tasks: dict[int, FileGroupTask], keep: list[str], held: Any):
    def write_group(table: pa.Table) -> pa.Table:
        freeze_worker_heap()
        if table.num_rows:
            held.add({("write", table.column(BUCKET_COL)[0].as_py()): table.num_rows})
        return _write_groups(ctx, tasks, keep, table)
    return write_group


SEQ_COL = "__seq"    # input order: a dedupe tie goes to the later row, as in the window it replaced
GROUP_COL = "__tag"  # which slice of its partition's keys (of all keys, for a global index) a record is tagged in
INS_POS_COL = "__ins_pos"  # an insert's place among its tag group's inserts into its partition
TASK_COL = "__task"  # the write task (file group) a record goes to


@dataclass
class _TagPlan:
    """What each tag task needs, sent once as a broadcast: file refs carry the timeline's
    instants and metadata-table footers carry bloom filters, too large to travel in every
    task's closure."""

    index_type: str | None  # None: nothing to look up (inserts, a table without files)
    refs: list[FileRef]
    footers: list[dict[str, Any] | None]
    refs_of_partition: dict[str, list[int]]
    prune_by_ranges: bool
    update_partition_path: bool
    dedupe: bool
    ordering: list[str]
    global_index: bool
    record_index: tuple[str, dict[str, str]] | None  # (base URI, storage options) when the record index answers
    out_names: list[str]
    #: how a task reads the candidate files' keys (:func:`_existing_keys_df`), chosen on the driver
    scan: Callable[[_TagPlan, pa.Table], pa.Table] | None = None
    #: a record moving partition is merged with the stored one first (:func:`partition_move_merge`)
    move_ordering: list[str] = field(default_factory=list)
    move_merge: MergeConfig | None = None
    #: a simple bucket index: (partition, bucket) -> file id of every group the write may
    #: write (records carry their bucket in ``BUCKET_ID_COL``), and the bucket count; None
    #: for the other indexes
    bucket_locations: dict[tuple[str, int], str] | None = None
    num_buckets: int = 0
    #: a consistent-hashing write's dual writes during a pending resize (:class:`DualWrite`)
    duplicate: Callable[[pa.Table], pa.Table] | None = None


def _key_range(ref: FileRef) -> dict[str, Any]:
    """A base file's key range and bloom filter, read from its footer by the task that
    probes the file: the filter (about 1 MB) never travels."""
    return file_footer(ref)


def _existing_keys_df(plan: _TagPlan, records: pa.Table) -> pa.Table:
    """(key, partition, file_id) of the records' keys in the data files ("df") they may live
    in: their partition's files, or every file for a global index. Runs in a tag task."""
    keys = records.column(RECORD_KEY).combine_chunks()
    if plan.global_index:
        candidates: list[int] = list(range(len(plan.refs)))
    else:  # a tag group holds one partition
        candidates = plan.refs_of_partition.get(records.column(PARTITION_PATH)[0].as_py(), [])
    bloom = plan.index_type in ("BLOOM", "GLOBAL_BLOOM")
    if not bloom:
        return probe_files([plan.refs[i] for i in candidates], keys)
    found = []
    for i in candidates:
        footer = plan.footers[i] if plan.footers[i] is not None else _key_range(plan.refs[i])
        t = probe_file(plan.refs[i], keys, True, plan.prune_by_ranges, footer)
        if t.num_rows:
            found.append(t)
    return pa.concat_tables(found) if found else KEYS_SCHEMA.empty_table()


def _existing_keys(plan: _TagPlan, records: pa.Table) -> pa.Table:
    if not records.num_rows:
        return KEYS_SCHEMA.empty_table()
    if plan.record_index is not None:
        return record_index_lookup(HoodieTable.load(plan.record_index[0], plan.record_index[1] or None),
                                   records.column(RECORD_KEY).combine_chunks())
    return plan.scan(plan, records)


def _tag_group(plan: _TagPlan, table: pa.Table) -> pa.Table:
    """applyInArrow body: one slice of the batch's keys deduped and tagged in Arrow, with the
    functions the in-process engine uses, against the keys of the files they may live in."""
    records = table.drop_columns([c for c in (SEQ_COL, GROUP_COL) if c in table.column_names])
    # a group holds one partition (or a global index's keys): distinct keys need no combining,
    # and counting them is a hash pass where deduplicating is two sorts
    if plan.dedupe and len(pc.unique(records.column(RECORD_KEY))) < records.num_rows:
        records = dedupe(table.sort_by(SEQ_COL).drop_columns([SEQ_COL, GROUP_COL]), plan.ordering, plan.global_index)
    if plan.bucket_locations is not None:
        tagged = locate_by_bucket(records, plan.bucket_locations, plan.num_buckets)
        if plan.duplicate is not None:
            tagged = plan.duplicate(tagged)
    elif plan.index_type is None:
        none = pa.nulls(records.num_rows, pa.string())
        tagged = records.append_column(LOC_PART, none).append_column(LOC_FILE, none)
    else:
        stored = partial(stored_records, plan.refs, plan.move_merge, plan.move_ordering) \
            if plan.move_merge is not None else None
        tagged = tag_records(records, _existing_keys(plan, records), plan.index_type, plan.update_partition_path,
                             plan.move_ordering, stored)
    # deletes of unknown keys and soft deletes of new keys write nothing
    useless = pc.and_(pc.is_null(tagged.column(LOC_FILE)), pc.is_in(tagged.column(OP_COL), value_set=DELETE_OPS))
    return tagged.filter(pc.invert(useless)).select(plan.out_names)


class _Largest(AccumulatorParam):
    """The largest value per key over tasks (a retried task does not add up)."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:
        for k, n in b.items():
            a[k] = max(a.get(k, 0), n)
        return a


class _SummedCounts(AccumulatorParam):
    """Counts by key summed over tasks (records per partition and operation, per located file
    group): they come back with the tasks' results instead of from a pass of their own over
    the records."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:
        for k, n in b.items():
            a[k] = a.get(k, 0) + n
        return a


def _counted(counts: Any, tagged: pa.Table, group: int) -> pa.Table:
    """``tagged``, its locations added to ``counts`` (the in-process engine's counting), with
    its inserts per partition counted for tag group ``group`` too (``("G", partition, group)``)."""
    upd, ins = ArrowWriteEngine(tagged, LocalExecutor()).bucket_counts()
    counts.add({**{("U", p, f): n for (p, f), n in upd.items()}, **{("I", p, None): n for p, n in ins.items()},
                **{("G", p, group): n for p, n in ins.items()}})
    return tagged


def _tagger(plan: Any, counts: Any, held: Any):
    """The applyInArrow function over the broadcast plan (PySpark reads the Arrow eval type
    from a plain function's type hints, not from a partial)."""
    def tag(table: pa.Table) -> pa.Table:
        freeze_worker_heap()
        group = table.column(GROUP_COL)[0].as_py() if table.num_rows else 0
        held.add({("tag", group): table.num_rows})
        tagged = _counted(counts, _tag_group(plan.value, table), group)
        return (tagged.append_column(GROUP_COL, pa.array(np.full(tagged.num_rows, group), pa.int32()))
                .append_column(INS_POS_COL, insert_positions(tagged)))
    return tag


def _bucket_ider(add_ids: Any):
    """The mapInArrow function adding each record's bucket (typed for PySpark's Arrow eval)."""
    def add_bucket_ids(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from add_ids(pa.Table.from_batches([batch])).to_batches()
    return add_bucket_ids


def _literal_map(values: Mapping[str, Any]) -> Any:
    return F.create_map(*[c for k, v in values.items() for c in (F.lit(k), v)])


def _bucket_column(tasks: list[FileGroupTask], insert_plan: Mapping[str, list[tuple[int, int]]],
                   offsets: Mapping[tuple[str, int], int] | None = None) -> Any:
    """Each record's bucket as an expression over small literal maps built on the driver (no
    broadcast join, no job): updates by their file group, inserts by position into their
    partition's insert buckets. With ``offsets`` (where each tag group's inserts start among
    its partition's) the position is exact and each new group gets the records the plan gave
    it; without, a hash of the key spreads them (about as many)."""
    # (a bucket index's new groups too) Spark scans a literal map per lookup: nested by partition
    by_part: dict[str, dict[str, int]] = {}
    for t in tasks:
        by_part.setdefault(t.partition_path, {})[t.file_id] = t.bucket
    updates = {p: _literal_map({f: F.lit(b) for f, b in groups.items()}) for p, groups in by_part.items()}
    upd = F.element_at(F.element_at(_literal_map(updates), F.col(LOC_PART)), F.col(LOC_FILE)) if updates \
        else F.lit(None).cast("int")
    if not insert_plan:
        return upd.cast("int")
    totals, bounds, buckets = {}, {}, {}
    for part, plan in insert_plan.items():
        his = list(accumulate(c for _, c in plan))
        totals[part] = F.lit(his[-1]).cast("long")
        bounds[part] = F.array(*[F.lit(h).cast("long") for h in his])
        buckets[part] = F.array(*[F.lit(b).cast("int") for b, _ in plan])
    part = F.col(PARTITION_PATH)
    if offsets:
        # per partition, an array of its tag groups' first insert positions, indexed by group
        width: dict[str, int] = {}
        for p, g in offsets:
            width[p] = max(width.get(p, 0), g + 1)
        arrays = {p: F.array(*[F.lit(offsets.get((p, g), 0)).cast("long") for g in range(n)]) for p, n in width.items()}
        pos = F.element_at(F.element_at(_literal_map(arrays), part), F.col(GROUP_COL).cast("int") + 1) \
            + F.col(INS_POS_COL)
    else:
        pos = F.pmod(F.xxhash64(F.coalesce(F.col(RECORD_KEY),  # auto keys: spread by row
                                           F.monotonically_increasing_id().cast("string"))),
                     F.element_at(_literal_map(totals), part))
    ins = F.element_at(F.element_at(_literal_map(buckets), part),
                       F.size(F.filter(F.element_at(_literal_map(bounds), part), lambda h: h <= pos)) + 1)
    return F.when(F.col(LOC_FILE).isNotNull(), upd).otherwise(ins).cast("int")


def _write_buckets(routed: Any, ctx: WriteContext, tasks: list[FileGroupTask], data_columns: list[str],
                   held: Any) -> list[dict[str, Any]]:
    """One task per bucket writes its file group, each bucket a shuffle partition of its own
    (the JVM sorts and the Python worker holds one group's records); the write stats come back."""
    # the located file tells a log append which of its records are inserts (small files)
    keep = [RECORD_KEY, PARTITION_PATH, OP_COL, BUCKET_COL, LOC_FILE] + list(data_columns)
    index = F.element_at(F.create_map(*[c for i, t in enumerate(tasks) for c in (F.lit(t.bucket), F.lit(i))]),
                         F.col(BUCKET_COL))
    try:
        rows = (one_group_per_task(routed, index, len(tasks), TASK_COL).groupBy(TASK_COL)
                .applyInArrow(_group_writer(ctx, {t.bucket: t for t in tasks}, keep, held), "stat string").collect())
    except Exception as exc:
        raise translate_job_error(exc) from exc
    return [json.loads(r[0]) for r in rows]


def _partition_runs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    """The records of each partition path in turn, from batches where each path's records
    are contiguous (a tag group's output): only one partition's records are held at once."""
    held: list[pa.Table] = []
    done: set[str] = set()
    current: str | None = None
    for batch in batches:
        if not batch.num_rows:
            continue
        paths = batch.column(PARTITION_PATH)
        edges = [0] + [i + 1 for i in pc.indices_nonzero(pc.not_equal(paths[:-1], paths[1:])).to_pylist()]
        for start, end in zip(edges, edges[1:] + [batch.num_rows]):
            path = paths[start].as_py()
            if path != current:
                if held:
                    yield pa.Table.from_batches(held)
                    done.add(current)
                if path in done:  # the tag step's groups were not whole partitions
                    raise HoodieError(f"partition {path!r} reached its write task in pieces; rerun the write "
                                      "(it was rolled back), and report this as a bug")
                held, current = [], path
            held.append(batch.slice(start, end - start))
    if held:
        yield pa.Table.from_batches(held)


def _partition_writer(ctx: WriteContext, tasks: Mapping[str, list[FileGroupTask]],
                      insert_plan: Mapping[str, list[tuple[int, int]]], held: Any):
    """mapInArrow body over tagged records grouped by partition path (each at most
    hoodie.copyonwrite.insert.split.size records): each partition's records are routed to
    its buckets and written by the in-process engine, with no shuffle by bucket."""
    def write_partitions(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_heap()
        for records in _partition_runs(batches):
            records = records.drop_columns([c for c in (GROUP_COL, INS_POS_COL) if c in records.column_names])
            path = records.column(PARTITION_PATH)[0].as_py()
            held.add({("write", path): records.num_rows})
            plan = {path: insert_plan[path]} if path in insert_plan else {}
            stats = ArrowWriteEngine(records, LocalExecutor()).write(tasks.get(path, []), plan, ctx)
            yield pa.record_batch({"stat": pa.array([json.dumps(s) for s in stats], pa.string())})
    return write_partitions


class SparkWriteEngine:
    """The write's records as a DataFrame, in at most five Spark jobs: the records keyed and
    kept, their partitions counted (one pass, no shuffle); one shuffle that brings each slice
    of a partition's keys to a task that dedupes and tags them in Arrow against the files
    they may live in, counting them as it goes (two jobs); one shuffle by bucket to the tasks
    that write each file group (two jobs), each tag group and file group a task of its own
    (:mod:`task_partitions`). Only counts come back to the driver. Local checkpoints keep
    the records on the executors between the steps without a cache's extra
    job per use, but also without lineage: an executor lost before the write ends fails the
    write, which is rolled back and can be retried whole."""

    def __init__(self, spark: Any, df: Any, in_schema: pa.Schema) -> None:
        self.spark, self.df, self.in_schema = spark, df, in_schema
        self.keyed: Any = None
        self.tagged: Any = None
        self.plan: Any = None
        self.sizes: dict[tuple[str, str], int] = {}
        self.located: dict[tuple[str, str | None, str | None], int] = {}
        self.dedupe = False
        self.ordering: list[str] = []
        self.split = 1
        #: the tag step's groups are whole partitions: the write needs no shuffle by bucket
        self.whole_partitions = False
        #: the records each Python task of the tag and write steps held, by ("tag", group),
        #: ("write", bucket) or ("write", partition path) when the write takes whole partitions
        self.held: Any = spark.sparkContext.accumulator({}, _Largest())

    def prepare(self, settings: WriteSettings) -> list[str]:
        sizes = self.spark.sparkContext.accumulator({}, _SummedCounts())
        keyed = keyed_dataframe(self.df, self.in_schema, dict(settings.key_generator), settings.operation,
                                list(settings.required_ordering_fields), sizes)
        self.dedupe = settings.dedupe
        self.ordering = list(settings.dedupe_ordering_fields)
        self.split = max(1, settings.sizing.insert_split_size)
        self.keyed = _checkpointed(keyed)  # also where key errors from the Python workers surface
        self.sizes = dict(sizes.value)
        return sorted({p for p, _ in self.sizes})

    def tag(self, client: WriteClient, settings: WriteSettings, files: list[ExistingFile]) -> None:
        refs = file_refs(client, files, settings.key_generator)
        index_type, prune = settings.index_type, settings.bloom_prune_by_ranges
        record_index = uses_record_index(client, index_type)
        # hoodie.bloom.index.use.metadata: ranges and filters from the metadata table (read on
        # the driver in batched lookups); the other files' footers are read by the tag tasks
        known = metadata_footers(client.table, refs, prune) \
            if index_type in ("BLOOM", "GLOBAL_BLOOM") and settings.bloom_use_metadata \
            and client.table is not None and not record_index else {}
        by_part: dict[str, list[int]] = {}
        for i, r in enumerate(refs):
            by_part.setdefault(r.partition_path, []).append(i)
        self._locate(_TagPlan(
            index_type if refs else None, refs, [known.get((r.partition_path, r.file_id)) for r in refs], by_part,
            prune, settings.update_partition_path, self.dedupe, self.ordering, is_global(index_type),
            (client.base_uri, dict(client.storage_options or {})) if record_index else None, [],
            None if record_index else _existing_keys_df, *partition_move_merge(client, settings)))

    def untag(self) -> None:
        if self.dedupe:
            self._locate(_TagPlan(None, [], [], {}, False, False, True, self.ordering, False, None, []))
            return
        # every record new and none to combine: no job; deletes of unknown keys and soft
        # deletes of new keys write nothing
        none = F.lit(None).cast("string")
        self.tagged = (self.keyed.filter(~F.col(OP_COL).isin(*DELETE_OPS.to_pylist()))
                       .withColumn(LOC_PART, none).withColumn(LOC_FILE, none))
        for (p, op), n in self.sizes.items():
            if op not in DELETE_OPS.to_pylist():
                self.located[("I", p, None)] = self.located.get(("I", p, None), 0) + n

    def tag_buckets(self, routing: BucketRouting) -> None:
        """Simple bucket index: each record's bucket computed where it is (no shuffle), the
        (partition, bucket) pairs of upserts collected to name the new groups on the driver
        (small: at most partitions x buckets), then the usual tag step locates by bucket."""
        schema = StructType(list(self.keyed.schema.fields) + [StructField(BUCKET_ID_COL, IntegerType())])
        self.keyed = _checkpointed(self.keyed.mapInArrow(_bucket_ider(routing.id_function()), schema))
        pairs = (self.keyed.filter(~F.col(OP_COL).isin(*DELETE_OPS.to_pylist()))
                 .select(PARTITION_PATH, BUCKET_ID_COL).distinct().collect())
        routing.create((r[0], int(r[1])) for r in pairs)
        self._locate(_TagPlan("BUCKET", [], [], {}, False, False, self.dedupe, self.ordering, False, None, [],
                              bucket_locations=routing.locations(), num_buckets=routing.width,
                              duplicate=routing.duplicates()))

    def _locate(self, plan: _TagPlan) -> None:
        """Tag the records by ``plan``, keep them on the executors and their counts here.
        A group is a slice of a partition's keys (of all keys, for a global index) of at
        most about hoodie.copyonwrite.insert.split.size records, Hudi's file-group size in
        records, so a task's memory follows that, not the batch."""
        out_fields = [f for f in self.keyed.schema.fields if f.name != BUCKET_ID_COL] \
            + [StructField(LOC_PART, StringType()), StructField(LOC_FILE, StringType())]
        plan.out_names = [f.name for f in out_fields]
        out_schema = StructType(out_fields + [StructField(GROUP_COL, IntegerType()),
                                              StructField(INS_POS_COL, LongType())])
        sc = self.spark.sparkContext
        self.plan = sc.broadcast(plan)
        counts = sc.accumulator({}, _SummedCounts())
        index, n_groups = self._tag_groups(plan.global_index)
        src = self.keyed.withColumn(SEQ_COL, F.monotonically_increasing_id()) if plan.dedupe else self.keyed
        self.tagged = _checkpointed(one_group_per_task(src, index, n_groups, GROUP_COL).groupBy(GROUP_COL)
                                    .applyInArrow(_tagger(self.plan, counts, self.held), out_schema))
        self.located = dict(counts.value)
        _drop_checkpoint(self.keyed)  # the tagged records replace it
        self.keyed = None

    def _tag_groups(self, global_index: bool) -> tuple[Any, int]:
        """Each record's tag group (an int column in ``[0, n)``) and the number ``n`` of groups:
        slices of a partition's keys (of all keys, for a global index) by hash, each aimed
        low enough (:func:`tag_slice_target`) to stay within the split; a partition within it
        is one group."""
        per_part: dict[str, int] = {}
        for (p, _), n in self.sizes.items():
            per_part[p] = per_part.get(p, 0) + n
        target = tag_slice_target(self.split)
        key_hash = F.xxhash64(F.col(RECORD_KEY))
        if global_index:
            total = sum(per_part.values())
            n = 1 if total <= self.split else -(-total // target)
            return F.pmod(key_hash, F.lit(n)), n
        self.whole_partitions = max(per_part.values(), default=0) <= self.split
        slices = {p: 1 if n <= self.split else -(-n // target) for p, n in per_part.items()}
        starts = dict(zip(slices, accumulate([0] + list(slices.values()))))
        part = F.col(PARTITION_PATH)
        if self.whole_partitions:
            return F.element_at(_literal_map({p: F.lit(o) for p, o in starts.items()}), part), max(1, len(slices))
        return (F.element_at(_literal_map({p: F.lit(o) for p, o in starts.items()}), part)
                + F.pmod(key_hash, F.element_at(_literal_map({p: F.lit(n) for p, n in slices.items()}), part)),
                max(1, sum(slices.values())))

    def _insert_offsets(self) -> dict[tuple[str, int], int] | None:
        """Where each tag group's inserts start among its partition's (groups in key order)."""
        counted = sorted((p, g, n) for (kind, p, g), n in self.located.items() if kind == "G")
        if not counted:
            return None
        offsets, at = {}, {}
        for p, g, n in counted:
            offsets[(p, g)] = at.get(p, 0)
            at[p] = at.get(p, 0) + n
        return offsets

    def bucket_counts(self) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
        upd = {(part, fid): n for (kind, part, fid), n in self.located.items() if kind == "U"}
        ins = {part: n for (kind, part, _), n in self.located.items() if kind == "I"}
        return upd, ins

    def write(self, tasks: list[FileGroupTask], insert_plan: Mapping[str, list[tuple[int, int]]],
              ctx: WriteContext) -> list[dict[str, Any]]:
        if not tasks:
            return []
        if self.whole_partitions:
            by_part: dict[str, list[FileGroupTask]] = {}
            for t in tasks:
                by_part.setdefault(t.partition_path, []).append(t)
            try:
                rows = self.tagged.mapInArrow(_partition_writer(ctx, by_part, insert_plan, self.held),
                                              "stat string").collect()
            except Exception as exc:
                raise translate_job_error(exc) from exc
            return [json.loads(r[0]) for r in rows]
        offsets = self._insert_offsets() if INS_POS_COL in self.tagged.columns else None
        routed = self.tagged.withColumn(BUCKET_COL, _bucket_column(tasks, insert_plan, offsets))
        return _write_buckets(routed, ctx, tasks, self.df.columns, self.held)

    def report(self, message: str) -> None:
        progress(message)

    def release(self) -> None:
        for frame in (self.tagged, self.keyed):
            _drop_checkpoint(frame)
        self.tagged = self.keyed = None
        if self.plan is not None:
            self.plan.destroy()


def _checkpointed(frame: Any) -> Any:
    """``frame`` computed once, now, and kept on the executors (one job, as a cache would
    take two: its own and the first use's), in memory and spilled to disk past Spark's
    storage memory. DISK_ONLY was tried: a 1M-row upsert (benchmarks/scaling.py, 8 MB groups)
    took 106 s instead of 81 s, the write's shuffle reading the rows back, for no JVM RSS
    gain beyond the run-to-run noise (1528 vs 1167 MB)."""
    try:
        return frame.localCheckpoint(eager=True)
    except Exception as exc:
        raise translate_job_error(exc) from exc


def _drop_checkpoint(frame: Any) -> None:
    """Free a checkpoint's blocks now rather than when the JVM collects its RDD."""
    if frame is None:
        return
    try:
        frame._jdf.logicalPlan().rdd().unpersist(False)
    except Exception:  # noqa: BLE001 - not a local checkpoint (e.g. Spark Connect): Spark's cleaner frees it
        pass


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

    def tag(self, client: WriteClient, settings: WriteSettings, files: list[ExistingFile]) -> None:
        self.file_bytes = {(f.partition_path, f.file_id): f.base_size + f.log_size for f in files}
        self._run_where(sum(self.file_bytes.values()))
        super().tag(client, settings, files)

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


