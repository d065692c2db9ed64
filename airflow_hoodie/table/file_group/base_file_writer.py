"""Parquet base files as Hudi writes them: meta columns first, bloom filter and key range in the footer.

Hudi's HoodieAvroWriteSupport puts ``org.apache.hudi.bloomfilter``,
``hoodie_bloom_filter_type_code``, ``hoodie_min_record_key`` and ``hoodie_max_record_key``
next to parquet-avro's ``parquet.avro.schema`` / ``writer.model.name=avro`` in the file
footer. The BLOOM index of every engine (Hudi, hudi-rs, us) prunes files with those keys,
so a base file without them would be read correctly but never found by a lookup.
"""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_hoodie.settings.base_file import BaseFileSettings, BloomSettings
from airflow_hoodie.table.schema.meta_fields import (
    COMMIT_SEQNO,
    COMMIT_TIME,
    FILE_NAME,
    META_COLUMNS,
    PARTITION_PATH,
    RECORD_KEY,
)
from airflow_hoodie.table.storage.storage import Storage

if TYPE_CHECKING:  # imported when a filter is built, not with this module
    from airflow_hoodie.table.bloom.bloom_footer import SerializedFilter

AVRO_SCHEMA_KEY = "parquet.avro.schema"
WRITER_MODEL_KEY = "writer.model.name"


@dataclass
class BaseFileStats:
    """What a write stat needs to know about one base file written."""

    path: str  # relative to the table base path, '/'-separated
    file_name: str
    partition_path: str
    num_records: int
    file_size: int
    min_record_key: str | None
    max_record_key: str | None


def with_meta_fields(avro_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The table's Avro record schema with Hudi's five meta fields in front (as parquet-avro stores it)."""
    fields = [f for f in avro_schema.get("fields", []) if f["name"] not in META_COLUMNS]
    meta = [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_COLUMNS]
    out = dict(avro_schema)
    out["fields"] = meta + list(fields)
    return out


def data_columns(table: pa.Table) -> list[str]:
    return [n for n in table.column_names if n not in META_COLUMNS]


def seqno_array(commit_time: str, partition_id: int, start: int, count: int) -> pa.Array:
    """``<instant>_<sparkPartitionId>_<recordIndex>``, Hudi's HoodieRecord.generateSequenceId.
    The indexes come from numpy: a Python range cost 33 ms per 100k rows, a fifth of a
    bulk_insert task's CPU."""
    prefix = f"{commit_time}_{partition_id}_"
    idx = pc.cast(pa.array(np.arange(start, start + count, dtype=np.int64)), pa.string())
    return pc.binary_join_element_wise(pa.scalar(prefix), idx, "")


#: meta columns with one value per write (commit time, partition path, file name): parquet
#: stores them dictionary-encoded, and a merge reads and writes them as dictionaries
ONE_VALUE_META_COLUMNS = (COMMIT_TIME, PARTITION_PATH, FILE_NAME)


def repeated_string(value: str, n: int, dictionary: bool) -> pa.Array:
    """``value`` ``n`` times; as a one-value dictionary when ``dictionary``, which parquet
    writes from its indexes without hashing ``n`` strings."""
    if dictionary:
        return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], pa.string()))
    return pa.repeat(pa.scalar(value, pa.string()), n)


def dictionary_as_written(column: pa.ChunkedArray) -> pa.Array:
    """A dictionary column with only the values its rows use, in the order they first appear:
    the dictionary parquet's encoder builds from the same rows as strings. Rows read from a
    file keep that file's dictionary, which a merge may have left values unused in (every
    row of an older commit replaced) or in another first-use order; written as it is, the
    file would differ from the one the strings make."""
    arr = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    size = len(arr.dictionary)
    if size <= 1 or not len(arr):
        return arr
    valid = None if arr.null_count == 0 else pc.is_valid(arr).to_numpy(zero_copy_only=False)
    idx = arr.indices.fill_null(0).to_numpy(zero_copy_only=False)
    live = idx if valid is None else idx[valid]  # a null's index points nowhere
    if size <= 16:  # one value per commit or partition: a pass per value beats a sort
        used = np.flatnonzero(np.bincount(live, minlength=size))
        order = used[np.argsort([int(np.argmax(live == v)) for v in used], kind="stable")]
    else:
        used, first = np.unique(live, return_index=True)
        order = used[np.argsort(first, kind="stable")]
    if len(order) == size and (order == np.arange(size)).all():
        return arr
    remap = np.zeros(size, dtype=idx.dtype)
    remap[order] = np.arange(len(order), dtype=idx.dtype)
    indices = pa.array(remap[idx], mask=None if valid is None else ~valid)
    return pa.DictionaryArray.from_arrays(indices, arr.dictionary.take(pa.array(order)))


def stamp_meta_columns(
    data: pa.Table,
    record_keys: pa.Array | pa.ChunkedArray,
    partition_path: str,
    commit_time: str,
    file_name: str,
    partition_id: int = 0,
    seq_start: int = 0,
    dictionary: bool = False,
) -> pa.Table:
    """Return ``data`` (without meta columns) with freshly filled meta columns in front.

    ``dictionary``: the three meta columns that hold one value per file (commit time,
    partition path, file name) come as one-value dictionaries, for a table written straight
    to parquet. The file's bytes are the same (those columns are dictionary-encoded either
    way), and the table is smaller: for a file group of 1.6M inserts the repeated strings
    alone took about 150 MB of a write task's memory."""
    n = data.num_rows
    cols = data_columns(data)
    keys = pa.chunked_array([record_keys]) if isinstance(record_keys, pa.Array) else record_keys
    arrays = [
        repeated_string(commit_time, n, dictionary),
        seqno_array(commit_time, partition_id, seq_start, n),
        keys if keys.type == pa.string() else keys.cast(pa.string()),
        repeated_string(partition_path, n, dictionary),
        repeated_string(file_name, n, dictionary),
    ]
    return pa.Table.from_arrays(arrays + [data.column(c) for c in cols], names=list(META_COLUMNS) + cols)


#: meta columns with a distinct value per row: a dictionary page for them is built, found
#: too big and thrown away (parquet-java and Arrow both fall back to plain pages), which
#: cost a third of the write time of a file and left it larger
UNIQUE_META_COLUMNS = (COMMIT_SEQNO, RECORD_KEY)


def unique_columns(settings: BaseFileSettings, column_names: list[str]) -> list[str]:
    """Columns whose values are distinct in every file: the unique meta columns, and the
    record key field when the key is that one field (its values are the record keys, one
    per row of a file group). A dictionary of such a column never pays: building it cost a
    fifth of a compaction's parquet encoding (100k keys per file), and it is dropped anyway."""
    key_field = settings.key_field
    return [c for c in column_names if c in UNIQUE_META_COLUMNS or c == key_field]


#: values of a column the dictionary decision looks at: parquet-mr decides on a column's
#: first page (at most 20,000 rows); a near-unique column shows itself in far fewer
DICTIONARY_SAMPLE_ROWS = 4096


def dictionary_columns(table: pa.Table, settings: BaseFileSettings) -> list[str]:
    """The columns worth a dictionary: not the unique ones (:func:`unique_columns`), and not a
    data column whose first values a dictionary does not compress.

    parquet-mr, Hudi's parquet writer, checks after a column's first page whether the
    dictionary plus the values' indices come out smaller than the values themselves, and
    writes the column plain when they do not. Arrow's writer has no such check: it builds the
    dictionary until the page limit and keeps it. For a near-unique column (an amount, a
    name) that cost a quarter of a file's encoding (8 of 29 ms for 100k rows of the upsert
    benchmark's merge) and made the file 10% larger."""
    unique = set(unique_columns(settings, table.column_names))
    return [name for name, col in zip(table.column_names, table.columns)
            if name not in unique and (name in META_COLUMNS or _dictionary_pays(col.slice(0, DICTIONARY_SAMPLE_ROWS)))]


def _dictionary_pays(values: pa.ChunkedArray) -> bool:
    """parquet-mr's test (dictionary bytes + bit-packed indices < plain bytes) on ``values``;
    True for what it cannot size (nested, boolean, already dictionary-encoded)."""
    typ = values.type
    text = pa.types.is_string(typ) or pa.types.is_binary(typ) or pa.types.is_large_string(typ) \
        or pa.types.is_large_binary(typ)
    if not text and (pa.types.is_nested(typ) or pa.types.is_dictionary(typ) or pa.types.is_boolean(typ)
                     or pa.types.is_null(typ) or typ.bit_width < 8):
        return True
    values = values.drop_null()
    n = len(values)
    if not n:
        return True
    distinct = pc.unique(values)
    if text:  # plain BYTE_ARRAY: a 4-byte length before each value
        raw = 4 * n + (pc.sum(pc.binary_length(values)).as_py() or 0)
        dictionary = 4 * len(distinct) + (pc.sum(pc.binary_length(distinct)).as_py() or 0)
    else:
        width = typ.bit_width // 8
        raw, dictionary = width * n, width * len(distinct)
    index_bytes = n * max(1, (len(distinct) - 1).bit_length()) / 8
    return dictionary + index_bytes < raw


#: rows per parquet row group (parquet-avro sizes them by hoodie.parquet.block.size bytes;
#: a row cap keeps the writer's memory bounded the same way)
ROW_GROUP_ROWS = 1 << 20


#: the deflate level of a gzip base file: zlib's default, as parquet-java compresses through
#: Hadoop's GzipCodec (``zlib.compress.level`` unset: DEFAULT_COMPRESSION). Arrow's own gzip
#: default is level 9, which took 7x the CPU for a file 0.5% smaller (100k rows of the
#: upsert benchmark: 1.08 s against 0.15 s), most of a write's time.
GZIP_LEVEL = 6


def compression_level(codec: str | None) -> int | None:
    """The level a base file of ``codec`` is compressed at (None: Arrow's default for it)."""
    return GZIP_LEVEL if (codec or "").lower() == "gzip" else None


_bloom_pool: ThreadPoolExecutor | None = None
_bloom_pool_lock = threading.Lock()


def _forget_bloom_pool() -> None:
    """In a forked child the parent's pool threads do not exist; start a new pool there."""
    global _bloom_pool, _bloom_pool_lock
    _bloom_pool = None
    _bloom_pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_bloom_pool)


def _bloom_executor() -> ThreadPoolExecutor:
    """Bloom threads kept for the process, started on first use. Starting a thread per file
    cost a scheduler round trip each time (about 30 ms per file on a busy 2-core machine,
    measured in compaction). A serial writer reuses one idle thread; writers on several
    threads get up to one per CPU. The at-fork hook gives a forked child its own pool."""
    global _bloom_pool
    with _bloom_pool_lock:
        if _bloom_pool is None:
            _bloom_pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="hoodie-bloom")
        return _bloom_pool


def _bloom_footer(keys: pa.ChunkedArray, settings: BloomSettings, bf: SerializedFilter | None = None
                  ) -> dict[bytes, bytes]:
    from airflow_hoodie.table.bloom.bloom_footer import (
        BLOOM_FILTER_KEY,
        BLOOM_FILTER_TYPE_KEY,
        new_bloom_filter,
    )

    if bf is None:
        bf = new_bloom_filter(settings)
        bf.add_many(keys.combine_chunks())
    type_code = getattr(bf, "type_code", None) or settings.filter_type
    return {
        BLOOM_FILTER_KEY.encode(): bf.serialize().encode(),
        BLOOM_FILTER_TYPE_KEY.encode(): str(type_code).encode(),
    }


def _footer(bloom: dict[bytes, bytes], min_key: str | None, max_key: str | None,
            avro_schema: Mapping[str, Any]) -> dict[bytes, bytes]:
    """The key-value footer in the order parquet-avro + Hudi's write support emit it."""
    footer = dict(bloom)
    if min_key is not None:
        footer[b"hoodie_min_record_key"] = min_key.encode()
        footer[b"hoodie_max_record_key"] = max_key.encode()
    footer[AVRO_SCHEMA_KEY.encode()] = json.dumps(with_meta_fields(avro_schema), separators=(",", ":")).encode()
    footer[WRITER_MODEL_KEY.encode()] = b"avro"
    return footer


def _row_groups(table: pa.Table) -> Iterator[pa.Table]:
    """``table`` in row groups, each dictionary column with only the values its rows use, in
    first-use order (:func:`dictionary_as_written`): Arrow writes a dictionary array's whole
    dictionary into every row group, where the encoder builds each row group's from its own
    rows. A merge that replaced or deleted every row of a commit, or a file of several row
    groups, would otherwise carry values no row of the row group holds."""
    dictionaries = [i for i, f in enumerate(table.schema) if pa.types.is_dictionary(f.type)]
    if not dictionaries or not table.num_rows:
        yield table
        return
    for start in range(0, table.num_rows, ROW_GROUP_ROWS):
        group = table.slice(start, ROW_GROUP_ROWS)
        for i in dictionaries:
            group = group.set_column(i, table.schema.field(i), dictionary_as_written(group.column(i)))
        yield group


def write_base_file(
    storage: Storage,
    base_path: str,
    partition_path: str,
    file_name: str,
    table: pa.Table,
    avro_schema: Mapping[str, Any],
    settings: BaseFileSettings,
    compression: str | None = None,
    bloom_filter: SerializedFilter | None = None,
) -> BaseFileStats:
    """Write ``table`` (meta columns first, already filled) as a Hudi parquet base file.

    ``avro_schema`` is the table's record schema without meta fields; the footer gets it
    with them, as parquet-avro does. ``bloom_filter``: a filter the caller already holds with
    every record key of ``table`` (None: built here from them). Returns the stats a
    WriteStat is built from.
    """
    keys = table.column(RECORD_KEY)
    # a table without meta fields (hoodie.populate.meta.fields=false) writes its files without
    # record keys, and so, as Hudi does, without a bloom filter or key range in the footer; a
    # file of no records (every record deleted) still gets its (empty) filter, as Hudi's write
    # support always adds one: Hudi's BLOOM index fails on a file of a keyed table without it
    keyed = keys.null_count < table.num_rows if table.num_rows else settings.populate_meta_fields
    # The bloom filter (tens of hash rounds per key, in numpy) only goes into the footer,
    # so it is built beside the parquet encoding instead of before it.
    bloom = _bloom_executor().submit(_bloom_footer, keys, settings.bloom, bloom_filter) if keyed else None
    min_key = max_key = None
    if keyed:  # in Java's String order, as Hudi's Avro writer bounds them (its BLOOM index compares so)
        from airflow_hoodie.table.bloom.bloom_footer import min_max_record_keys

        min_key, max_key = min_max_record_keys(keys)
    table = table.replace_schema_metadata(None)
    codec = compression or settings.compression
    rel = f"{partition_path}/{file_name}" if partition_path else file_name
    part_dir = storage.join(base_path, partition_path) if partition_path else base_path
    storage.mkdirs(part_dir)
    full = storage.join(part_dir, file_name)
    page_size = settings.page_size
    with storage.open_output(full) as out:
        with pq.ParquetWriter(
            out, table.schema, compression=None if codec in ("", "uncompressed", "none") else codec,
            compression_level=compression_level(codec),
            data_page_size=page_size, store_schema=False, write_statistics=True,
            use_dictionary=dictionary_columns(table, settings),
        ) as writer:
            for group in _row_groups(table):
                writer.write_table(group, row_group_size=ROW_GROUP_ROWS)
            footer = _footer(bloom.result() if bloom else {}, min_key, max_key, avro_schema)
            writer.add_key_value_metadata({k.decode(): v.decode() for k, v in footer.items()})
    size = storage.size(full)
    return BaseFileStats(rel, file_name, partition_path, table.num_rows, size, min_key, max_key)
