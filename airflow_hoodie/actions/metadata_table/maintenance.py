"""Which of a table's metadata-table partitions a change keeps true, drops or cannot touch,
and building the metadata table when a write keeps it and it is missing (table versions 6,
8 and 9 alike).

Decided before an action changes anything (Hudi's ``hoodie.metadata.enable``, default true):
- disabled: the whole metadata table goes, as a Hudi writer with it disabled does;
- ``files``: kept true, one delta commit per data instant (:mod:`metadata_writer`);
- ``column_stats``, ``partition_stats``, ``bloom_filters``: kept true in the same delta
  commit (:mod:`stats_index_writer`), built when their ``hoodie.metadata.index.*.enable``
  key is true; dropped the way Hudi drops a partition (config entry first, then the folder)
  when that key is false, or when we cannot keep them (base files other than parquet, an
  index-definition version other than V1/V2), because stale statistics make Spark prune
  files that hold matches: wrong answers, silently;
- ``record_index``: kept true, in the same delta commit (:mod:`record_index_writer`); Hudi
  1.1's partitioned record index (``isPartitioned=true`` in ``index.json``) is not kept: the
  job stops before it changes anything, naming it, rather than write it as a global one;
- secondary indexes (``secondary_index_<name>``, table versions 8 and 9): kept true, in the same
  delta commit (:mod:`secondary_index_writer`), when ``index.json`` defines them on one column
  as it is with version V1 or V2; any other (and one still being built) stops the job, naming
  it and its definition's reason; with ``hoodie.metadata.index.secondary.enable=false`` every
  listed one is dropped first, as Hudi's writer deletes them;
- expression indexes (``expr_index_*``): kept true in the same delta commit
  (:mod:`expression_index_writer`) when index.json defines them with a function we evaluate
  over parquet base files, and built by a write when defined but missing, as Hudi 1.1's writer
  does; otherwise (an unknown function, no definition, a bloom index over
  values whose Java text we cannot reproduce, another layout, one still being built) the job
  stops before it changes anything, naming the index and what to do;
- anything else: the job stops before it changes anything, naming it.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from airflow_hoodie.actions.metadata_table.expression_index_writer import (
    check_keepable,
    ensure_expression_indexes,
    kept_definitions,
)
from airflow_hoodie.actions.metadata_table.files_bootstrap import (
    initialize_files_partition,
)
from airflow_hoodie.actions.metadata_table.removal import remove_metadata_table
from airflow_hoodie.actions.metadata_table.secondary_index_writer import (
    kept_secondary_indexes,
    refuse_unindexable_columns,
    refuse_unkept_secondary_indexes,
)
from airflow_hoodie.actions.metadata_table.stats_index_writer import (
    ensure_stats_partitions,
)
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.settings.metadata_table import MetadataTableSettings
from airflow_hoodie.table.expression_index.definitions import (
    definitions_of,
)
from airflow_hoodie.table.metadata_table.damage import metadata_properties_missing
from airflow_hoodie.table.metadata_table.files_listing import (
    FILES_PARTITION,
    metadata_table_path,
)
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS,
    METADATA_PARTITIONS_INFLIGHT,
    has_metadata_table,
    listed_in,
)
from airflow_hoodie.table.metadata_table.secondary_index import SECONDARY_INDEX_PREFIX
from airflow_hoodie.table.metadata_table.record_index import (
    RECORD_INDEX_PARTITION,
    is_partitioned_record_index,
)
from airflow_hoodie.table.metadata_table.stats_partitions import (
    EXPRESSION_INDEX_PREFIX,
    file_group_prefix,
    index_version,
)
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable

log = logging.getLogger(__name__)

#: statistics partitions: kept true, or dropped when disabled or not keepable
DROPPABLE = ("column_stats", "partition_stats", "bloom_filters")


def _listed(table: HoodieTable, key: str) -> list[str]:
    return listed_in(table.config, key)


def _drop_partitions(table: HoodieTable, names: list[str]) -> None:
    keep = [p for p in _listed(table, METADATA_PARTITIONS) if p not in names]
    table.update_config({METADATA_PARTITIONS: ",".join(keep)})
    for name in names:
        folder = Storage.join(metadata_table_path(table.base_path), name)
        if table.storage.exists(folder):
            table.storage.delete_dir(folder)


def _unkeepable_stats(table: HoodieTable, settings: MetadataTableSettings) -> list[str]:
    """Listed statistics partitions this change must drop: disabled by their key, or ones we
    cannot keep true."""
    enabled = {"column_stats": settings.column_stats_enabled, "partition_stats": settings.partition_stats_enabled,
               "bloom_filters": settings.bloom_filter_enabled}
    listed = [p for p in _listed(table, METADATA_PARTITIONS) if p in DROPPABLE]
    parquet = table.config.base_file_format == "PARQUET"
    known_version = index_version(table) in ("V1", "V2")
    out = []
    for p in listed:
        disabled = enabled[p] is False
        if disabled or not parquet or (p != "bloom_filters" and not known_version) or not _hudi_layout(table, p):
            out.append(p)
    if "column_stats" in out and "partition_stats" in listed and "partition_stats" not in out:
        out.append("partition_stats")  # Hudi builds partition stats from column stats
    return out


def _hudi_layout(table: HoodieTable, partition: str) -> bool:
    """Whether a statistics partition's folder holds Hudi's file groups <prefix>-0000-0 ..
    <prefix>-<n-1>-0 (anything else we cannot keep true, so it is dropped)."""
    folder = Storage.join(metadata_table_path(table.base_path), partition)
    if not table.storage.exists(folder):
        return False
    prefix = file_group_prefix(partition)
    pattern = re.compile(r"^\.?(" + re.escape(prefix) + r"\d{4}-0)_")
    ids = {m.group(1) for f in table.storage.list_dir(folder) if (m := pattern.match(f.path.rsplit("/", 1)[-1]))}
    return bool(ids) and ids == {f"{prefix}{i:04d}-0" for i in range(len(ids))}


def unmaintained_partitions(table: HoodieTable) -> list[str]:
    """Listed or building partitions other than ``files``, ``record_index``, the droppable
    statistics and the secondary indexes we keep (a record index still being built is not one
    we can finish, nor a partitioned one: :func:`refuse_partitioned_record_index`; nor a
    secondary index being built: its builder owns it until it is listed)."""
    inflight = _listed(table, METADATA_PARTITIONS_INFLIGHT)
    listed = dict.fromkeys(_listed(table, METADATA_PARTITIONS) + inflight)  # once each, in order
    partitioned = RECORD_INDEX_PARTITION in listed and is_partitioned_record_index(table)
    kept_expression = [p for p in listed if p.startswith(EXPRESSION_INDEX_PREFIX) and p not in inflight]
    kept = {FILES_PARTITION, RECORD_INDEX_PARTITION, *DROPPABLE, *kept_expression,
            *(d.name for d in kept_secondary_indexes(table))}
    return [p for p in listed if p not in kept or p == RECORD_INDEX_PARTITION and (p in inflight or partitioned)]


def refuse_unkeepable_expression_indexes(table: HoodieTable, settings: MetadataTableSettings) -> None:
    """Stop, before anything changes, a change on a table with an expression index we cannot
    keep exactly as Hudi's writer would: an unknown function (refused by name), no definition,
    non-parquet base files, a bloom index over values we cannot print as Java does, or file
    groups other than Hudi's ``expr-index-<nnnn>-0``."""
    definitions = kept_definitions(table)
    if not definitions:
        return
    # imported here: only a table with an expression index needs its schema
    from airflow_hoodie.table.read import table_schema

    schema = table_schema(table, table.reload_timeline())
    for definition in definitions:
        source = definition.source_field
        check_keepable(table, definition, schema.field(source).type if schema is not None and source in schema.names
                       else None, settings)
        if not _hudi_layout(table, definition.partition):
            raise HoodieNotSupportedError(
                f"The expression index {definition.name} of {table.base_uri} does not have Hudi's file groups "
                "expr-index-0000-0 .. expr-index-<n-1>-0 in its metadata-table partition; nothing was changed. Rebuild "
                "it with Hudi (DROP INDEX, CREATE INDEX), or run with hoodie.metadata.enable=false to drop the "
                "metadata table.")


def refuse_partitioned_record_index(table: HoodieTable, settings: MetadataTableSettings) -> None:
    """Stop a change that would keep Hudi 1.1's partitioned record index (keys unique per data
    partition, its own file-group layout) or build a record index on a table whose index
    definition asks for one: we keep only the global record index, and writing a partitioned
    one as global would make Hudi's readers and writers look keys up in the wrong file groups."""
    keys = (METADATA_PARTITIONS, METADATA_PARTITIONS_INFLIGHT)
    listed = any(RECORD_INDEX_PARTITION in _listed(table, key) for key in keys)
    if not (listed or settings.record_index_sizing is not None) or not is_partitioned_record_index(table):
        return
    raise HoodieNotSupportedError(
        f"The record index of {table.base_uri} is Hudi 1.1's partitioned record index (indexOptions.isPartitioned=true "
        "for record_index in .hoodie/.index_defs/index.json), which airflow-hoodie cannot keep: it keeps the global "
        "record index only, and will not write a partitioned one as global. Nothing was changed. Run this job with "
        "Hudi itself, or run it with hoodie.metadata.enable=false to drop the metadata table, and leave "
        "hoodie.metadata.record.index.enable off afterwards, so that no global record index is built against that "
        "definition.")


def _refuse_while_indexing(table: HoodieTable, blocked: list[str]) -> None:
    """An index the indexer scheduled and has not built yet (listed inflight, with a pending
    ``indexing`` instant): a write cannot keep a half-built index true, and Hudi's indexer
    catches up only with the instants its own writers logged, so the write waits for the build."""
    inflight = [p for p in blocked if p in _listed(table, METADATA_PARTITIONS_INFLIGHT)]
    pending = [i for i in table.reload_timeline().instants if i.action == Action.INDEXING and not i.is_completed]
    if inflight and pending:
        raise HoodieNotSupportedError(
            f"The index partition(s) {', '.join(inflight)} of {table.base_uri} are being built by the indexing "
            f"instant {pending[0].timestamp}; nothing was changed. Finish the build first (the indexer job with "
            f"--mode execute --instant-time {pending[0].timestamp}, or HoodieIndexerOperator with mode='execute'), "
            "then run this job again.")


def prepare_metadata_table(table: HoodieTable, settings: MetadataTableSettings | None) -> None:
    """Make the metadata table one our change keeps true: drop it when disabled (``settings``
    None), drop the statistics partitions, refuse the ones we cannot keep."""
    if settings is not None:
        refuse_partitioned_record_index(table, settings)
    if not has_metadata_table(table):
        return
    if settings is None:
        remove_metadata_table(table)
        return
    if FILES_PARTITION not in _listed(table, METADATA_PARTITIONS):
        # one being built right now by a writer holding the table lock (or whose building died):
        # only that lock's holder may remove or finish it (ensure_files_partition). Removing it
        # here, outside the lock, deleted the properties file a concurrent writer was renaming
        # into place, and that write failed.
        return
    if metadata_properties_missing(table.storage, metadata_table_path(table.base_path)):
        # a complete one (its files partition listed) that lost its hoodie.properties: no reader
        # can open it and no writer add to it (Hudi's writer fails on it too): it goes, and this
        # write builds it anew from the data files (ensure_files_partition)
        log.warning("The metadata table of %s has no .hoodie/hoodie.properties; removing it so that it is "
                    "rebuilt from the data files.", table.base_uri)
        remove_metadata_table(table)
        return
    if not settings.secondary_index_enabled:
        _drop_partitions(table, [p for p in _listed(table, METADATA_PARTITIONS) if p.startswith(SECONDARY_INDEX_PREFIX)])
    blocked = unmaintained_partitions(table)
    # an expression index still being built, on a function we do not evaluate: refused by that name
    definitions_of(table, [p for p in blocked if p.startswith(EXPRESSION_INDEX_PREFIX)])
    refuse_unkept_secondary_indexes(table, blocked)  # a version or definition we do not keep, by its name
    _refuse_while_indexing(table, blocked)
    if blocked:
        raise HoodieNotSupportedError(
            f"The metadata table of {table.base_uri} has the partition(s) {', '.join(blocked)}, which airflow-hoodie "
            "cannot keep true yet; nothing was changed. Run this job with hoodie.metadata.enable=false to drop the "
            "whole metadata table first, as a Hudi writer with it disabled does (Hudi rebuilds it, and the record "
            "index with a full scan), or run the job with Hudi itself.")
    refuse_unindexable_columns(table)
    refuse_unkeepable_expression_indexes(table, settings)
    stale = _unkeepable_stats(table, settings)
    if stale:
        _drop_partitions(table, stale)
    # a folder without its files partition listed is one being built (or whose building
    # died): the write that builds it does so under the table lock (ensure_files_partition)


def committed_listing(table: HoodieTable) -> dict[str, dict[str, int]]:
    """Partition -> file name -> size of every file of a committed slice (each version that
    no clean removed yet): what the files partition starts from, as Hudi's bootstrap of the
    metadata table lists the table."""
    view = table.file_system_view()  # one listing of storage serves both
    listing: dict[str, dict[str, int]] = {p: {} for p in view.partitions()}
    for group in view.file_groups(include_replaced=True):
        for sl in group.slices:
            files = ([sl.base_file] if sl.base_file is not None else []) + list(sl.log_files)
            for f in files:
                listing.setdefault(group.partition_path, {})[f.file_name] = f.size
    return listing


def ensure_files_partition(table: HoodieTable, settings: MetadataTableSettings) -> bool:
    """Under the table lock, before a write's instant exists: build the metadata table from
    the committed files when there is none (or only a half-built one), as a Hudi writer with
    it enabled does, then the statistics partitions ``settings`` enable and the expression
    indexes ``index.json`` defines. Returns whether the table now has one."""
    table.reload_config()
    refuse_partitioned_record_index(table, settings)  # another writer may have defined it since
    if FILES_PARTITION not in _listed(table, METADATA_PARTITIONS):
        if has_metadata_table(table):
            remove_metadata_table(table)
        initialize_files_partition(table, committed_listing(table))
    ensure_stats_partitions(table, settings)
    ensure_expression_indexes(table, settings)
    return True
