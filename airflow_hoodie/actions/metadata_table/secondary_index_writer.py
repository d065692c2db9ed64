"""What a data instant changes in the table's secondary indexes, and writing it (Hudi 1.x's
``secondary_index_<name>`` metadata-table partitions; table versions 8 and 9).

Hudi's metadata writer (SecondaryIndexRecordGenerationUtils) reads, for every file group a
commit touched, record key -> indexed value of the slice before the commit and after it: a
key that appeared adds ``value$key``; a key whose value changed tombstones the old entry
(``isDeleted=true``) and adds the new one; a key that went (a hard delete, a soft delete
through ``_hoodie_is_deleted``) tombstones its entry. Of the tombstone and the addition of one
entry (a record moving between file groups), the addition wins. We derive the same from the
instant's committed files, as :mod:`record_index_writer` does for the record index, so the
in-process and the Spark write paths get it alike: both complete through
``actions.commit.complete``. An insert_overwrite's replaced groups lose their entries;
compaction and clustering write none (values do not move between keys). A rollback on these
table versions rolls the target's metadata delta commit back when it can (``actions.rollback``),
which takes every index record of the target with it; when a metadata-table compaction merged
them already, and for a restore, the whole index is reconciled with the table's rows (a full
scan, rare: only those paths take it).

The records go to the index's file groups (:func:`secondary_index.entry_file_group`, N fixed
when the index was built) in the metadata-table delta commit of the data instant: one log
version per touched group holding one HFile data block of type-7 records, tombstones
included (:func:`append_secondary_index`). An index we cannot keep (another version than
V1/V2, several columns, a function) stays refused by :mod:`maintenance`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.actions.metadata_table.group_log import append_group_log
from airflow_hoodie.actions.metadata_table.record_index_writer import _rolled_back
from airflow_hoodie.actions.metadata_table.secondary_index_build import table_entry_keys
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.file_group.file_group import BaseFile, FileSlice, LogFile
from airflow_hoodie.table.file_group.file_slice_reader import (
    SliceReadOptions,
    read_file_slice,
)
from airflow_hoodie.table.log.log_block import BlockType, HeaderKey, LogBlock
from airflow_hoodie.table.merge_config import MergeConfig
from airflow_hoodie.table.metadata.commit_metadata import (
    CommitMetadata,
    ReplaceCommitMetadata,
)
from airflow_hoodie.table.metadata_table.damage import refuse_damaged_slice
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile_arrays
from airflow_hoodie.table.metadata_table.metadata_record import (
    metadata_record_schema_json,
)
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS,
    METADATA_PARTITIONS_INFLIGHT,
    listed_in,
)
from airflow_hoodie.table.metadata_table.secondary_index import (
    SECONDARY_INDEX_PREFIX,
    SECONDARY_INDEX_TYPE,
    SecondaryIndexDefinition,
    entry_file_groups,
    entry_keys,
    file_group_id,
    group_entries,
    index_texts,
    index_values,
    live_keys,
    secondary_index_cells,
    slice_entries,
)
from airflow_hoodie.table.metadata_table.stats_partitions import index_definitions
from airflow_hoodie.table.metadata_table.stats_reader import (
    IndexPartitionFiles,
    index_partition_files,
)
from airflow_hoodie.table.parallel_map import parallel_map
from airflow_hoodie.table.read import read_workers, table_schema
from airflow_hoodie.table.schema.meta_fields import COMMIT_TIME, IS_DELETED, RECORD_KEY
from airflow_hoodie.table.timeline.instant import Action, Instant

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable



# ------------------------------------------------------------------------ which indexes
def kept_secondary_indexes(table: HoodieTable) -> list[SecondaryIndexDefinition]:
    """The secondary indexes every change keeps true: listed (built, not building) on a table
    version that has them, with a definition we know the layout of (one column as it is,
    version V1 or V2). The others stay refused by :mod:`maintenance`, by name."""
    if table.format.release.secondary_index_version is None:
        return []
    inflight = set(listed_in(table.config, METADATA_PARTITIONS_INFLIGHT))
    names = [p for p in listed_in(table.config, METADATA_PARTITIONS)
             if p.startswith(SECONDARY_INDEX_PREFIX) and p not in inflight]
    if not names:
        return []
    definitions = index_definitions(table)
    out = []
    for name in names:
        definition = definitions.get(name)
        if definition is None or definition.get("indexType") != SECONDARY_INDEX_TYPE:
            continue
        try:
            out.append(SecondaryIndexDefinition.parse(name, definition, table.format.release.secondary_index_version))
        except HoodieNotSupportedError:
            continue  # refused, with the parser's own words, by refuse_unkept_secondary_indexes
    return out


def refuse_unkept_secondary_indexes(table: HoodieTable, partitions: Iterable[str]) -> None:
    """Raise the definition's own reason for a listed secondary index we do not keep (its
    version, columns or function), so the user learns what stops the job."""
    definitions = index_definitions(table)
    default = table.format.release.secondary_index_version
    for name in partitions:
        if name.startswith(SECONDARY_INDEX_PREFIX) and name in definitions and default is not None:
            SecondaryIndexDefinition.parse(name, definitions[name], default)


def refuse_unindexable_columns(table: HoodieTable) -> None:
    """Stop a change before it starts when a kept index's column has a type whose indexed text
    we do not know (:func:`secondary_index.index_values`), or the table stores no record keys:
    finding out at its commit would leave a written instant to roll back."""
    definitions = kept_secondary_indexes(table)
    if not definitions:
        return
    if not table.config.populate_meta_fields:
        raise HoodieNotSupportedError(
            f"The table {table.base_uri} keeps the secondary index(es) {', '.join(d.name for d in definitions)} but "
            "stores no record keys (hoodie.populate.meta.fields=false), which every index entry names; nothing was "
            "changed. Keep this table with Hudi itself, or drop the metadata table (hoodie.metadata.enable=false).")
    schema = table_schema(table, table.timeline)
    for definition in definitions:
        if schema is None or definition.source_field not in schema.names:
            continue
        kind = schema.field(definition.source_field).type
        try:
            index_values(pa.array([], kind))
        except HoodieNotSupportedError as exc:
            raise HoodieNotSupportedError(
                f"The secondary index {definition.name} of {table.base_uri} is on {definition.source_field} ({kind}); "
                f"nothing was changed. {exc}") from exc


# ------------------------------------------------------------------------ what an instant changes
@dataclass
class SecondaryIndexChange:
    """What one data instant does to the secondary indexes: per index, entry key -> whether
    the record written for it is a tombstone."""

    entries: dict[SecondaryIndexDefinition, dict[str, bool]] = field(default_factory=dict)

    def add(self, definition: SecondaryIndexDefinition, key: str, deleted: bool) -> None:
        """One record for ``key``; a live one wins over a tombstone of the same entry
        (Hudi's reduceByKeys, for a record moving between file groups)."""
        index = self.entries.setdefault(definition, {})
        index[key] = index.get(key, True) and deleted

    def add_keys(self, definition: SecondaryIndexDefinition, keys: list[str], deleted: bool) -> None:
        """:meth:`add` of many keys of one kind at once (a live record still wins)."""
        index = self.entries.setdefault(definition, {})
        if deleted:
            for key in keys:
                index.setdefault(key, True)
        else:
            index.update(dict.fromkeys(keys, False))

    def __bool__(self) -> bool:
        return any(self.entries.values())


def _slice_values(table: HoodieTable, fs: FileSlice | None, fields: list[str], latest: str | None,
                  valid: set[str], start: str | None, commit_times: bool = False) -> pa.Table | None:
    """Record key, each of ``fields`` (as stored) and, with ``commit_times``, the commit time
    over the rows of ``fs`` as a snapshot reader merges them (soft-deleted rows left out), as
    Hudi's file-group reader gives them; None for an empty slice."""
    if fs is None or fs.is_empty:
        return None
    opts = SliceReadOptions(merge_config=MergeConfig.from_properties(table.config),
                            columns=[RECORD_KEY, *([COMMIT_TIME] if commit_times else []), IS_DELETED, *fields],
                            as_of=latest,
                            valid_instants=frozenset(valid), timeline_start=start)
    rows = read_file_slice(table.storage, fs, opts)
    if not rows.num_rows:
        return None
    if IS_DELETED in rows.column_names:
        rows = rows.filter(pc.invert(pc.fill_null(rows.column(IS_DELETED), False)))
    rows = rows.filter(pc.is_valid(rows.column(RECORD_KEY)))
    keys = rows.column(RECORD_KEY).cast(pa.string())
    times = {COMMIT_TIME: rows.column(COMMIT_TIME).cast(pa.string())} if commit_times else {}
    return pa.table({RECORD_KEY: keys, **times, **{f: rows.column(f) if f in rows.column_names
                                          else pa.nulls(rows.num_rows, pa.string()) for f in fields}})


def _stored(rows: pa.Table, field: str) -> pa.Array:
    """A column's values as stored (a reader's dictionary encoding undone)."""
    values = rows.column(field).combine_chunks()
    return pc.cast(values, values.type.value_type) if pa.types.is_dictionary(values.type) else values


def _pairs(rows: pa.Table | None, field: str, side: str, as_text: bool, kind: pa.DataType) -> pa.Table:
    """(key, value, present) of one side of a diff, named for the join (``as_text``: the
    values as their indexed text, when the two sides' types differ; ``kind``: the value type
    of an empty side)."""
    if rows is None:
        return pa.table({RECORD_KEY: pa.array([], pa.string()), f"v{side}": pa.array([], kind),
                         f"p{side}": pa.array([], pa.bool_())})
    values = _stored(rows, field)
    if as_text:
        values = index_texts(values)
    return pa.table({RECORD_KEY: rows.column(RECORD_KEY), f"v{side}": values,
                     f"p{side}": pa.array([True] * rows.num_rows, pa.bool_())})


def _written_rows(old: pa.Table | None, new: pa.Table | None,
                  instant_time: str) -> tuple[pa.Table | None, pa.Table | None]:
    """The rows of a file group the instant can have changed, on each side, when that is
    sure: a row it did not write (another commit time) keeps its key and value, since a
    copy-on-write merge copies it as it was and a log does not hold it. That leaves the rows
    it wrote and the old rows of their keys, unless a key went: when the old rows outnumber
    the copied ones plus the old rows of written keys (a delete, or a group holding a key
    twice), the whole group is diffed."""
    if old is None or new is None:
        return old, new
    ours = new.filter(pc.fill_null(pc.equal(new.column(COMMIT_TIME), instant_time), False))
    touched = old.filter(pc.is_in(old.column(RECORD_KEY), value_set=ours.column(RECORD_KEY).combine_chunks()))
    copied = new.num_rows - ours.num_rows
    if old.num_rows != copied + touched.num_rows:
        return old, new
    return touched, ours


def _diff(definitions: list[SecondaryIndexDefinition], old: pa.Table | None,
          new: pa.Table | None) -> list[tuple[SecondaryIndexDefinition, pa.Array, pa.Array]]:
    """What turns a file group's entries from ``old`` into ``new``, per index: (tombstoned
    keys, added keys), joined on the record key in Arrow, so only the rows whose value came,
    went or changed become entries (an update that keeps the value writes nothing)."""
    out = []
    for definition in definitions:
        field = definition.source_field
        types = {_stored(t, field).type for t in (old, new) if t is not None}
        as_text = len(types) != 1 or any(pa.types.is_null(t) for t in types)
        kind = pa.string() if as_text else next(iter(types))
        joined = _pairs(old, field, "o", as_text, kind).join(_pairs(new, field, "n", as_text, kind), RECORD_KEY,
                                                             join_type="full outer")
        had, has = pc.fill_null(joined.column("po"), False), pc.fill_null(joined.column("pn"), False)
        vo, vn = joined.column("vo"), joined.column("vn")
        same = pc.or_(pc.fill_null(pc.equal(vo, vn), False), pc.and_(pc.is_null(vo), pc.is_null(vn)))
        changed = pc.and_(pc.and_(had, has), pc.invert(same))
        gone = joined.filter(pc.or_(pc.and_(had, pc.invert(has)), changed))
        came = joined.filter(pc.or_(pc.and_(has, pc.invert(had)), changed))
        out.append((definition, *(entry_keys(index_texts(rows.column(side)), rows.column(RECORD_KEY).combine_chunks())
                                  for rows, side in ((gone, "vo"), (came, "vn")))))
    return out


def _after_slice(table: HoodieTable, prev: FileSlice | None, partition: str, file_id: str, instant_time: str,
                 paths: list[str]) -> FileSlice:
    """The slice of a file group once the instant's files (``paths``) joined it: a new base
    file starts a slice of its own; log files go behind the previous slice's."""
    bases = [p for p in paths if ".log." not in p.rsplit("/", 1)[-1]]
    if bases:
        return FileSlice(partition, file_id, instant_time, BaseFile.from_path(bases[-1], 0, partition), [])
    logs = [lf for p in paths for lf in [LogFile.from_path(p, 0, partition)] if lf is not None]
    if prev is None:
        fs = FileSlice(partition, file_id, instant_time, None, logs)
    else:
        known = {lf.path for lf in prev.log_files}
        fs = FileSlice(partition, file_id, prev.base_instant, prev.base_file,
                       list(prev.log_files) + [lf for lf in logs if lf.path not in known])
    fs.sort_logs()
    return fs


def _write_change(table: HoodieTable, definitions: list[SecondaryIndexDefinition], instant_time: str,
                  meta: CommitMetadata) -> SecondaryIndexChange:
    timeline = table.reload_timeline()
    before = {(s.partition_path, s.file_id): s for s in table.file_system_view(timeline).latest_merged_file_slices()}
    valid = {i.timestamp for i in timeline.completed().instants}
    start = timeline.first_non_savepoint_commit()
    fields = sorted({d.source_field for d in definitions})
    touched: dict[tuple[str, str], tuple[list[str], bool]] = {}
    for part, stat in meta.iter_write_stats():
        if not stat.path or not stat.file_id:
            continue
        partition = stat.partition_path if stat.partition_path is not None else (part or "")
        group = (partition, stat.file_id)
        new_group = stat.prev_commit in (None, "", "null") or group not in before
        paths, was_new = touched.get(group, ([], True))
        paths.append(table.storage.join(table.base_path, stat.path))
        touched[group] = (paths, was_new and new_group)

    def touched_group(item: tuple[tuple[str, str], tuple[list[str], bool]]
                      ) -> list[tuple[SecondaryIndexDefinition, pa.Array, pa.Array]]:
        (partition, file_id), (paths, new_group) = item
        prev = None if new_group else before.get((partition, file_id))
        after = _after_slice(table, prev, partition, file_id, instant_time, paths)
        old = _slice_values(table, prev, fields, None, valid, start)
        new = _slice_values(table, after, fields, instant_time, valid | {instant_time}, start, commit_times=True)
        return _diff(definitions, *_written_rows(old, new, instant_time))

    def replaced_group(group: tuple[str, str]) -> list[tuple[SecondaryIndexDefinition, pa.Array, pa.Array]]:
        return _diff(definitions, _slice_values(table, before.get(group), fields, None, valid, start), None)

    replaced = sorted(meta.replaced_file_ids()) if isinstance(meta, ReplaceCommitMetadata) else []
    workers = read_workers(len(touched) + len(replaced), table.storage.is_local)
    diffs = (parallel_map(touched_group, sorted(touched.items()), workers, "hoodie-si-diff")
             + parallel_map(replaced_group, replaced, workers, "hoodie-si-diff"))
    change = SecondaryIndexChange()
    for group in diffs:
        for definition, gone, came in group:
            change.add_keys(definition, gone.to_pylist(), True)
            change.add_keys(definition, came.to_pylist(), False)
    return change


def table_entries(table: HoodieTable, definitions: list[SecondaryIndexDefinition]) -> dict[str, set[str]]:
    """Index name -> the entry keys the table's rows make (its latest file slices, merged):
    what each index holds when it is exact (a full scan, the indexer's build scan)."""
    return {d.name: set(table_entry_keys(table, d.source_field)) for d in definitions}


def reconcile_secondary_indexes(table: HoodieTable, definitions: list[SecondaryIndexDefinition],
                                skip_instants: frozenset[str] = frozenset()) -> SecondaryIndexChange:
    """Every difference between the indexes (without the blocks of ``skip_instants``) and the
    table's rows: what a rollback past a metadata-table compaction and a restore need, since
    the blocks to undo are merged away or stop counting; from empty file groups, the build."""
    expected = table_entries(table, definitions)
    change = SecondaryIndexChange()
    for definition in definitions:
        files = index_partition_files(table, definition.name)
        files = dataclasses.replace(files, valid=files.valid - skip_instants)
        current = live_keys(e for i in range(files.count) for e in group_entries(table, files, definition, i))
        want = expected[definition.name]
        for key in current - want:
            change.add(definition, key, True)
        for key in want - current:
            change.add(definition, key, False)
    return change


def secondary_index_change(table: HoodieTable, instant: Instant, metadata: Any) -> SecondaryIndexChange:
    """What data instant ``instant`` (about to complete with ``metadata``) does to the table's
    kept secondary indexes."""
    definitions = kept_secondary_indexes(table)
    if not definitions:
        return SecondaryIndexChange()
    if isinstance(metadata, CommitMetadata):
        operation = (metadata.operation_type or "").upper()
        if metadata.compacted or operation in ("COMPACT", "LOG_COMPACT", "CLUSTER"):
            return SecondaryIndexChange()  # rows keep their keys and values
        return _write_change(table, definitions, instant.timestamp, metadata)
    if instant.action in (Action.ROLLBACK, Action.RESTORE):
        instants = _rolled_back(instant.action, metadata)
        if not instants:
            return SecondaryIndexChange()
        # a rollback whose target's metadata delta commit can still be undone rolls that delta
        # commit back in the metadata table (actions.rollback: Hudi 1.x's way), and every index
        # record of the target goes with it; one reaching here found the target's records merged
        # by a metadata-table compaction, where only a comparison with the rows can undo them
        inner: frozenset[str] = frozenset()
        if instant.action == Action.RESTORE:
            # its inner rollbacks leave no instant on the data timeline, so the records they
            # wrote stop counting once the restore completes: its own delta commit holds it all
            inner = frozenset(rb.get("startRollbackTime") for rbs in (metadata.get("hoodieRestoreMetadata") or {})
                              .values() for rb in rbs or [] if rb.get("startRollbackTime"))
        return reconcile_secondary_indexes(table, definitions, inner)
    return SecondaryIndexChange()  # clean, savepoint: no row changes


# ------------------------------------------------------------------------ writing
def _index_slices(mdt: HoodieTable, definition: SecondaryIndexDefinition) -> list[FileSlice]:
    view = mdt.file_system_view(mdt.reload_timeline())
    slices = sorted(view.latest_file_slices(definition.name), key=lambda s: s.file_id)
    expected = [file_group_id(definition.name, i) for i in range(len(slices))]
    if not slices or [s.file_id for s in slices] != expected:
        raise HoodieNotSupportedError(
            f"The secondary index {definition.name} of the metadata table {mdt.base_uri} has the file groups "
            f"{[s.file_id for s in slices]}, not Hudi's {file_group_id(definition.name, 0)} .. <n-1>; it cannot be "
            "kept true. Run with hoodie.metadata.enable=false to drop the metadata table (Hudi rebuilds it).")
    return slices


def append_secondary_index(mdt: HoodieTable, instant_time: str, change: SecondaryIndexChange,
                           meta: CommitMetadata) -> None:
    """Append ``change`` to the indexes' file groups as delta commit ``instant_time`` of the
    metadata table ``mdt``: one log version per touched group, one HFile data block of
    type-7 records (tombstones as ``isDeleted`` records, as Hudi writes them), their write
    stats added to ``meta``."""
    version = mdt.format.version
    schema = metadata_record_schema_json(version)
    for definition, entries in sorted(change.entries.items(), key=lambda item: item[0].name):
        if not entries:
            continue
        slices = _index_slices(mdt, definition)
        keys = pa.array(list(entries), pa.string())
        deleted = np.fromiter(entries.values(), bool, len(entries))
        at = entry_file_groups(keys, len(slices), definition.version)
        for index in np.unique(at).tolist():
            mine = np.flatnonzero(at == index)
            fs = slices[index]
            refuse_damaged_slice(mdt.storage, fs, definition.name)  # never build on a damaged group
            rows, values = secondary_index_cells(keys.take(pa.array(mine)), pa.array(deleted[mine]), version)
            block = LogBlock(BlockType.HFILE_DATA, {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema},
                             content=write_hfile_arrays(rows, values, schema))
            deletes = int(deleted[mine].sum())
            append_group_log(mdt, definition.name, fs, instant_time, [block], meta, numWrites=len(mine),
                             numInserts=len(mine) - deletes, numDeletes=deletes)


def merged_entries(files: IndexPartitionFiles, file_slice: FileSlice) -> dict[str, bool]:
    """Entry key -> tombstone? of one slice of an index's file group, the latest record of each
    key winning: what a metadata-table compaction merges (it then drops the tombstones)."""
    index = int(file_slice.file_id.rsplit("-", 2)[-2])
    return {entry.key: entry.deleted for entry in slice_entries(files, file_slice, index)}
