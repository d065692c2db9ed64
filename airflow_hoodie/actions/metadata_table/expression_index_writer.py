"""Keeping a table's expression indexes (``expr_index_*`` partitions of the metadata table)
true, commit by commit, and building one.

Hudi 1.1's Spark writer (HoodieBackedTableMetadataWriter.getExpressionIndexUpdates,
SparkMetadataWriterUtils.getExprIndexRecords) reads each file a commit wrote on its own (a base
file, or one log file without its base, through its file group reader: records merged by key,
deletes applied; we read it through our one slice reader the same way), applies the index's function to the source column in
the Spark session time zone, and appends to the index's partition, in the commit's own delta
commit:

- ``column_stats`` indexes: per file, one column-stats record keyed and named by the *source*
  column (min, max, null count of ``f(col)``, value count of its non-null values, the file's
  size and twice it as the "uncompressed" size), of the definition's index version (a file
  without rows, such as a log file of deletes only, gets none: Hudi aggregates per file over
  rows); and per data
  partition the commit wrote, a partition-level record (tight bound) over the latest slices'
  files, keyed ``column + "__partition_stat__" + partition`` in the same partition;
- ``bloom_filters`` indexes: per file, a bloom filter of the Java text of each ``f(col)``
  value, sized by the data table's bloom keys and the index's options, keyed like
  ``bloom_filters``.

Files a change deletes (clean, rollback, restore, replaced files cleaned) get tombstones, as the
plain statistics partitions do (:mod:`stats_index_writer`, whose per-file machinery, batch and
log appends this module reuses). Hudi 1.1's writer treats expression indexes as enabled while
``index.json`` defines one, so a write builds a defined index whose partition is missing
(:func:`ensure_expression_indexes`, under the table lock); ``CREATE INDEX`` itself (the definition,
then the build) is :func:`initialize_expression_index`, for the indexer and tests.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.actions.metadata_table.index_definition_writer import index_definition, put_index_definition
from airflow_hoodie.actions.metadata_table.stats_index_writer import (
    StatsBatch,
    latest_files,
    latest_slice_ranges,
    stats_file_kind,
    write_initial_partitions,
)
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.settings.base_file import BloomSettings
from airflow_hoodie.settings.metadata_table import MetadataTableSettings
from airflow_hoodie.table.bloom.bloom_footer import new_bloom_filter
from airflow_hoodie.table.expression_index.definitions import (
    ExpressionIndexDefinition,
    definitions_of,
    expression_index_definitions,
    is_expression_index,
    parse_definition,
)
from airflow_hoodie.table.expression_index.expression import bloom_key_strings
from airflow_hoodie.table.file_group.file_group import FileSlice, LogFile
from airflow_hoodie.table.file_group.file_slice_reader import (
    SliceReadOptions,
    read_file_slice,
)
from airflow_hoodie.table.merge_config import MergeConfig
from airflow_hoodie.table.metadata_table.bloom_filter_index import (
    BLOOM_FILTERS_PARTITION,
    bloom_filter_record,
    bloom_filter_tombstone,
)
from airflow_hoodie.table.metadata_table.column_stats import (
    COLUMN_STATS_PARTITION,
    ColumnRange,
    FileColumnStats,
    column_stats_records,
    table_column_ranges,
)
from airflow_hoodie.table.metadata_table.files_change import FilesChange
from airflow_hoodie.table.metadata_table.index_keys import (
    bloom_filter_key,
    expression_partition_stats_key,
)
from airflow_hoodie.table.metadata_table.partition_stats import (
    partition_ranges,
    partition_stats_records,
)
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS_INFLIGHT,
    listed_in,
    listed_partitions,
)
from airflow_hoodie.table.metadata_table.stats_partitions import (
    EXPRESSION_INDEX_PREFIX,
    index_definitions,
    kept_expression_indexes,
)

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable

log = logging.getLogger(__name__)

#: the bloom options of an expression index and the data-table keys they stand for
#: (HoodieExpressionIndex.BLOOM_FILTER_CONFIG_MAPPING)
_BLOOM_OPTIONS = {"numentries": "num_entries", "fpp": "fpp", "filtertype": "filter_type",
                  "maxentries": "dynamic_max_entries"}
_BLOOM_PARSE = {"num_entries": int, "fpp": float, "filter_type": str, "dynamic_max_entries": int}


def kept_definitions(table: HoodieTable) -> list[ExpressionIndexDefinition]:
    """The definitions of the expression indexes the table lists (so keeps true). A listed
    partition without a definition, or one whose function we do not evaluate, is refused by
    name: we would not know what to keep in it."""
    listed = kept_expression_indexes(table)
    if not listed:
        return []
    defs = definitions_of(table, listed)
    missing = [p for p in listed if p not in defs]
    if missing:
        raise HoodieNotSupportedError(
            f"The metadata table of {table.base_uri} lists the expression index(es) {', '.join(missing)}, which "
            ".hoodie/.index_defs/index.json does not define; nothing was changed. Drop them with Hudi's DROP INDEX, "
            "or run with hoodie.metadata.enable=false to drop the metadata table.")
    return [defs[p] for p in listed]


def check_keepable(table: HoodieTable, definition: ExpressionIndexDefinition, source_type: pa.DataType | None,
                   settings: MetadataTableSettings) -> None:
    """Refuse, before anything changes, an index whose records we cannot compute as Hudi does:
    non-parquet base files, or a bloom_filters index over values whose Java text we cannot
    reproduce. ``source_type``: the source column's Arrow type (None: not known yet)."""
    base = table.config.base_file_format
    if base != "PARQUET":
        raise HoodieNotSupportedError(
            f"Expression index {definition.name} of {table.base_uri}: airflow-hoodie reads parquet base files only "
            f"(this table's are {base}); nothing was changed. Keep this table's metadata table with Hudi itself.")
    if source_type is not None and definition.index_type == BLOOM_FILTERS_PARTITION:
        bloom_key_strings(definition.apply(pa.array([], source_type), settings.session_time_zone), definition.function)


# ------------------------------------------------------------------ per-file values
def _path(table: HoodieTable, part: str, name: str) -> str:
    return table.storage.join(table.base_path, part, name) if part else table.storage.join(table.base_path, name)


def indexed_values(table: HoodieTable, definition: ExpressionIndexDefinition, part: str, name: str,
                   instant_time: str | None, time_zone: str) -> pa.Array | None:
    """``f(source)`` over the rows of one data file; None for a file that is not a data file.
    A log file is read alone, as Hudi's writer reads it (its file group reader over that one
    log file, no base file): its records merged by key, its deletes applied (blocks of
    ``instant_time`` when given, every valid block when None)."""
    path = _path(table, part, name)
    source = definition.source_field
    if stats_file_kind(name) == "base":
        handle = table.storage.open_input(path)
        try:
            pf = pq.ParquetFile(handle)
            if source not in pf.schema_arrow.names:  # a column added later: null in this file's rows
                return pa.nulls(pf.metadata.num_rows, pa.null())
            values = pf.read(columns=[source]).column(source)
        finally:
            handle.close()
    else:
        log = LogFile.from_path(path, table.storage.size(path), part)
        if log is None:
            return None
        rows = read_file_slice(table.storage, FileSlice(part, log.file_id, log.base_instant, None, [log]),
                               SliceReadOptions(merge_config=MergeConfig.from_properties(table.config),
                                                valid_instants=None if instant_time is None
                                                else frozenset({instant_time})))
        if source not in rows.column_names:
            return pa.nulls(rows.num_rows, pa.null())
        values = rows.column(source)
    return definition.apply(values, time_zone)


def values_range(definition: ExpressionIndexDefinition, values: pa.Array, size: int) -> ColumnRange:
    """The column-stats range Hudi's writer records for ``f(col)`` over one file: keyed by the
    source column, the count of non-null values, the file size (twice it "uncompressed")."""
    if pa.types.is_null(values.type):
        return ColumnRange(definition.source_field, "NULL", None, None, len(values), 0, size, size * 2)
    ranges = table_column_ranges(pa.table({definition.source_field: values}), [definition.source_field])
    if not ranges:
        raise HoodieNotSupportedError(
            f"expression index {definition.name}: {definition.function} yields {values.type} values, which Hudi's "
            "column stats cannot hold; nothing was changed. Drop the index with Hudi's DROP INDEX.")
    return replace(ranges[0], value_count=len(values) - values.null_count, null_count=values.null_count,
                   total_size=size, total_uncompressed_size=size * 2)


def bloom_settings(definition: ExpressionIndexDefinition, base: BloomSettings) -> BloomSettings:
    """The data table's bloom settings with the index's own options laid over them."""
    overrides = {field: _BLOOM_PARSE[field](definition.options[option])
                 for option, field in _BLOOM_OPTIONS.items() if option in definition.options}
    return replace(base, **overrides)


# ------------------------------------------------------------------ records
def _file_records(table: HoodieTable, definition: ExpressionIndexDefinition,
                  files: Mapping[str, Mapping[str, int | None]], instant_time: str | None,
                  settings: MetadataTableSettings) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], ColumnRange]]:
    """Per-file records of ``files`` (partition -> name -> size, None when deleted), and the
    ranges of the live files (for the partition-level records)."""
    records: dict[str, dict[str, Any]] = {}
    ranges: dict[tuple[str, str], ColumnRange] = {}
    col_files: list[FileColumnStats] = []
    bloom = bloom_settings(definition, settings.expression_bloom)
    is_stats = definition.index_type == COLUMN_STATS_PARTITION
    for part, names in sorted(files.items()):
        for name, size in sorted(names.items()):
            if stats_file_kind(name) is None:
                continue
            if size is None:
                if is_stats:
                    col_files.append(FileColumnStats(part, name, None, (definition.source_field,)))
                else:
                    records[bloom_filter_key(part, name)] = bloom_filter_tombstone(instant_time or "")
                continue
            values = indexed_values(table, definition, part, name, instant_time, settings.session_time_zone)
            if values is None or len(values) == 0:
                continue  # Hudi aggregates f(col) per file over its rows: a file without rows gets no record
            if is_stats:
                ranges[(part, name)] = values_range(definition, values, size)
                col_files.append(FileColumnStats(part, name, [ranges[(part, name)]]))
            else:
                filt = new_bloom_filter(bloom)
                filt.add_many(bloom_key_strings(values, definition.function))
                records[bloom_filter_key(part, name)] = bloom_filter_record(filt, instant_time or "")
    if col_files:
        records.update(column_stats_records(col_files, definition.version, table.config.table_version))
    return records, ranges


def _partition_records(table: HoodieTable, definition: ExpressionIndexDefinition,
                       files: Mapping[str, Mapping[str, int | None]], fresh: Mapping[tuple[str, str], ColumnRange],
                       instant_time: str | None, settings: MetadataTableSettings) -> dict[str, dict[str, Any]]:
    """The partition-level records of a column_stats index: over the latest slices of each
    partition the change wrote (a commit), or over every file given (a build)."""
    if not fresh:
        return {}
    if instant_time is None:
        file_ranges = [(p, [r]) for (p, _n), r in fresh.items()]
    else:
        def read_range(part: str, name: str, _path: str) -> list[ColumnRange]:
            values = indexed_values(table, definition, part, name, None, settings.session_time_zone)
            size = table.storage.size(_path)
            return [] if values is None or len(values) == 0 else [values_range(definition, values, size)]

        lookup = definition.partition if definition.version == "V2" else None
        file_ranges = latest_slice_ranges(table, files, {k: [r] for k, r in fresh.items()},
                                          [definition.source_field], lookup, read_range)
    return partition_stats_records(partition_ranges(file_ranges), definition.version, table.config.table_version,
                                   key=expression_partition_stats_key)


def expression_index_records(table: HoodieTable, definition: ExpressionIndexDefinition,
                             files: Mapping[str, Mapping[str, int | None]], instant_time: str | None,
                             settings: MetadataTableSettings) -> dict[str, dict[str, Any]]:
    """Every record one index gets for a change to ``files`` (``instant_time`` None: a build)."""
    records, fresh = _file_records(table, definition, files, instant_time, settings)
    if definition.index_type == COLUMN_STATS_PARTITION:
        records.update(_partition_records(table, definition, files, fresh, instant_time, settings))
    return records


def add_expression_index_changes(table: HoodieTable, instant_time: str, change: FilesChange,
                                 settings: MetadataTableSettings, batch: StatsBatch) -> None:
    """Add to ``batch`` what data instant ``instant_time`` changes in the kept expression indexes."""
    for definition in kept_definitions(table):
        batch.add(definition.partition, expression_index_records(table, definition, change.files, instant_time,
                                                                 settings))


# ------------------------------------------------------------------ building
def definition_entry(definition: ExpressionIndexDefinition) -> dict[str, Any]:
    """The ``index.json`` entry Hudi's ``CREATE INDEX`` writes for ``definition``."""
    return index_definition(definition.name, definition.index_type, definition.function, [definition.source_field],
                            definition.version, definition.options)


def _build(table: HoodieTable, definition: ExpressionIndexDefinition, settings: MetadataTableSettings) -> str:
    """Build ``definition``'s partition from the latest file slices (one delta commit)."""
    records = expression_index_records(table, definition, latest_files(table), None, settings)
    return write_initial_partitions(table, {definition.partition: records},
                                    {definition.partition: settings.expression_index_file_groups})


def initialize_expression_index(table: HoodieTable, definition: ExpressionIndexDefinition,
                                settings: MetadataTableSettings | None = None) -> str:
    """Record ``definition`` in ``index.json`` (as ``CREATE INDEX`` does) and build its partition
    from the table's latest file slices as one delta commit at Hudi's initialization instant;
    returns that instant. The table must have a metadata table; the caller holds the table lock."""
    settings = settings or MetadataTableSettings.defaults()
    if not table.format.release.records_index_definitions:
        raise HoodieNotSupportedError(
            f"{table.base_uri} is a table of version {table.config.table_version}: expression indexes are Hudi 1.x's "
            "(table versions 8 and 9). Nothing was changed.")
    if not definition.name.startswith(EXPRESSION_INDEX_PREFIX):
        raise HoodieNotSupportedError(
            f"expression index {definition.name!r}: Hudi names them {EXPRESSION_INDEX_PREFIX}<name>; rename it")
    check_keepable(table, definition, None, settings)
    put_index_definition(table, definition_entry(definition))
    (parsed,) = [d for d in expression_index_definitions(table) if d.name == definition.name]
    return _build(table, parsed, settings)


def ensure_expression_indexes(table: HoodieTable, settings: MetadataTableSettings) -> list[str]:
    """Under the table lock, before a write's instant exists: build the expression indexes
    ``index.json`` defines and the metadata table lacks (nor is building), as Hudi 1.1's writer
    does (an expression index is enabled while a definition exists). One we cannot compute
    (a function we do not evaluate, non-parquet base files, a bloom index over values whose Java
    text we cannot print) is left unbuilt, with a warning: no partition means no stale index,
    and Hudi's next writer builds it. Returns the partitions built."""
    defined = [(name, raw) for name, raw in index_definitions(table).items() if is_expression_index(name, raw)]
    if not defined:
        return []
    present = set(listed_partitions(table)) | set(listed_in(table.config, METADATA_PARTITIONS_INFLIGHT))
    built = []
    for name, raw in defined:
        try:
            definition = parse_definition(name, raw)
            if definition.partition in present:
                continue
            check_keepable(table, definition, None, settings)
            _build(table, definition, settings)
        except HoodieNotSupportedError as exc:
            log.warning("Expression index %s of %s is defined but not built, and this write does not build it: "
                        "%s", name, table.base_uri, exc)
            continue
        built.append(definition.partition)
    return built
