"""Keeping ``column_stats``, ``partition_stats`` and ``bloom_filters`` true, commit by commit
(table versions 6, 8 and 9; partition_stats from version 8, as Hudi 1.x builds it).

Every data instant that changes the file listing is mirrored by one metadata-table delta
commit (:mod:`metadata_writer`); the statistics of the files that instant wrote go into the
same delta commit, one HFile data block per touched file group of each partition, as Hudi's
writer appends them (HoodieTableMetadataUtil.convertMetadataToColumnStatsRecords and
siblings):

- a base file it wrote: its column ranges from the footer, and its bloom filter;
- a log file it appended to: the ranges of the records of its blocks of this instant (Hudi
  collects them while appending; a table of version 6 appends several instants to one log
  file, and the metadata table sums their counts);
- a file it deleted (clean, rollback, restore, replaced files cleaned): tombstones;
- each partition it wrote: the range over its new files, merged by the reader (:mod:`partition_stats`).

A partition of these is built (from the latest file slices, at Hudi's initialization instant)
when its ``hoodie.metadata.index.*.enable`` key is true and the table lacks it. The records
are those of the table version: column-stats index version V1 on 6 and 8 (Hudi 1.x records
the covered columns in its index definition), V2 from 9; their layouts and encodings are
the format layer's (``table.metadata_table.column_stats``, ``stats_partitions``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import pyarrow as pa

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.metadata_table.files_bootstrap import partition_init_instant, write_empty_log
from airflow_hoodie.actions.metadata_table.group_log import append_group_log
from airflow_hoodie.actions.metadata_table.index_definition_writer import index_definition, put_index_definition
from airflow_hoodie.settings.metadata_table import MetadataTableSettings
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.file_group.file_naming import make_write_token
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.log.log_block import BlockType, HeaderKey, LogBlock
from airflow_hoodie.table.metadata_table.damage import refuse_damaged_slice
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, WriteStat
from airflow_hoodie.table.metadata_table.bloom_filter_index import BLOOM_FILTERS_PARTITION, bloom_filter_records
from airflow_hoodie.table.metadata_table.column_stats import (
    COLUMN_STATS_PARTITION,
    INDEXED_META_FIELDS,
    ColumnRange,
    FileColumnStats,
    column_stats_records,
    encode_records,
    file_column_ranges,
    read_log_column_ranges,
    table_column_ranges,
)
from airflow_hoodie.table.metadata_table.files_change import FilesChange
from airflow_hoodie.table.metadata_table.files_listing import metadata_table_path
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile
from airflow_hoodie.table.metadata_table.metadata_record import metadata_record_schema_json
from airflow_hoodie.table.metadata_table.partition_stats import (
    PARTITION_STATS_PARTITION,
    partition_ranges,
    partition_stats_records,
)
from airflow_hoodie.table.metadata_table.partitions import METADATA_PARTITIONS, listed_partitions
from airflow_hoodie.table.metadata_table.record_index import file_group_index
from airflow_hoodie.table.metadata_table.stats_partitions import (
    file_group_prefix,
    index_definitions,
    index_version,
    kept_stats_partitions,
)
from airflow_hoodie.table.timeline.instant import Action, Instant, State

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable
    from airflow_hoodie.table.storage.storage import Storage

# ------------------------------------------------------------------ index definitions
def _table_columns(table: HoodieTable, writer_schema: str | None = None) -> list[str] | None:
    """Top-level fields of ``writer_schema`` (a commit's own), else of the table's latest
    schema, meta fields first when populated."""
    from airflow_hoodie.table.schema.meta_fields import META_COLUMNS  # noqa: PLC0415
    from airflow_hoodie.table.schema.table_schema import CREATE_SCHEMA, latest_avro_schema  # noqa: PLC0415

    schema = json.loads(writer_schema) if writer_schema else \
        latest_avro_schema(table.reload_timeline(), table.config.get(CREATE_SCHEMA))
    if not schema:
        return None
    fields = [f["name"] for f in schema.get("fields") or [] if not f["name"].startswith("_hoodie_")]
    meta = list(META_COLUMNS) if table.config.populate_meta_fields else []
    return meta + fields


def indexed_columns(table: HoodieTable, file_columns: Sequence[str] | None = None,
                    writer_schema: str | None = None,
                    settings: MetadataTableSettings | None = None) -> list[str] | None:
    """The columns column_stats covers: the table's index definition (Hudi 1.x records it),
    else ``hoodie.metadata.index.column.stats.column.list`` (after Hudi's three meta fields
    on 1.x), else every top-level column up to ``max.columns.to.index`` (on version 6,
    every column: Hudi 0.14 had no cap). None: every column of each file. ``settings``: the
    change's (None: every key at its default)."""
    definition = index_definitions(table).get(COLUMN_STATS_PARTITION) or {}
    if definition.get("sourceFields"):
        return list(definition["sourceFields"])
    settings = settings or MetadataTableSettings.defaults()
    listed = list(settings.column_stats_columns)
    with_meta_fields = table.format.release.column_stats_cover_meta_fields
    if listed:
        return list(dict.fromkeys((list(INDEXED_META_FIELDS) if with_meta_fields else []) + listed))
    if file_columns is None:
        file_columns = _table_columns(table, writer_schema)
    if file_columns is None:
        return None
    if not with_meta_fields:
        return list(file_columns)
    data = [c for c in file_columns if not c.startswith("_hoodie_")]
    cols = [c for c in INDEXED_META_FIELDS if c in file_columns] + data
    return cols[: settings.column_stats_max_columns]


def _write_index_definition(table: HoodieTable, columns: Sequence[str]) -> None:
    """Hudi 1.x records which columns column_stats covers in the table's index definitions."""
    if not table.format.release.records_index_definitions:
        return
    put_index_definition(table, index_definition(COLUMN_STATS_PARTITION, COLUMN_STATS_PARTITION,
                                                 COLUMN_STATS_PARTITION, columns, index_version(table)))


# ------------------------------------------------------------------ file statistics
def _parquet_stats(storage: Storage, path: str, columns: Sequence[str] | None,
                   want_bloom: bool) -> tuple[list[ColumnRange], Any, list[str]]:
    import pyarrow.parquet as pq  # noqa: PLC0415

    from airflow_hoodie.table.bloom.bloom_footer import bloom_filter_from_footer  # noqa: PLC0415

    handle = storage.open_input(path)
    try:
        md = pq.ParquetFile(handle).metadata
    finally:
        handle.close()
    names = [md.schema.column(i).path for i in range(md.num_columns)]
    return (file_column_ranges(md, columns),
            bloom_filter_from_footer(md.metadata) if want_bloom else None, names)


def log_data(storage: Storage, path: str, instant_time: str | None) -> pa.Table | None | bool:
    """The data records of a log file's blocks (of ``instant_time`` when given; every valid
    block otherwise): a table, None when there are none, False when ``instant_time`` wrote no
    data or delete block to it (a rollback's command block: Hudi writes no statistics for it)."""

    from airflow_hoodie.table.log.data_block import decode_data_block  # noqa: PLC0415
    from airflow_hoodie.table.log.log_reader import read_log_blocks  # noqa: PLC0415

    data_types = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)
    mine = [b for b in read_log_blocks(storage, path)
            if not b.corrupt and (instant_time is None or b.instant_time == instant_time)]
    if instant_time is not None and not any(b.block_type in (*data_types, BlockType.DELETE) for b in mine):
        return False
    tables = [decode_data_block(b) for b in mine if b.block_type in data_types]
    return pa.concat_tables(tables, promote_options="default") if tables else None


def _log_ranges(storage: Storage, path: str, columns: Sequence[str] | None, instant_time: str | None
                ) -> list[ColumnRange] | None:
    """Ranges of a log file's data records (only the blocks of ``instant_time`` when given);
    None when that instant wrote no data or delete block to it (see :func:`log_data`)."""
    if instant_time is None:
        return read_log_column_ranges(storage, path, columns or [])
    data = log_data(storage, path, instant_time)
    if data is False:
        return None
    if columns is None:
        columns = [] if data is None else list(data.column_names)
    return table_column_ranges(data or None, columns)


def stats_file_kind(name: str) -> str | None:
    """``base`` or ``log`` for a data file that gets statistics; None for anything else
    (change-data-capture logs get none)."""
    if name.endswith(".parquet"):
        return "base"
    return "log" if ".log." in name and not name.endswith((".cdc", "-cdc")) else None


class StatsBatch:
    """The statistics records of one delta commit, by metadata-table partition."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, dict[str, Any]]] = {}

    def add(self, partition: str, records: Mapping[str, dict[str, Any]]) -> None:
        if records:
            self.records.setdefault(partition, {}).update(records)

    def __bool__(self) -> bool:
        return any(self.records.values())


def stats_for_files(table: HoodieTable, partitions: Sequence[str], files: Mapping[str, Mapping[str, int | None]],
                    instant_time: str | None, settings: MetadataTableSettings,
                    writer_schema: str | None = None) -> StatsBatch:
    """The statistics records of ``files`` (partition -> file name -> size, None when
    deleted) for the kept ``partitions``; log files take the blocks of ``instant_time``
    (every block when None, as when a partition is built). ``writer_schema``: the commit's
    own schema, whose columns the statistics cover (see :func:`indexed_columns`)."""
    batch = StatsBatch()
    if not partitions:
        return batch
    version = table.config.table_version
    ivs = index_version(table)
    columns = indexed_columns(table, writer_schema=writer_schema, settings=settings)
    col_files: list[FileColumnStats] = []
    blooms: dict[tuple[str, str], Any] = {}
    new_ranges: list[tuple[str, list[ColumnRange]]] = []
    want_bloom = BLOOM_FILTERS_PARTITION in partitions
    want_ranges = COLUMN_STATS_PARTITION in partitions or PARTITION_STATS_PARTITION in partitions
    for part, names in sorted(files.items()):
        for name, size in sorted(names.items()):
            kind = stats_file_kind(name)
            if kind is None:
                continue
            is_base = kind == "base"
            if size is None:
                col_files.append(FileColumnStats(part, name, None, columns or ()))
                if is_base:
                    blooms[(part, name)] = None
                continue
            path = table.storage.join(table.base_path, part, name) if part else table.storage.join(table.base_path, name)
            if is_base:
                if not want_ranges and not want_bloom:
                    continue
                ranges, bloom, names_in_file = _parquet_stats(table.storage, path, columns, want_bloom)
                if columns is None:
                    columns = indexed_columns(table, names_in_file, settings=settings)
                    ranges = [r for r in ranges if r.column in set(columns or [])]
                if want_bloom and bloom is not None:
                    blooms[(part, name)] = bloom
            elif want_ranges:
                log_ranges = _log_ranges(table.storage, path, columns, instant_time)
                if log_ranges is None:
                    continue
                ranges = log_ranges
            else:
                continue
            col_files.append(FileColumnStats(part, name, ranges))
            new_ranges.append((part, ranges))
    if COLUMN_STATS_PARTITION in partitions:
        for f in col_files:  # tombstones name the columns found in the live files when none were configured
            if f.ranges is None and not f.columns and columns:
                f.columns = columns
        batch.add(COLUMN_STATS_PARTITION, column_stats_records(col_files, ivs, version))
    if PARTITION_STATS_PARTITION in partitions and new_ranges:
        if instant_time is not None:  # a commit: Hudi's delta covers the partitions' latest slices
            new_ranges = latest_slice_ranges(
                table, files, dict(((p, n), r) for p, n, r in _named(col_files)), columns or [],
                COLUMN_STATS_PARTITION if COLUMN_STATS_PARTITION in kept_stats_partitions(table)
                and index_version(table) == "V2" else None,
                lambda p, n, path: (_parquet_stats(table.storage, path, columns, False)[0] if n.endswith(".parquet")
                                    else _log_ranges(table.storage, path, columns, None) or []))
        batch.add(PARTITION_STATS_PARTITION, partition_stats_records(partition_ranges(new_ranges), ivs, version))
    if want_bloom:
        batch.add(BLOOM_FILTERS_PARTITION, bloom_filter_records(blooms, instant_time or ""))
    return batch


def _named(col_files: Sequence[FileColumnStats]) -> list[tuple[str, str, list[ColumnRange]]]:
    return [(f.partition, f.file_name, f.ranges) for f in col_files if f.ranges is not None]


def latest_slice_ranges(table: HoodieTable, files: Mapping[str, Mapping[str, int | None]],
                        fresh: Mapping[tuple[str, str], list[ColumnRange]], columns: Sequence[str],
                        lookup: str | None, file_ranges: Callable[[str, str, str], list[ColumnRange]]
                        ) -> list[tuple[str, list[ColumnRange]]]:
    """(partition, ranges) of every file of the latest file slices of each partition the
    change wrote to, the change's own files laid over the committed slices (Hudi's
    partition-stats delta). Files the change did not write take their ranges from the V2
    records of metadata-table partition ``lookup`` (one batched lookup; None: no such
    records), else from ``file_ranges(partition, name, path)``."""
    from airflow_hoodie.table.file_group.file_naming import parse_base_file_name, parse_log_file_name  # noqa: PLC0415
    from airflow_hoodie.table.metadata_table.column_stats import range_from_payload  # noqa: PLC0415
    from airflow_hoodie.table.metadata_table.index_keys import column_stats_key  # noqa: PLC0415
    from airflow_hoodie.table.metadata_table.stats_reader import (  # noqa: PLC0415
        index_partition_files,
        read_index_records,
    )

    view = table.file_system_view(table.reload_timeline())
    slices: dict[tuple[str, str], list[str]] = {}
    touched = sorted(p for p, names in files.items() if any(v is not None for v in names.values()))
    for part in touched:
        for fs in view.latest_file_slices(part):
            slices[(part, fs.file_id)] = ([fs.base_file.file_name] if fs.base_file is not None else []) + \
                [lf.file_name for lf in fs.log_files]
        for name, size in files[part].items():
            base = parse_base_file_name(name)
            if base is not None:
                if size is None:
                    continue
                slices[(part, base.file_id)] = [name] + [n for n in slices.get((part, base.file_id), [])
                                                         if ".log." in n and n.split("_")[1].split(".log")[0]
                                                         >= base.instant]
                continue
            log = parse_log_file_name(name)
            if log is not None and size is not None:
                group = slices.setdefault((part, log.file_id), [])
                if name not in group:
                    group.append(name)
        for key in [k for k in slices if k[0] == part]:
            slices[key] = [n for n in slices[key] if files[part].get(n, 0) is not None]
    wanted = [(p, n) for (p, _fid), names in slices.items() for n in names if (p, n) not in fresh]
    known: dict[tuple[str, str], list[ColumnRange]] = {}
    if wanted and lookup is not None:
        keys = {column_stats_key(c, p, n): (p, n) for p, n in wanted for c in columns}
        records = read_index_records(index_partition_files(table, lookup), keys)
        for key, rec in records.items():
            rng = range_from_payload(rec["ColumnStatsMetadata"])
            if rng is not None:
                known.setdefault(keys[key], []).append(rng)
    out = [(p, list(r)) for (p, _n), r in fresh.items() if p in touched]
    for p, n in wanted:
        if (p, n) not in known:
            path = table.storage.join(table.base_path, p, n) if p else table.storage.join(table.base_path, n)
            known[(p, n)] = file_ranges(p, n, path)
        out.append((p, known[(p, n)]))
    return out


def stats_for_change(table: HoodieTable, instant_time: str, change: FilesChange,
                     settings: MetadataTableSettings) -> StatsBatch:
    """What data instant ``instant_time`` changes in the kept statistics partitions."""
    return stats_for_files(table, kept_stats_partitions(table), change.files, instant_time, settings,
                           change.writer_schema)


# ------------------------------------------------------------------ writing
def _group_slices(mdt: HoodieTable, partition: str) -> list[Any]:
    view = mdt.file_system_view(mdt.reload_timeline())
    slices = sorted(view.latest_file_slices(partition), key=lambda s: s.file_id)
    prefix = file_group_prefix(partition)
    if not slices or [s.file_id for s in slices] != [f"{prefix}{i:04d}-0" for i in range(len(slices))]:
        raise HoodieNotSupportedError(
            f"The {partition} partition of the metadata table {mdt.base_uri} has the file groups "
            f"{[s.file_id for s in slices]}, not Hudi's {prefix}0000-0 .. {prefix}<n-1>-0; it cannot be kept true. "
            f"Run with hoodie.metadata.enable=false to drop the metadata table (Hudi rebuilds it).")
    return slices


def append_stats(mdt: HoodieTable, instant_time: str, batch: StatsBatch, meta: CommitMetadata) -> None:
    """Append ``batch`` as delta commit ``instant_time`` of ``mdt``: one log version per
    touched file group, holding one HFile data block; write stats go into ``meta``."""
    version = mdt.format.version
    schema = metadata_record_schema_json(version)
    for partition, records in sorted(batch.records.items()):
        if not records:
            continue
        slices = _group_slices(mdt, partition)
        groups: dict[int, dict[str, dict[str, Any]]] = {}
        for key, rec in records.items():
            groups.setdefault(file_group_index(key, len(slices)), {})[key] = rec
        for index, group in sorted(groups.items()):
            fs = slices[index]
            refuse_damaged_slice(mdt.storage, fs, partition)  # never build on a damaged group (damage.py)
            block = LogBlock(BlockType.HFILE_DATA, {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema},
                             content=write_hfile(encode_records(group, version), schema))
            append_group_log(mdt, partition, fs, instant_time, [block], meta, numWrites=len(group),
                             numUpdateWrites=len(group))


# ------------------------------------------------------------------ building
def latest_files(table: HoodieTable) -> dict[str, dict[str, int | None]]:
    """partition -> name -> size of the files of every latest file slice."""
    view = table.file_system_view(table.reload_timeline())
    out: dict[str, dict[str, int | None]] = {}
    for fs in view.latest_merged_file_slices():
        files = out.setdefault(fs.partition_path, {})
        if fs.base_file is not None:
            files[fs.base_file.file_name] = fs.base_file.size
        for lf in fs.log_files:
            files[lf.file_name] = lf.size
    return out


def initialize_stats_partitions(table: HoodieTable, partitions: Sequence[str], group_counts: Mapping[str, int],
                                settings: MetadataTableSettings) -> str:
    """Build ``partitions`` from the table's latest file slices as one delta commit of the
    metadata table at Hudi's initialization instant, then list them; returns that instant.
    Runs under the table lock, before the write's own instant exists."""
    storage = table.storage
    files = latest_files(table)
    if COLUMN_STATS_PARTITION in partitions and table.format.release.records_index_definitions:
        columns = indexed_columns(table, settings=settings)
        if columns is None:
            first = next((table.storage.join(table.base_path, p, n) if p else table.storage.join(table.base_path, n)
                          for p, names in sorted(files.items()) for n in sorted(names) if n.endswith(".parquet")), None)
            if first is not None:
                columns = indexed_columns(table, _parquet_stats(storage, first, None, False)[2], settings=settings)
        if columns:
            _write_index_definition(table, columns)
    batch = stats_for_files(table, partitions, files, None, settings)
    return write_initial_partitions(table, {p: batch.records.get(p, {}) for p in partitions}, group_counts)


def write_initial_partitions(table: HoodieTable, records_by_partition: Mapping[str, Mapping[str, dict[str, Any]]],
                             group_counts: Mapping[str, int]) -> str:
    """Write new metadata-table partitions, each as ``group_counts[partition]`` file groups
    holding ``records_by_partition[partition]``, as one delta commit at Hudi's initialization
    instant, then list them; returns that instant. Runs under the table lock."""
    mdt = table.metadata_table()
    storage, mdt_base = table.storage, metadata_table_path(table.base_path)
    writer = mdt.timeline_writer()
    instant = partition_init_instant(table, mdt.reload_timeline())
    writer.create_requested(Instant(instant, Action.DELTA_COMMIT, State.REQUESTED))
    writer.transition_to_inflight(Instant(instant, Action.DELTA_COMMIT, State.REQUESTED))
    version = mdt.format.version
    schema = metadata_record_schema_json(version)
    meta = CommitMetadata(operation_type="BULK_INSERT_PREPPED", extra_metadata={"schema": schema})
    for partition, records in records_by_partition.items():
        # bloom filters built at initialization carry the init instant (Hudi's writer stamps them so)
        for rec in records.values():
            if rec.get("BloomFilterMetadata"):
                rec["BloomFilterMetadata"]["timestamp"] = instant
        count = max(1, int(group_counts.get(partition, 1)))
        write_partition_metadata(storage, mdt_base, partition, instant)
        groups: list[dict[str, dict[str, Any]]] = [{} for _ in range(count)]
        for key, rec in records.items():
            groups[file_group_index(key, count)][key] = rec
        prefix = file_group_prefix(partition)
        for index, group in enumerate(groups):
            file_id = f"{prefix}{index:04d}-0"
            write_empty_log(mdt, partition, file_id, instant)
            name = f"{file_id}_{make_write_token(index, 0, 0)}_{instant}.hfile"
            named = {k: {**rec, "_hoodie_file_name": name} for k, rec in group.items()}
            data = write_hfile(encode_records(named, version), schema)
            storage.write_bytes(storage.join(mdt_base, partition, name), data)
            meta.add_write_stat(partition, WriteStat.new(
                fileId=file_id, path=f"{partition}/{name}", prevCommit="null", numWrites=len(group),
                numInserts=len(group), totalWriteBytes=len(data), partitionPath=partition, fileSizeInBytes=len(data)))
    commit.complete(mdt, Instant(instant, Action.DELTA_COMMIT, State.INFLIGHT), meta)
    listed = set(listed_partitions(table)) | set(records_by_partition)
    table.update_config({METADATA_PARTITIONS: ",".join(sorted(listed))})
    return instant


def ensure_stats_partitions(table: HoodieTable, settings: MetadataTableSettings) -> list[str]:
    """Under the table lock, on ``table.config`` as the caller (ensure_files_partition) read
    it under that lock: build the statistics partitions whose enable key is true and
    the table lacks (partition stats from table version 8, with column stats). Returns the
    partitions built."""
    listed = set(listed_partitions(table))
    wanted = []
    if settings.column_stats_enabled:
        wanted.append(COLUMN_STATS_PARTITION)
    if (settings.partition_stats_enabled and table.format.release.has_partition_stats
            and (COLUMN_STATS_PARTITION in listed or COLUMN_STATS_PARTITION in wanted)):
        wanted.append(PARTITION_STATS_PARTITION)
    if settings.bloom_filter_enabled:
        wanted.append(BLOOM_FILTERS_PARTITION)
    missing = [p for p in wanted if p not in listed]
    if not missing:
        return []
    base = table.config.base_file_format
    if base != "PARQUET":
        raise HoodieNotSupportedError(
            f"{', '.join(missing)} of {table.base_uri}: airflow-hoodie reads statistics from parquet base files only "
            f"(this table's are {base}). Leave the hoodie.metadata.index.*.enable keys unset.")
    counts = {COLUMN_STATS_PARTITION: settings.column_stats_file_groups,
              PARTITION_STATS_PARTITION: settings.partition_stats_file_groups,
              BLOOM_FILTERS_PARTITION: settings.bloom_filter_file_groups}
    initialize_stats_partitions(table, missing, counts, settings)
    return missing
