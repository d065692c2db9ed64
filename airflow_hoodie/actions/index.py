"""Index lookup over Arrow data: which file group holds each incoming record key.

The per-file functions (:func:`file_keys`, :func:`file_key_range`) are plain functions
so Spark tasks and local tests call the same code. Hudi's index types map onto two
questions: *global or per partition* and *how candidate files are pruned* (SIMPLE reads
every key; BLOOM first prunes by the footer's min/max keys and bloom filter, then checks
the keys of the remaining files exactly). Both give the same answer; BLOOM reads less.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.bloom import bloom_filter as bfm
from airflow_hoodie.table.bloom.bloom_footer import (
    BLOOM_FILTER_KEY,
    BLOOM_FILTER_TYPE_KEY,
    MAX_KEY,
    MIN_KEY,
    java_order,
    orders_differ,
)
from airflow_hoodie.table.bloom.bloom_hash import as_string_array
from airflow_hoodie.table.file_group.file_group import BaseFile, FileSlice, LogFile
from airflow_hoodie.table.file_group.file_slice_reader import SliceReadOptions, read_file_slice
from airflow_hoodie.table.file_group.slice_keys import slice_record_keys
from airflow_hoodie.table.metadata_table.record_index import read_record_index
from airflow_hoodie.table.record_merger import MergeConfig
from airflow_hoodie.table.schema.meta_fields import PARTITION_PATH, RECORD_KEY
from airflow_hoodie.table.storage.storage import Storage

KEYS_SCHEMA = pa.schema([
    pa.field("key", pa.string()), pa.field("partition", pa.string()), pa.field("file_id", pa.string()),
])
LOC_FILE = "_hoodie_loc_file"
LOC_PART = "_hoodie_loc_part"


def validate_index_type(index_type: str) -> str:
    t = (index_type or "SIMPLE").upper()
    if t not in ("SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM", "IN_MEMORY", "RECORD_INDEX", "BUCKET"):
        raise HoodieConfigError(
            f"hoodie.index.type={index_type!r} is not supported here; use SIMPLE, GLOBAL_SIMPLE, BLOOM, "
            "GLOBAL_BLOOM, IN_MEMORY, RECORD_INDEX or BUCKET.")
    return t


def is_global(index_type: str) -> bool:
    # IN_MEMORY is Hudi's global in-process hash index; RECORD_INDEX maps each key to one
    # file group of the whole table
    return index_type in ("GLOBAL_SIMPLE", "GLOBAL_BLOOM", "IN_MEMORY", "RECORD_INDEX")


@dataclass
class FileRef:
    """What a task needs to read one file group's keys (plain data, picklable)."""

    base_uri: str
    storage_options: dict[str, str]
    partition_path: str
    file_id: str
    base_file: str | None
    log_files: list[str]
    base_instant: str
    valid_instants: list[str]
    latest_instant: str
    #: log blocks of older instants belong to archived commits (Timeline.first_non_savepoint_commit)
    timeline_start: str | None = None
    #: the key generator's settings when the files carry no record keys (no meta fields)
    key_generator: dict[str, str] | None = None


def _slice_keys(ref: FileRef) -> pa.Array:
    """Live record keys of a file slice: base file keys, plus log data keys, minus log deletes."""
    storage, base_path = Storage.for_uri(ref.base_uri, ref.storage_options or None)
    return slice_record_keys(storage, storage.join(base_path, ref.base_file) if ref.base_file else None,
                             [storage.join(base_path, p) for p in ref.log_files], ref.latest_instant,
                             ref.valid_instants, ref.timeline_start, ref.key_generator)


def file_keys(ref: FileRef, wanted: pa.Array | None = None) -> pa.Table:
    """(key, partition, file_id) of a file slice's live record keys.

    ``wanted`` (the batch's keys that may live here) keeps only those: a lookup then moves
    the keys it found, not every key of the table (1M keys for a 100k batch before)."""
    keys = _slice_keys(ref)
    if wanted is not None:
        keys = keys.filter(pc.is_in(keys, value_set=wanted))
    n = len(keys)
    return pa.table({
        "key": keys,
        "partition": pa.repeat(pa.scalar(ref.partition_path, pa.string()), n),
        "file_id": pa.repeat(pa.scalar(ref.file_id, pa.string()), n),
    }, schema=KEYS_SCHEMA)


def stored_records(refs: Sequence[FileRef], merge_config: MergeConfig, fields: Sequence[str],
                   located: pa.Table) -> pa.Table:
    """(key, location partition, location file id, ``fields``) of the records stored at
    ``located``'s locations (key, ``_hoodie_loc_part``, ``_hoodie_loc_file`` rows), each as a
    reader sees it: the slice the key lookup read, its logs merged by the table's merge
    semantics. A location whose slice no longer holds the key gives no row."""
    by_loc = {(r.partition_path, r.file_id): r for r in refs}
    loc_cols = [RECORD_KEY, LOC_PART, LOC_FILE]
    grouped = located.group_by([LOC_PART, LOC_FILE]).aggregate([(RECORD_KEY, "list")])
    pieces = []
    for part, fid, keys in zip(grouped.column(LOC_PART).to_pylist(), grouped.column(LOC_FILE).to_pylist(),
                               grouped.column(RECORD_KEY + "_list").combine_chunks()):
        ref = by_loc.get((part, fid))
        if ref is None or not (ref.base_file or ref.log_files):
            continue
        storage, base_path = Storage.for_uri(ref.base_uri, ref.storage_options or None)
        slice_ = FileSlice(part, fid, ref.base_instant,
                           BaseFile.from_path(storage.join(base_path, ref.base_file), 0, part) if ref.base_file
                           else None,
                           [lf for p in ref.log_files
                            for lf in [LogFile.from_path(storage.join(base_path, p), 0, part)] if lf is not None])
        keys = keys.values
        opts = SliceReadOptions(merge_config=merge_config, columns=[RECORD_KEY, *fields],
                                filter=ds.field(RECORD_KEY).isin(keys), filter_columns=[RECORD_KEY],
                                as_of=ref.latest_instant, valid_instants=frozenset(ref.valid_instants),
                                timeline_start=ref.timeline_start)
        rows = read_file_slice(storage, slice_, opts)
        if not rows.num_rows:
            continue
        n = rows.num_rows
        piece = {RECORD_KEY: rows.column(RECORD_KEY).cast(pa.string()),
                 LOC_PART: pa.repeat(pa.scalar(part, pa.string()), n),
                 LOC_FILE: pa.repeat(pa.scalar(fid, pa.string()), n)}
        piece.update({f: rows.column(f) for f in fields if f in rows.column_names})
        pieces.append(pa.table(piece))
    if not pieces:
        return pa.table({c: pa.array([], pa.string()) for c in loc_cols})
    return pa.concat_tables(pieces, promote_options="permissive")


def record_index_lookup(table: Any, keys: pa.Array) -> pa.Table:
    """(key, partition, file_id) of the ``keys`` the metadata table's record index holds:
    the keys grouped by the record-index file group they hash to, each group read once
    (Hudi's SparkMetadataTableRecordIndex), instead of reading the keys of every data file."""
    found = read_record_index(table, pc.unique(keys.drop_null()).to_pylist())
    names = list(found)
    return pa.table({"key": pa.array(names, pa.string()),
                     "partition": pa.array([found[k][0] for k in names], pa.string()),
                     "file_id": pa.array([found[k][1] for k in names], pa.string())}, schema=KEYS_SCHEMA)


def file_footer(ref: FileRef) -> dict[str, Any]:
    """min/max record key and serialized bloom filter of a slice's base file (BLOOM index)."""
    out: dict[str, Any] = {"partition": ref.partition_path, "file_id": ref.file_id,
                           "min": None, "max": None, "bloom": None, "bloom_type": None}
    if not ref.base_file or ref.log_files:
        return out  # log records are not in the footer: always a candidate
    storage, base_path = Storage.for_uri(ref.base_uri, ref.storage_options or None)
    md = pq.read_metadata(storage.open_input(storage.join(base_path, ref.base_file))).metadata or {}
    get = lambda k: md.get(k.encode()).decode() if md.get(k.encode()) is not None else None  # noqa: E731
    out["min"], out["max"] = get(MIN_KEY), get(MAX_KEY)
    out["bloom"], out["bloom_type"] = get(BLOOM_FILTER_KEY), get(BLOOM_FILTER_TYPE_KEY)
    return out


def metadata_footers(table: Any, refs: list[FileRef], prune_by_ranges: bool = True
                     ) -> dict[tuple[str, str], dict[str, Any]]:
    """:func:`file_footer` of each base-file-only slice, from the metadata table
    (``hoodie.bloom.index.use.metadata``): key ranges from ``column_stats`` (the
    ``_hoodie_record_key`` column) and filters from ``bloom_filters``, each partition read with
    one batched lookup per metadata-table file group, not one footer per data file. A slice
    the metadata table does not describe (no record, or a partition missing) is left out, and
    its footer is read as before."""
    from airflow_hoodie.table.metadata_table.bloom_filter_index import BLOOM_FILTERS_PARTITION  # noqa: PLC0415
    from airflow_hoodie.table.metadata_table.column_stats import (  # noqa: PLC0415
        COLUMN_STATS_PARTITION,
        comparable_value,
    )
    from airflow_hoodie.table.metadata_table.index_keys import bloom_filter_key, column_stats_key  # noqa: PLC0415
    from airflow_hoodie.table.metadata_table.stats_partitions import kept_stats_partitions  # noqa: PLC0415
    from airflow_hoodie.table.metadata_table.stats_reader import (  # noqa: PLC0415
        index_partition_files,
        read_index_records,
    )

    kept = kept_stats_partitions(table)
    if BLOOM_FILTERS_PARTITION not in kept or (prune_by_ranges and COLUMN_STATS_PARTITION not in kept):
        return {}
    plain = [r for r in refs if r.base_file and not r.log_files]
    name = {id(r): r.base_file.rsplit("/", 1)[-1] for r in plain}  # type: ignore[union-attr]
    blooms = read_index_records(index_partition_files(table, BLOOM_FILTERS_PARTITION),
                                [bloom_filter_key(r.partition_path, name[id(r)]) for r in plain])
    ranges: dict[str, dict[str, Any]] = {}
    if prune_by_ranges:
        ranges = read_index_records(index_partition_files(table, COLUMN_STATS_PARTITION),
                                    [column_stats_key(RECORD_KEY, r.partition_path, name[id(r)]) for r in plain])
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for r in plain:
        bloom = blooms.get(bloom_filter_key(r.partition_path, name[id(r)]))
        meta = (bloom or {}).get("BloomFilterMetadata") or {}
        if not meta.get("bloomFilter"):
            continue
        footer: dict[str, Any] = {"partition": r.partition_path, "file_id": r.file_id, "min": None, "max": None,
                                  "bloom": bytes(meta["bloomFilter"]).decode("utf-8"),
                                  "bloom_type": meta.get("type") or None}
        if prune_by_ranges:
            stats = (ranges.get(column_stats_key(RECORD_KEY, r.partition_path, name[id(r)])) or {}
                     ).get("ColumnStatsMetadata")
            if not stats:
                continue
            footer["min"] = comparable_value(stats.get("minValue"), stats.get("valueType"))
            footer["max"] = comparable_value(stats.get("maxValue"), stats.get("valueType"))
        out[(r.partition_path, r.file_id)] = footer
    return out


def in_key_range(keys: pa.Array, min_key: str, max_key: str) -> pa.Array:
    """Boolean mask: is each key within a file's [min, max] record-key range? Hudi's Avro
    writer bounds a file in Java's String order, its Spark row writer (and parquet
    statistics) in UTF-8 byte order; where the two differ, a key in range under either may
    be in the file."""
    mask = pc.and_(pc.greater_equal(keys, min_key), pc.less_equal(keys, max_key))
    if not orders_differ(pa.concat_arrays([as_string_array(keys).cast(pa.large_string()),
                                           pa.array([min_key, max_key], pa.large_string())])):
        return mask
    lo, hi = java_order(min_key), java_order(max_key)
    java = [k is not None and lo <= java_order(k) <= hi for k in keys.to_pylist()]
    return pc.or_(pc.fill_null(mask, False), pa.array(java, pa.bool_()))


def keys_by_partition(keys: pa.Array, partitions: pa.Array) -> dict[str, pa.Array]:
    """The keys of each partition path, grouped once (a file can only hold its own partition's)."""
    grouped = pa.table({"p": partitions, "k": keys}).group_by("p").aggregate([("k", "list")])
    return {p: lst.values for p, lst in zip(grouped.column("p").to_pylist(), grouped.column("k_list").combine_chunks())}


def bloom_candidates(keys: pa.Array, footer: dict[str, Any], prune_by_ranges: bool = True) -> pa.Array:
    """Boolean mask: may each key be in this file? (range check, then bloom filter)."""
    n = len(keys)
    mask = pa.array([True] * n, pa.bool_())
    if prune_by_ranges and footer.get("min") is not None and footer.get("max") is not None:
        mask = in_key_range(keys, footer["min"], footer["max"])
    if footer.get("bloom"):
        bf = bfm.load_bloom_filter(footer["bloom"], footer.get("bloom_type") or "DYNAMIC_V0")
        idx = pc.indices_nonzero(mask)
        if len(idx):
            sub = pc.take(keys, idx)
            full = np.zeros(n, dtype=bool)
            full[idx.to_numpy()] = np.asarray(bf.might_contain_many(sub), dtype=bool)
            mask = pa.array(full, pa.bool_())
    return pc.fill_null(mask, False)


def probe_file(ref: FileRef, wanted: pa.Array, use_bloom: bool, prune_by_ranges: bool = True,
               footer: dict[str, Any] | None = None) -> pa.Table:
    """(key, partition, file_id) of the ``wanted`` keys this file slice holds. With a BLOOM
    index the footer's key range and bloom filter first drop the keys it cannot hold: a file
    they all miss is read no further than its footer, and no footer leaves the task.
    ``footer``: the same facts taken from the metadata table (:func:`metadata_footers`), so
    not even the footer is read."""
    if use_bloom:
        wanted = wanted.filter(bloom_candidates(wanted, footer if footer is not None else file_footer(ref),
                                                prune_by_ranges))
    if not len(wanted):
        return KEYS_SCHEMA.empty_table()
    return file_keys(ref, wanted)


#: keys read from files before one membership test of the wanted keys runs over them all
PROBE_CHUNK_KEYS = 1_000_000


def probe_files(refs: Sequence[FileRef], wanted: pa.Array, chunk_keys: int = PROBE_CHUNK_KEYS) -> pa.Table:
    """:func:`probe_file` without bloom filters over several file slices, in their order.

    Testing each file's keys against ``wanted`` builds a hash set of every wanted key per
    file: a tag task of 500k keys over a partition of 80 file groups built 80 such sets.
    Here the keys of consecutive files are tested together, one set per ``chunk_keys``
    keys read, so memory stays bounded by the chunk, not the partition."""
    if not len(wanted):
        return KEYS_SCHEMA.empty_table()
    found: list[pa.Table] = []
    pending: list[tuple[int, pa.Array]] = []
    partitions = pa.array([r.partition_path for r in refs], pa.string())
    file_ids = pa.array([r.file_id for r in refs], pa.string())

    def test_pending() -> None:
        keys = pa.concat_arrays([k for _, k in pending])
        owner = np.repeat(np.array([i for i, _ in pending], np.int64), [len(k) for _, k in pending])
        hit = pc.is_in(keys, value_set=wanted)
        at = owner[hit.to_numpy(zero_copy_only=False)]
        if len(at):
            found.append(pa.table({"key": keys.filter(hit), "partition": partitions.take(at),
                                   "file_id": file_ids.take(at)}, schema=KEYS_SCHEMA))
        pending.clear()

    held = 0
    for i, ref in enumerate(refs):
        keys = _slice_keys(ref)
        pending.append((i, keys))
        held += len(keys)
        if held >= chunk_keys:
            test_pending()
            held = 0
    if pending:
        test_pending()
    return pa.concat_tables(found) if found else KEYS_SCHEMA.empty_table()


def lookup(batch: pa.Table, existing: pa.Table, global_index: bool) -> pa.Table:
    """Add ``_hoodie_loc_part`` / ``_hoodie_loc_file`` (null = not found) to ``batch``."""
    existing = existing.group_by(["key"]).aggregate([("partition", "min"), ("file_id", "min")]) \
        .rename_columns(["key", "partition", "file_id"]) if global_index else existing
    left_keys = [RECORD_KEY] if global_index else [RECORD_KEY, PARTITION_PATH]
    right_keys = ["key"] if global_index else ["key", "partition"]
    ex = existing.rename_columns(["key", LOC_PART, LOC_FILE])
    if not global_index:
        ex = ex.append_column("partition", ex.column(LOC_PART))
    # Join only the keys and a row number, then attach the locations to the batch by row:
    # Arrow's hash join cannot carry nested (struct, list, map) payload columns.
    idx_col = "__row"
    b = batch.select(left_keys).append_column(idx_col, pa.array(np.arange(batch.num_rows, dtype=np.int64)))
    joined = b.join(ex, keys=left_keys, right_keys=right_keys, join_type="left outer").sort_by(idx_col)
    if joined.num_rows != batch.num_rows:
        # A key stored in several file groups (a table that took the same key twice through
        # inserts): as Hudi's tagLocationBacktoRecords joins records with every location of
        # their key, the record goes to each of them, so no stored copy keeps an old value.
        batch = batch.take(joined.column(idx_col))
    return batch.append_column(LOC_PART, joined.column(LOC_PART)).append_column(LOC_FILE, joined.column(LOC_FILE))
