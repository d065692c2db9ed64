"""What a data instant changes in the record index, and writing and building the index
(Hudi's record-level index; table versions 6, 8 and 9).

Hudi's writer updates it from each instant's write statuses: inserted keys are added with
their new file group, deleted keys get a delete record, and updates that stay in their file
group write nothing. We derive the same from the instant's files (engine-agnostic, no
hand-over from the write tasks): a file group's keys before the instant against its keys
after it; a new file group's keys are all additions (inserts and clustering's moved
records); the keys of a replaced group that no new group holds are deletions. A rollback
puts back, for every key the rolled-back instant's blocks touched, the location the index
had without them; when a metadata-table compaction already merged those blocks into base
files, and for a restore (whose inner rollbacks leave no instant, so their blocks stop
counting), it compares the whole index with the table's keys instead (a full scan). The
records go to the file groups' logs in the metadata-table delta commit of the data instant
(:func:`metadata_writer.update_files_partition`): an HFile data block for additions and a
delete block for deletions, as Hudi's append handle writes them.

Building it (``hoodie.metadata.record.index.enable``) reads the keys of the latest file
slices and writes one base HFile per file group at Hudi's initialization instant (version 6:
the latest data instant + ``010``; Hudi 1.x: ``00000000000000000``, ``…001``, ...), after an
empty delete block on versions 8 and 9. The layout, encodings and lookups are the format
layer's (``table.metadata_table.record_index``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import pyarrow as pa

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.metadata_table.files_bootstrap import (
    partition_init_instant,
    write_empty_log,
)
from airflow_hoodie.actions.metadata_table.group_log import append_group_log
from airflow_hoodie.settings.metadata_table import (
    MetadataTableSettings,
    RecordIndexSizing,
)
from airflow_hoodie.table.file_group.file_group import FileSlice
from airflow_hoodie.table.file_group.file_naming import make_write_token
from airflow_hoodie.table.file_group.partition_metadata import write_partition_metadata
from airflow_hoodie.table.file_group.slice_keys import slice_record_keys
from airflow_hoodie.table.java_hash import file_group_indexes
from airflow_hoodie.table.log.delete_block import (
    DeleteRecord,
    decode_delete_block,
    delete_block,
)
from airflow_hoodie.table.log.log_block import BlockType, HeaderKey, LogBlock
from airflow_hoodie.table.log.log_reader import scan_log_files
from airflow_hoodie.table.metadata.commit_metadata import (
    CommitMetadata,
    ReplaceCommitMetadata,
    WriteStat,
)
from airflow_hoodie.table.metadata_table.damage import refuse_damage
from airflow_hoodie.table.metadata_table.files_listing import metadata_table_path
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile
from airflow_hoodie.table.metadata_table.metadata_record import (
    metadata_record_schema_json,
)
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS,
    listed_in,
)
from airflow_hoodie.table.metadata_table.record_index import (
    RECORD_INDEX_PARTITION,
    _index_files,
    _merge_group,
    file_group_id,
    has_record_index,
    instant_millis,
    location_of,
    read_record_index,
    record_index_records,
)
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline
from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable

#: HoodieTableMetadataUtil's estimate of one record-index entry, for the file group count
AVERAGE_RECORD_SIZE = 48


# ------------------------------------------------------------------------ what an instant changes
@dataclass
class RecordIndexChange:
    """What one data instant does to the record index."""

    #: key -> (partition, file id, epoch millis of the writing instant)
    upserts: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    deletes: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.upserts or self.deletes)


def _timezone_utc(table: HoodieTable) -> bool:
    return table.config.timeline_timezone == "UTC"


def _slice_keys(table: HoodieTable, fs: FileSlice | None, extra_logs: Iterable[str], latest: str | None,
                valid: set[str], start: str | None) -> set[str]:
    if fs is None and not extra_logs:
        return set()
    logs = [lf.path for lf in fs.log_files] if fs is not None else []
    logs += [p for p in extra_logs if p not in logs]
    base = fs.base_file.path if fs is not None and fs.base_file is not None else None
    return set(slice_record_keys(table.storage, base, logs, latest, valid, start).to_pylist())


def _write_change(table: HoodieTable, instant_time: str, meta: CommitMetadata) -> RecordIndexChange:
    timeline = table.reload_timeline()
    view = table.file_system_view(timeline)
    before = {(s.partition_path, s.file_id): s for s in view.latest_merged_file_slices()}
    valid = {i.timestamp for i in timeline.completed().instants}
    start = timeline.first_non_savepoint_commit()
    millis = instant_millis(instant_time, _timezone_utc(table))
    added: dict[str, tuple[str, str, int]] = {}
    removed: set[str] = set()
    for part, stat in meta.iter_write_stats():
        if not stat.path or not stat.file_id:
            continue
        partition = stat.partition_path if stat.partition_path is not None else (part or "")
        new_group = (stat.prev_commit in (None, "", "null")) or (partition, stat.file_id) not in before
        if not new_group and not stat.num_inserts and not stat.num_deletes:
            continue  # updates in place: the index already points here
        path = table.storage.join(table.base_path, stat.path)
        prev = before.get((partition, stat.file_id))
        is_log = ".log." in stat.path.rsplit("/", 1)[-1]
        if is_log:
            after = _slice_keys(table, prev, [path], instant_time, valid | {instant_time}, start)
        else:
            after = set(slice_record_keys(table.storage, path, [], instant_time, valid, start).to_pylist())
        old = set() if new_group else _slice_keys(table, prev, [], None, valid, start)
        for key in after - old:
            added[key] = (partition, stat.file_id, millis)
        removed |= old - after
    if isinstance(meta, ReplaceCommitMetadata):
        for partition, file_id in meta.replaced_file_ids():
            removed |= _slice_keys(table, before.get((partition, file_id)), [], None, valid, start)
    return RecordIndexChange(added, removed - set(added))


def _rolled_back(action: str, metadata: Mapping[str, Any]) -> set[str]:
    if action == Action.ROLLBACK:
        return set(metadata.get("commitsRollback") or [])
    out: set[str] = set()
    for rollbacks in (metadata.get("hoodieRestoreMetadata") or {}).values():
        for rb in rollbacks or []:
            out.update(rb.get("commitsRollback") or [])
    return out


def _rollback_change(table: HoodieTable, instants: set[str]) -> RecordIndexChange:
    """Undo the blocks of rolled-back ``instants``: each key they touched gets the location
    the index gives it without them (or a delete). Their blocks stay valid to readers (a
    rollback's instants count, Hudi's getValidInstantTimestamps), so ours must follow them."""
    files = _index_files(table)
    skip = frozenset(instants)
    change = RecordIndexChange()
    utc = _timezone_utc(table)
    for fs in files.slices:
        touched: set[str] = set()
        logs = [lf.path for lf in fs.log_files]
        if not logs:
            continue
        scan = scan_log_files(files.storage, logs, None, set(instants), timeline_start=None, decode=False,
                              warn=False)
        refuse_damage(scan, RECORD_INDEX_PARTITION, files.storage)
        for block in scan.blocks:
            if block.instant_time not in instants:
                continue
            if block.block_type == BlockType.DELETE:
                touched.update(r.record_key for r in decode_delete_block(block.block) if r.record_key)
            elif block.block_type == BlockType.HFILE_DATA:
                touched.update(k.decode("utf-8") for k, _ in HFile(block.block.content or b"", "").records())
        if not touched:
            continue
        kept = _merge_group(files, fs, touched, skip)
        for key in touched:
            info = kept.get(key)
            if info is None:
                change.deletes.add(key)
            else:
                part, fid = location_of(info)
                millis = int(info.get("instantTime") or instant_millis(fs.base_instant, utc))
                change.upserts[key] = (part, fid, millis)
    return change


def _compacted_past(table: HoodieTable, instants: set[str]) -> bool:
    """Whether a metadata-table compaction merged the blocks of one of ``instants`` into a
    base file (a compaction ``<T>001`` holds every delta commit up to ``T``)."""
    mdt_timeline = Timeline.load(table.storage, metadata_table_path(table.base_path))
    done = [i.timestamp for i in mdt_timeline.instants if i.action == Action.COMMIT and i.is_completed]
    if not done:
        return False
    through = done[-1][:-3] if len(done[-1]) > 17 else done[-1]
    return any(ts <= through for ts in instants)


def _reconcile_change(table: HoodieTable, skip_instants: frozenset[str] = frozenset()) -> RecordIndexChange:
    """Every difference between the index and the keys of the table's latest file slices
    (a full scan, as building the index is): what a rollback past a metadata-table
    compaction needs, since the rolled-back blocks are merged away and no longer say which
    keys they touched."""
    timeline = table.reload_timeline()
    valid = {i.timestamp for i in timeline.completed().instants}
    start = timeline.first_non_savepoint_commit()
    utc = _timezone_utc(table)
    current = read_record_index(table, skip_instants=skip_instants)
    change = RecordIndexChange()
    live: set[str] = set()
    for fs in table.file_system_view(timeline).latest_merged_file_slices():
        millis = instant_millis(fs.base_file.commit_time if fs.base_file is not None else fs.base_instant, utc)
        for key in _slice_keys(table, fs, [], None, valid, start):
            live.add(key)
            if current.get(key) != (fs.partition_path, fs.file_id):
                change.upserts[key] = (fs.partition_path, fs.file_id, millis)
    change.deletes = set(current) - live
    return change


def record_index_change(table: HoodieTable, instant: Instant, metadata: Any) -> RecordIndexChange:
    """What data instant ``instant`` (about to complete with ``metadata``) does to the index."""
    if isinstance(metadata, CommitMetadata):
        if metadata.compacted or (metadata.operation_type or "").upper() in ("COMPACT", "LOG_COMPACT"):
            return RecordIndexChange()  # compaction keeps every key in its file group
        return _write_change(table, instant.timestamp, metadata)
    if instant.action in (Action.ROLLBACK, Action.RESTORE):
        instants = _rolled_back(instant.action, metadata)
        if not instants:
            return RecordIndexChange()
        if instant.action == Action.RESTORE:
            # its inner rollbacks leave no instant on the data timeline, so the blocks they
            # wrote stop counting once the restore completes: its own block holds it all
            inner = frozenset(rb.get("startRollbackTime") for rbs in (metadata.get("hoodieRestoreMetadata") or {})
                              .values() for rb in rbs or [] if rb.get("startRollbackTime"))
            return _reconcile_change(table, inner)
        return _reconcile_change(table) if _compacted_past(table, instants) else _rollback_change(table, instants)
    return RecordIndexChange()  # clean, savepoint: no key moves


# ------------------------------------------------------------------------ writing
def _group_indexes(keys: Iterable[str], count: int) -> list[int]:
    """The file group of each of ``keys``, in their order, hashed as one batch (per key, the
    hash was most of the grouping of a 100k-key write)."""
    return file_group_indexes(pa.array(list(keys), pa.string()), count).tolist()


def append_record_index(mdt: HoodieTable, instant_time: str, change: RecordIndexChange, meta: CommitMetadata) -> None:
    """Append ``change`` to the record index's file groups as delta commit ``instant_time``
    of the metadata table ``mdt`` (one log version per touched group, an HFile data block
    then a delete block), adding their write stats to ``meta``."""
    if not change:
        return
    view = mdt.file_system_view(mdt.reload_timeline())
    slices = sorted(view.latest_file_slices(RECORD_INDEX_PARTITION), key=lambda s: s.file_id)
    count = len(slices)
    by_group: dict[int, RecordIndexChange] = {}
    for key, index in zip(change.upserts, _group_indexes(change.upserts, count)):
        by_group.setdefault(index, RecordIndexChange()).upserts[key] = change.upserts[key]
    for key, index in zip(change.deletes, _group_indexes(change.deletes, count)):
        by_group.setdefault(index, RecordIndexChange()).deletes.add(key)
    version = mdt.format.version
    schema = metadata_record_schema_json(version)
    for index, part in sorted(by_group.items()):
        headers = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema}
        blocks = []
        if part.upserts:
            blocks.append(LogBlock(BlockType.HFILE_DATA, headers,
                                   content=write_hfile(record_index_records(part.upserts, table_version=version), schema)))
        if part.deletes:
            blocks.append(delete_block([DeleteRecord(k, RECORD_INDEX_PARTITION, None) for k in sorted(part.deletes)],
                                       instant_time, schema=schema))
        append_group_log(mdt, RECORD_INDEX_PARTITION, slices[index], instant_time, blocks, meta,
                         numWrites=len(part.upserts) + len(part.deletes), numInserts=len(part.upserts),
                         numDeletes=len(part.deletes))


# ------------------------------------------------------------------------ building
def file_group_count(keys: int, minimum: int, maximum: int, max_group_bytes: int, growth: float) -> int:
    """estimateFileGroupCount: room for ``growth`` times the keys at 48 bytes each, within
    [minimum, maximum] file groups of at most ``max_group_bytes``."""
    if minimum >= maximum:
        return max(1, maximum)
    wanted = math.ceil(keys * growth * AVERAGE_RECORD_SIZE / max(1, max_group_bytes))
    return max(minimum, min(maximum, wanted))


def _remove_failed_build(table: HoodieTable, mdt: HoodieTable, writer: TimelineWriter) -> None:
    """A build that died before listing the partition left its folder and a delta commit of
    its own (a time no data instant has; pending, or completed with only record-index files):
    both go before building again, as Hudi rolls back a failed metadata-table write (under
    the table lock, and no reader takes an unlisted partition)."""
    folder = mdt.storage.join(mdt.base_path, RECORD_INDEX_PARTITION)
    if not mdt.storage.exists(folder):
        return
    data_times = {i.timestamp for i in table.reload_timeline().instants}
    timeline = mdt.reload_timeline()
    for inst in timeline.instants:
        if inst.action != Action.DELTA_COMMIT or inst.timestamp in data_times:
            continue
        if inst.is_completed:
            written = timeline.commit_metadata(inst).partition_to_write_stats
            if set(written) != {RECORD_INDEX_PARTITION}:
                continue
        writer.delete_instant_files(inst.timestamp, Action.DELTA_COMMIT)
    mdt.storage.delete_dir(folder)


def initialize_record_index(table: HoodieTable, sizing: RecordIndexSizing) -> str:
    """Build ``record_index`` from the keys of the table's latest file slices (Hudi's
    readRecordKeysFromBaseFiles / file slices), as a delta commit of the metadata table,
    then list it in ``hoodie.table.metadata.partitions``; returns the init instant. Runs
    under the table lock, before the write's own instant exists."""
    storage, mdt_base = table.storage, metadata_table_path(table.base_path)
    mdt = table.metadata_table()
    timeline = table.reload_timeline()
    valid = {i.timestamp for i in timeline.completed().instants}
    start = timeline.first_non_savepoint_commit()
    utc = _timezone_utc(table)
    locations: dict[str, tuple[str, str, int]] = {}
    for fs in table.file_system_view(timeline).latest_merged_file_slices():
        millis = instant_millis(fs.base_file.commit_time if fs.base_file is not None else fs.base_instant, utc)
        for key in _slice_keys(table, fs, [], None, valid, start):
            locations[key] = (fs.partition_path, fs.file_id, millis)
    count = file_group_count(len(locations), sizing.min_file_groups, sizing.max_file_groups,
                             sizing.max_file_group_bytes, sizing.growth_factor)
    writer = mdt.timeline_writer()
    _remove_failed_build(table, mdt, writer)
    instant = partition_init_instant(table, mdt.reload_timeline())
    writer.create_requested(Instant(instant, Action.DELTA_COMMIT, State.REQUESTED))
    writer.transition_to_inflight(Instant(instant, Action.DELTA_COMMIT, State.REQUESTED))
    write_partition_metadata(storage, mdt_base, RECORD_INDEX_PARTITION, instant)
    groups: list[dict[str, tuple[str, str, int]]] = [{} for _ in range(count)]
    for (key, loc), index in zip(locations.items(), _group_indexes(locations, count)):
        groups[index][key] = loc
    schema = metadata_record_schema_json(mdt.format.version)
    meta = CommitMetadata(operation_type="BULK_INSERT_PREPPED", extra_metadata={"schema": schema})
    for index, group in enumerate(groups):
        write_empty_log(mdt, RECORD_INDEX_PARTITION, file_group_id(index), instant)
        name = f"{file_group_id(index)}_{make_write_token(index, 0, 0)}_{instant}.hfile"
        data = write_hfile(record_index_records(group, name, mdt.format.version), schema)
        storage.write_bytes(storage.join(mdt_base, RECORD_INDEX_PARTITION, name), data)
        meta.add_write_stat(RECORD_INDEX_PARTITION, WriteStat.new(
            fileId=file_group_id(index), path=f"{RECORD_INDEX_PARTITION}/{name}", prevCommit="null",
            numWrites=len(group), numInserts=len(group), totalWriteBytes=len(data),
            partitionPath=RECORD_INDEX_PARTITION, fileSizeInBytes=len(data)))
    commit.complete(mdt, Instant(instant, Action.DELTA_COMMIT, State.INFLIGHT), meta)
    table.update_config({METADATA_PARTITIONS: ",".join(sorted(set(listed_in(table.config)) | {RECORD_INDEX_PARTITION}))})
    return instant


def ensure_record_index(table: HoodieTable, settings: MetadataTableSettings) -> bool:
    """Under the table lock, before a write's instant exists: build the record index when
    ``hoodie.metadata.record.index.enable`` asks for it and the table has none (as Hudi's
    writer initializes an enabled partition). Returns whether the table now has one.
    ``table.config`` is the one read under that lock (by ensure_files_partition, just before;
    every change since went through ``update_config``, which keeps it)."""
    if has_record_index(table.config):
        return True
    if settings.record_index_sizing is None:
        return False
    initialize_record_index(table, settings.record_index_sizing)
    return True
