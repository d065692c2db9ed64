"""The metadata table's own table services: compaction, clean and archival, as Hudi runs them
on table versions 6, 8 and 9.

HoodieBackedTableMetadataWriter.performTableServices, which Hudi's data writer runs before
its next delta commit on the metadata table (we run it at the same point: right before the
delta commit of the data instant being completed, under the data table's lock):

1. a compaction left pending by a crashed run is finished first;
2. clean (``cleanIfNecessary``): not within three completed instants of the latest
   compaction (a reader that opened the log files just before it must not lose them), else
   KEEP_LATEST_COMMITS with 20 commits retained (the metadata table's fixed cleaner
   config), as clean ``<latest delta commit>002`` (version 6; Hudi 1.x gives its services a
   fresh instant time);
3. compaction (``compactIfNecessary``), only when no data-table instant at or before the
   latest delta commit is pending (a compacted base file at T stands for every data
   instant up to T: one still pending could yet fail, and Hudi then refuses to roll it
   back past the compaction), no data-table rollback or restore is pending (ours: see
   ``_data_instants_holding_compaction``) and no compaction of the metadata table is pending: once
   ``hoodie.metadata.compact.max.delta.commits`` delta commits gathered since the last
   compaction (all of them, the initializing one included, before the first), compaction
   ``<latest delta commit>001`` (version 6; a fresh instant time on 8 and 9) merges the latest slice of every file group of the ``files``
   ``record_index``, ``column_stats``, ``partition_stats`` and ``bloom_filters`` partitions,
   of the kept secondary indexes and of the expression indexes (``expr_index_*``) into new base
   HFiles (Hudi compacts all partitions at
   once; with a partition we do not compact, there is no compaction at all).
4. archival of the metadata table's timeline (actions/archive.archive_metadata_table):
   the data table's rules with keep.min/max one higher, and nothing at or after the data
   table's earliest commit or pending instant.

The merge is the reader's (files_listing.merge_file_slice, record_index._merge_group,
secondary_index.slice_entries): base records, then the blocks of valid instants in log order;
file tombstones and secondary-index tombstones are dropped from the result, since the new
base holds the whole state and nothing older is merged under it.
Every record names its new file in ``_hoodie_file_name``, as Hudi's merge handle writes it.

The data table's archival stops before the latest compaction (actions/archive.py): the
blocks after it are only valid while their data instants are on the active timeline.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.metadata_table import secondary_index_writer as siw
from airflow_hoodie.config_keys.metadata_table import MAX_DELTA_COMMITS_WHEN_PENDING
from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.settings.clean import CleanSettings
from airflow_hoodie.settings.metadata_table import MetadataTableSettings
from airflow_hoodie.table.file_group.file_group import BaseFile, FileSlice, LogFile
from airflow_hoodie.table.file_group.file_naming import base_file_name, make_write_token
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata, WriteStat
from airflow_hoodie.table.metadata.plans import CompactionOperation, CompactionPlan
from airflow_hoodie.table.metadata_table import record_index as ri
from airflow_hoodie.table.metadata_table.files_listing import (
    FILES_PARTITION,
    _Merger,
    block_instants,
    merge_file_slice,
)
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile
from airflow_hoodie.table.metadata_table.metadata_record import (
    encode_record,
    metadata_record_schema_json,
)
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_PARTITIONS,
    METADATA_PARTITIONS_INFLIGHT,
    listed_in,
)
from airflow_hoodie.table.metadata_table.secondary_index import (
    SECONDARY_INDEX_PREFIX,
    secondary_index_records,
)
from airflow_hoodie.table.metadata_table.stats_reader import IndexPartitionFiles
from airflow_hoodie.table.metadata_table.stats_partitions import EXPRESSION_INDEX_PREFIX
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline

if TYPE_CHECKING:
    from airflow_hoodie.table.hoodie_table import HoodieTable

#: HoodieTableMetadataUtil's operation suffixes on metadata-table instant times
COMPACTION_SUFFIX = "001"
CLEAN_SUFFIX = "002"
#: cleanIfNecessary waits until this many instants completed after the latest compaction
CLEAN_WAIT_INSTANTS = 3
#: a compaction's base file is written by one task; a rerun of the same plan rewrites it
COMPACTION_WRITE_TOKEN = make_write_token(0, 0, 0)
MB = 1024 * 1024
#: the partitions this module compacts (each merged as its reader merges it)
COMPACTED_PARTITIONS = (FILES_PARTITION, ri.RECORD_INDEX_PARTITION, "column_stats", "partition_stats",
                        "bloom_filters")


@dataclass
class TableServicesResult:
    """What one round of the metadata table's services did (instant times)."""

    compacted: list[str] = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    reason: str = ""


def _delta_commits_since_compaction(timeline: Timeline) -> list[Instant]:
    """CompactionUtils.getDeltaCommitsSinceLatestCompaction: delta commits in any state after
    the latest completed compaction commit, or all of them before the first."""
    done = [i.timestamp for i in timeline.instants if i.action == Action.COMMIT and i.is_completed]
    deltas = [i for i in timeline.instants if i.action == Action.DELTA_COMMIT]
    return [d for d in deltas if d.timestamp > done[-1]] if done else deltas


def _latest_compaction(timeline: Timeline) -> str | None:
    done = [i.timestamp for i in timeline.instants if i.action == Action.COMMIT and i.is_completed]
    return done[-1] if done else None


def compacted_through(metadata_timeline: Timeline) -> str | None:
    """The latest delta commit whose records a compaction merged into a base file: a rollback
    block can no longer cancel it or anything before it (Hudi's metadata writer then refuses
    to roll the data instant back: validateRollback)."""
    latest = _latest_compaction(metadata_timeline)
    return _delta_commit_of(metadata_timeline, latest) if latest else None


def merged_by_compaction(metadata_timeline: Timeline, delta_commit: str) -> bool:
    """Whether a compaction merged ``delta_commit``'s records into a base file, where no
    rollback reaches them. Hudi 1.x slices by completion time: a delta commit that completed
    after the compaction was planned (or never did) sits in the new slice's logs, whatever
    its instant time. Version 6 slices by instant time; a pending delta commit's blocks
    were never merged (a compaction reads committed blocks only)."""
    latest = _latest_compaction(metadata_timeline)
    inst = metadata_timeline.get(delta_commit, Action.DELTA_COMMIT)
    if latest is None or inst is None or not inst.is_completed:
        return False
    if _fresh_service_times(metadata_timeline):
        return inst.completion_time is not None and inst.completion_time < latest
    return delta_commit <= _delta_commit_of(metadata_timeline, latest)


def _delta_commit_of(timeline: Timeline, service_instant: str) -> str:
    """The delta commit a metadata-table compaction or clean follows. Table version 6 names
    the service after it (``<delta commit>001``); Hudi 1.x (versions 8, 9) gives the service
    a fresh instant time, so it follows the latest delta commit before that time."""
    if service_instant.endswith(COMPACTION_SUFFIX) or service_instant.endswith(CLEAN_SUFFIX):
        stem = service_instant[:-3]
        if timeline.get(stem, Action.DELTA_COMMIT) is not None or not _fresh_service_times(timeline):
            return stem
    before = [i.timestamp for i in timeline.instants
              if i.action == Action.DELTA_COMMIT and i.timestamp < service_instant]
    return before[-1] if before else service_instant


def _fresh_service_times(timeline: Timeline) -> bool:
    """Whether this metadata table's services take fresh instant times (Hudi 1.x layout)."""
    return timeline.tracks_completion_time


def _service_instant(mdt: HoodieTable, latest: str, suffix: str) -> str:
    """The instant of a metadata-table compaction (``suffix`` 001) or clean (002) after
    delta commit ``latest``: suffixed on table version 6 (HoodieTableMetadataUtil), a new
    instant time on 8 and 9, as Hudi 1.x's metadata writer takes it."""
    if not mdt.format.suffixes_metadata_service_instants:
        return mdt.new_instant_time(fresh=False)
    return latest + suffix


def _serviced_after(timeline: Timeline, actions: tuple[str, ...], latest: str) -> bool:
    """A service of ``actions`` already follows delta commit ``latest`` (a retry)."""
    return any(i.action in actions and _delta_commit_of(timeline, i.timestamp) == latest
               for i in timeline.instants if i.timestamp > latest)


# ---------------------------------------------------------------------------- compaction
def _operation_metrics(fs: FileSlice) -> dict[str, float]:
    """CompactionStrategy.captureMetrics of the operation (sizes in whole MB)."""
    log_size = sum(max(int(lf.size or 0), 0) for lf in fs.log_files)
    base_size = int(fs.base_file.size) if fs.base_file is not None else 0
    read = (base_size + log_size) // MB
    write = base_size // MB
    return {"TOTAL_IO_READ_MB": float(read), "TOTAL_IO_WRITE_MB": float(write), "TOTAL_IO_MB": float(read + write),
            "TOTAL_LOG_FILES_SIZE": float(log_size), "TOTAL_LOG_FILES": float(len(fs.log_files))}


def _compacted_partitions(table: HoodieTable) -> list[str]:
    """The partitions a compaction of ``table``'s metadata table merges: the fixed ones, the
    secondary indexes kept true and the listed expression indexes (laid out and merged as the
    statistics partitions are)."""
    listed = listed_in(table.config, METADATA_PARTITIONS)
    return [*COMPACTED_PARTITIONS, *(d.name for d in siw.kept_secondary_indexes(table)),
            *sorted(p for p in listed if p.startswith(EXPRESSION_INDEX_PREFIX))]


def _schedule_compaction(mdt: HoodieTable, instant_time: str, partitions: list[str]) -> bool:
    """Write ``instant_time.compaction.requested`` for the slices of ``partitions`` with log
    files; False when none has one (Hudi then schedules nothing)."""
    view = mdt.file_system_view(mdt.reload_timeline())
    slices = [s for part in partitions for s in view.latest_file_slices(part) if s.log_files]
    if not slices:
        return False
    ops = [CompactionOperation(
        base_instant_time=s.base_instant, file_id=s.file_id, partition_path=s.partition_path,
        data_file_path=s.base_file.file_name if s.base_file is not None else None,
        delta_file_paths=[lf.file_name for lf in s.log_files], metrics=_operation_metrics(s)) for s in slices]
    mdt.timeline_writer().create_requested(
        Instant(instant_time, Action.COMPACTION, State.REQUESTED), CompactionPlan(operations=ops).to_bytes())
    return True


def _operation_slice(mdt: HoodieTable, op: CompactionOperation) -> FileSlice:
    part = op.partition_path or FILES_PARTITION
    folder = mdt.storage.join(mdt.base_path, part)
    base = None
    if op.data_file_path:
        path = mdt.storage.join(folder, op.data_file_path.rsplit("/", 1)[-1])
        base = BaseFile.from_path(path, mdt.storage.size(path), part)
    logs = []
    for name in op.delta_file_paths or []:
        path = mdt.storage.join(folder, name.rsplit("/", 1)[-1])
        logs.append(LogFile.from_path(path, mdt.storage.size(path), part))
    logs.sort(key=lambda lf: lf.sort_key)
    return FileSlice(part, op.file_id or "", op.base_instant_time or "", base, logs)


def _index_files(mdt: HoodieTable, fs: FileSlice, valid: set[str], pending: set[str],
                       data_timeline: Timeline) -> IndexPartitionFiles:
    """An index partition's reader over the one slice a compaction operation merges."""
    return IndexPartitionFiles(mdt.storage, fs.partition_path, [fs], valid, pending,
                               data_timeline.first_non_savepoint_commit())


def _merged_records(mdt: HoodieTable, fs: FileSlice, data_timeline: Timeline, valid: set[str], pending: set[str],
                    name: str) -> tuple[list[tuple[bytes, bytes]], dict[str, int]]:
    """The slice's records merged as its partition's reader merges them, encoded for the new
    base file ``name``; with counts for the write stat."""
    if fs.partition_path == ri.RECORD_INDEX_PARTITION:
        files = ri._IndexFiles(mdt.storage, mdt.base_path, [fs], valid, pending,
                               data_timeline.first_non_savepoint_commit())
        infos = ri._merge_group(files, fs, None)
        records = [(key.encode("utf-8"), encode_record({
            "_hoodie_file_name": name, "key": "", "type": ri.TYPE_RECORD_INDEX, "recordIndexMetadata": info},
            mdt.format.version))
            for key, info in sorted(infos.items())]
        return records, {}
    if fs.partition_path.startswith(SECONDARY_INDEX_PREFIX):
        files = _index_files(mdt, fs, valid, pending, data_timeline)
        live = {key: False for key, deleted in siw.merged_entries(files, fs).items() if not deleted}
        return secondary_index_records(live, mdt.format.version, name), {}
    if fs.partition_path in ("column_stats", "partition_stats", "bloom_filters") or \
            fs.partition_path.startswith(EXPRESSION_INDEX_PREFIX):
        # merged as their reader merges them; tombstones go, as Hudi's compaction drops them
        from airflow_hoodie.table.metadata_table import stats_reader  # noqa: PLC0415

        files = _index_files(mdt, fs, valid, pending, data_timeline)
        live = {k: r for k, r in stats_reader.merge_group(files, fs, None).items()
                if not (r.get("ColumnStatsMetadata") or r.get("BloomFilterMetadata") or {}).get("isDeleted")}
        records = [(key.encode("utf-8"), encode_record({**{k: v for k, v in rec.items() if not k.startswith("_hoodie_")},
                                                        "_hoodie_file_name": name}, mdt.format.version))
                   for key, rec in sorted(live.items())]
        return records, {}
    merger = _Merger()
    merged = merge_file_slice(mdt.storage, fs, valid, pending, merger)
    records = []
    for key in sorted(merger.records):
        live = {n: info for n, info in merger.records[key].items() if not info.get("isDeleted")}
        records.append((key.encode("utf-8"), encode_record({
            "_hoodie_file_name": name, "key": "", "type": merger.types[key], "filesystemMetadata": live},
            mdt.format.version)))
    updated = len(merged.base_keys & set(merger.records))
    return records, {"numDeletes": len(merged.base_keys - set(merger.records)), "numUpdateWrites": updated,
                     "numInserts": len(records) - updated, "totalUpdatedRecordsCompacted": updated,
                     "totalLogRecords": merged.log_records, "totalLogBlocks": merged.log_blocks}


def _compact_operation(table: HoodieTable, mdt: HoodieTable, instant_time: str, op: CompactionOperation,
                       schema: str) -> WriteStat:
    """Merge one slice into ``<fileId>_<token>_<instant>.hfile``; its write stat."""
    fs = _operation_slice(mdt, op)
    data_timeline = Timeline.load(table.storage, table.base_path)
    valid, pending = block_instants(data_timeline, mdt.timeline)
    latest = _delta_commit_of(mdt.timeline, instant_time)
    valid = {ts for ts in valid if ts <= latest}
    name = base_file_name(fs.file_id, COMPACTION_WRITE_TOKEN, instant_time, ".hfile")
    records, counts = _merged_records(mdt, fs, data_timeline, valid, pending, name)
    data = write_hfile(records, schema)
    mdt.storage.write_bytes(mdt.storage.join(mdt.base_path, fs.partition_path, name), data)
    return WriteStat.new(
        fileId=fs.file_id, path=f"{fs.partition_path}/{name}", prevCommit=fs.base_instant, numWrites=len(records),
        totalWriteBytes=len(data), partitionPath=fs.partition_path, totalLogFilesCompacted=len(fs.log_files),
        totalLogSizeCompacted=sum(int(lf.size or 0) for lf in fs.log_files), fileSizeInBytes=len(data), **counts)


def _execute_compaction(table: HoodieTable, mdt: HoodieTable, instant_time: str) -> None:
    """requested -> inflight -> new base HFile(s) -> ``instant_time.commit`` (compacted)."""
    timeline = mdt.reload_timeline()
    current = timeline.get(instant_time, Action.COMPACTION) or timeline.get(instant_time, Action.COMMIT)
    if current is not None and current.is_completed:
        return
    requested = Instant(instant_time, Action.COMPACTION, State.REQUESTED)
    plan = CompactionPlan.from_bytes(timeline.read_plan(requested))
    if current is None or current.state == State.REQUESTED:
        mdt.timeline_writer().transition_to_inflight(requested)
        mdt.reload_timeline()
    schema = metadata_record_schema_json(mdt.format.version)
    meta = CommitMetadata(operation_type="COMPACT", compacted=True, extra_metadata={"schema": schema})
    for op in plan.operations or []:
        stat = _compact_operation(table, mdt, instant_time, op, schema)
        meta.add_write_stat(op.partition_path or FILES_PARTITION, stat)
    commit.complete(mdt, Instant(instant_time, Action.COMPACTION, State.INFLIGHT), meta)


def _data_instants_holding_compaction(table: HoodieTable, instant_time: str) -> list[str]:
    """validateTimelineBeforeSchedulingCompaction: data-table instants (any action) still
    requested or inflight at or before the metadata table's latest delta commit; and any
    pending rollback or restore. Ours: the instants a rollback undoes leave the timeline
    before it completes, and only its completed metadata makes their blocks valid again
    (files_listing.valid_data_instants), so a compaction meanwhile would drop them."""
    data = Timeline.load(table.storage, table.base_path)
    return [i.timestamp for i in data.instants if not i.is_completed
            and (i.timestamp <= instant_time or i.action in (Action.ROLLBACK, Action.RESTORE))]


def _other_partitions(table: HoodieTable) -> list[str]:
    """Metadata-table partitions we do not compact, or still being built. Hudi compacts every
    partition at once, and the data table's archival barrier relies on that: blocks of the
    instants it archives must all be in base files. With such a partition the metadata table
    is not compacted (and the barrier stays put)."""
    listed = listed_in(table.config, METADATA_PARTITIONS)
    building = listed_in(table.config, METADATA_PARTITIONS_INFLIGHT)
    compacted = _compacted_partitions(table)
    return [p for p in listed if p not in compacted] + building


def _compact_if_necessary(table: HoodieTable, mdt: HoodieTable, latest: str,
                          settings: MetadataTableSettings) -> str | None:
    timeline = mdt.timeline
    since = len(_delta_commits_since_compaction(timeline))
    due = since >= settings.compact_max_delta_commits
    limit = settings.max_delta_commits_when_pending
    if not due and since <= limit:
        return None  # nothing to decide: the data timeline need not be read
    pending_data = _data_instants_holding_compaction(table, latest)
    if pending_data:
        # checkNumDeltaCommits: a data instant that never finishes must not let the
        # metadata table's log grow without end
        if since > limit:
            raise HoodieTimelineError(
                f"The metadata table of {table.base_uri} has {since} delta commits since its last compaction, more "
                f"than {MAX_DELTA_COMMITS_WHEN_PENDING}={limit}: the pending data-table instant(s) "
                f"{', '.join(pending_data[:5])} keep it from compacting. Finish or roll back those instants "
                f"(or raise {MAX_DELTA_COMMITS_WHEN_PENDING}), then run this task again.")
        return None
    if not due or any(i.action == Action.COMPACTION and not i.is_completed for i in timeline.instants):
        return None
    if _other_partitions(table):
        return None
    if _serviced_after(timeline, (Action.COMMIT, Action.COMPACTION), latest):
        return None  # compacted at this delta commit already (a later one failed and was retried)
    instant_time = _service_instant(mdt, latest, COMPACTION_SUFFIX)
    if not _schedule_compaction(mdt, instant_time, _compacted_partitions(table)):
        return None
    _execute_compaction(table, mdt, instant_time)
    return instant_time


# ---------------------------------------------------------------------------- clean
def _cleaner() -> Any:
    """The data table's cleaner (actions.clean), run on the metadata table with its fixed
    config. Imported when a clean runs: the cleaner reaches the planned services, the
    rollback and, through them, the commit path, which imports this module."""
    from airflow_hoodie.actions import clean  # noqa: PLC0415

    return clean


def _archiver() -> Any:
    """The data table's archiver (actions.archive), with the metadata table's settings; imported
    when archival runs, as the cleaner is."""
    from airflow_hoodie.actions import archive  # noqa: PLC0415

    return archive


def _execute_clean(mdt: HoodieTable, instant_time: str) -> None:
    """Run the metadata table's clean plan ``instant_time``, with the data table's cleaner
    rules and the metadata table's fixed cleaner config."""
    clean = _cleaner()
    started = time.time()
    timeline = mdt.reload_timeline()
    requested = Instant(instant_time, Action.CLEAN, State.REQUESTED)
    data = timeline.read_plan(requested)
    plan = clean.deserialize_plan("HoodieCleanerPlan", data)
    current = timeline.get(instant_time, Action.CLEAN)
    if current is not None and current.state == State.REQUESTED:
        mdt.timeline_writer().transition_to_inflight(requested, data)
    results = []
    for partition, infos in sorted((plan.get("filePathsToBeDeletedPerPartition") or {}).items()):
        for info in infos:
            uri = info["filePath"]  # a full URI; the metadata table's files all sit in its partitions
            mdt.storage.delete(mdt.storage.join(mdt.base_path, partition, uri.rsplit("/", 1)[-1]))
            results.append((partition, uri, True))
    meta = clean.build_clean_metadata(plan, instant_time, results, int((time.time() - started) * 1000))
    commit.complete(mdt, Instant(instant_time, Action.CLEAN, State.INFLIGHT), meta)


def _clean_if_necessary(mdt: HoodieTable, latest: str) -> list[str]:
    timeline = mdt.timeline
    done: list[str] = []
    for inst in [i for i in timeline.instants if i.action == Action.CLEAN and not i.is_completed]:
        _execute_clean(mdt, inst.timestamp)  # Hudi finishes a pending clean before planning one
        done.append(inst.timestamp)
    if done:
        timeline = mdt.reload_timeline()
    last = _latest_compaction(timeline)
    if last is not None and sum(1 for i in timeline.instants if i.is_completed and i.timestamp > last) \
            < CLEAN_WAIT_INSTANTS:
        return done
    if _serviced_after(timeline, (Action.CLEAN,), latest):
        return done
    instant_time = _service_instant(mdt, latest, CLEAN_SUFFIX)
    clean = _cleaner()
    instant, _plan, _reason = clean.plan_clean(mdt, CleanSettings.of_metadata_table(), instant_time)
    if instant is not None:
        _execute_clean(mdt, instant.timestamp)
        done.append(instant.timestamp)
    if done:
        mdt.reload_timeline()
    return done


# ---------------------------------------------------------------------------- entry point
def run_table_services(table: HoodieTable, mdt: HoodieTable,
                       settings: MetadataTableSettings | None = None) -> TableServicesResult:
    """performTableServices on ``mdt``, the metadata table of ``table``, with the data change's
    metadata-table ``settings`` (None: every key at its default)."""
    settings = settings or MetadataTableSettings.defaults()
    result = TableServicesResult()
    timeline = mdt.reload_timeline()
    for inst in [i for i in timeline.instants if i.action == Action.COMPACTION and not i.is_completed]:
        # runPendingTableServicesOperations; not while a data instant it merges is being
        # rolled back (its blocks are invalid until the rollback completes)
        if _data_instants_holding_compaction(table, _delta_commit_of(timeline, inst.timestamp)):
            break
        _execute_compaction(table, mdt, inst.timestamp)
        result.compacted.append(inst.timestamp)
    if result.compacted:
        timeline = mdt.reload_timeline()
    deltas = [i.timestamp for i in timeline.instants if i.action == Action.DELTA_COMMIT and i.is_completed]
    if not deltas:
        result.reason = "no completed delta commit"
        return result
    latest = deltas[-1]
    result.cleaned = _clean_if_necessary(mdt, latest)
    compacted = _compact_if_necessary(table, mdt, latest, settings)
    if compacted is not None:
        result.compacted.append(compacted)
        mdt.reload_timeline()
    archived = _archiver().archive_metadata_table(table, mdt, settings.archive)
    if archived is not None:
        result.archived = list(archived.get("archived_instants") or [])
    return result
