"""Archival: move old instants off the active timeline into the table's archive.

What may go is decided by :mod:`archive_rules` (Hudi 0.14's rules on table version 6,
Hudi 1.x's TimelineArchiverV2 on 8 and 9); a metadata table's own timeline is archived by
the same rules, behind its data table's earliest instant (:func:`archive_metadata_table`).
Every state file of a chosen instant is then written out, and only after that is the
active copy deleted, requested/inflight files before completed ones, so a crash never makes
a completed action look pending:

* version 6: as ``HoodieArchivedMetaEntry`` records in Avro data blocks of
  ``.hoodie/archived/.commits_.archive.N_1-0-1`` (``hoodie.commits.archival.batch`` sizes the
  blocks);
* versions 8 and 9: one ``HoodieLSMTimelineInstant`` row per action in a level-0 parquet
  file of the LSM timeline (:mod:`lsm_timeline_writer`), published by a new manifest
  before any active file is deleted; the LSM layers are compacted and cleaned afterwards.

When nothing may go, the result's ``reason`` names the rule that holds the oldest commit
back, with its numbers (:mod:`archive_reasons`).
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Sequence

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.archive_reasons import (
    metadata_delta_commits_since_compaction,
    nothing_to_archive_reason,
)
from airflow_hoodie.actions.archive_rules import (  # noqa: F401 - the rules, for callers of this module
    RULES_0_14,
    RULES_1_X,
    ArchiveContext,
    ArchiveRules,
    clean_and_rollback_before,
    clean_and_rollback_to_archive,
    commits_to_archive,
    earliest_replaced_savepoint_in_clean,
    first_commit_completed_after,
    instants_to_archive,
    min_and_max_to_keep,
    oldest_commit_to_retain_for_pending,
    oldest_instant_to_retain_for_clustering,
    oldest_instant_to_retain_for_compaction,
    rules_for,
)
from airflow_hoodie.actions.service_common import (
    crash_point,
    deserialize_plan,
    flag,
    is_completed,
    serialize_plan,
)
from airflow_hoodie.actions.transaction.service_transaction import (
    transaction_manager_for,
)
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.archive import (  # noqa: F401 - the service's keys, for its callers
    BATCH,
    BEYOND_SAVEPOINT,
    MAX_COMMITS,
    MERGE_ENABLE,
    MERGE_FILES_BATCH,
    MERGE_SMALL_FILE_LIMIT,
    MIN_COMMITS,
)
from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.settings.archive import ArchiveSettings, validate_archive_config  # noqa: F401 - for callers
from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.table.file_group.file_naming import (
    log_file_name,
    parse_log_file_name,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.data_block import encode_avro_records
from airflow_hoodie.table.log.log_block import BlockType, HeaderKey, LogBlock
from airflow_hoodie.table.log.log_writer import LogWriter
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.metadata.commit_metadata import (
    CommitMetadata,
    ReplaceCommitMetadata,
)
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_FOLDER,
    METADATA_PARTITIONS,
)
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    State,
)
from airflow_hoodie.table.timeline.lsm_timeline import LsmRecord
from airflow_hoodie.table.timeline.lsm_timeline_writer import LsmTimelineWriter
from airflow_hoodie.table.timeline.timeline import Timeline


def state_files_of(completed: Sequence[Instant], all_files: Sequence[Instant]) -> list[Instant]:
    """Every instant file (any state) belonging to the chosen completed instants.

    A completed ``commit`` produced by a compaction also owns the ``compaction``
    requested/inflight files with the same timestamp (a ``replacecommit`` its
    ``clustering`` files, a ``deltacommit`` its ``logcompaction`` files).
    """
    keys = {(c.timestamp, c.action) for c in completed}
    out = []
    for f in all_files:
        if (f.timestamp, f.completed().action) in keys:
            out.append(f)
    return out


def deletion_order(files: Sequence[Instant]) -> list[Instant]:
    """Requested and inflight files first, completed last (a crash never leaves an
    archived action looking pending)."""
    return sorted(files, key=lambda i: (is_completed(i), i.sort_key))


# ======================================================================== table level
#: CleanerUtils.SAVEPOINTED_TIMESTAMPS: a clean plan's extra-metadata key naming the savepoints it kept files for
CLEAN_SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"
ARCHIVE_FILE_ID = "commits"
ARCHIVE_EXT = ".archive"
ARCHIVE_WRITE_TOKEN = "1-0-1"
MERGE_PLAN_FILE = "mergeArchivePlan"

#: HoodieArchivedMetaEntry field holding each (action, state)'s metadata, and its schema.
_ENTRY_FIELDS = {
    ("commit", "COMPLETED"): ("hoodieCommitMetadata", "commit_json"),
    ("deltacommit", "COMPLETED"): ("hoodieCommitMetadata", "commit_json"),
    ("clean", "COMPLETED"): ("hoodieCleanMetadata", "HoodieCleanMetadata"),
    ("clean", "REQUESTED"): ("hoodieCleanerPlan", "HoodieCleanerPlan"),
    ("clean", "INFLIGHT"): ("hoodieCleanerPlan", "HoodieCleanerPlan"),
    ("rollback", "COMPLETED"): ("hoodieRollbackMetadata", "HoodieRollbackMetadata"),
    ("savepoint", "COMPLETED"): ("hoodieSavePointMetadata", "HoodieSavepointMetadata"),
    ("compaction", "REQUESTED"): ("hoodieCompactionPlan", "HoodieCompactionPlan"),
    ("compaction", "INFLIGHT"): ("hoodieCompactionPlan", "HoodieCompactionPlan"),
    ("replacecommit", "COMPLETED"): ("hoodieReplaceCommitMetadata", "replace_json"),
    ("replacecommit", "REQUESTED"): ("hoodieRequestedReplaceMetadata", "HoodieRequestedReplaceMetadata"),
    ("replacecommit", "INFLIGHT"): ("HoodieInflightReplaceMetadata", "commit_json"),
}


def archive_entry(instant_file: Instant, data: bytes, plan_for_compaction_inflight: bytes | None = None) -> dict[str, Any]:
    """One ``HoodieArchivedMetaEntry`` for one instant file (as Hudi's MetadataConversionUtils)."""

    rec: dict[str, Any] = {"commitTime": instant_file.timestamp, "actionType": instant_file.action,
                           "actionState": instant_file.state.name, "version": 1}
    spec = _ENTRY_FIELDS.get((instant_file.action, instant_file.state.name))
    if instant_file.action == Action.COMPACTION and not data and plan_for_compaction_inflight:
        data = plan_for_compaction_inflight  # Hudi archives the plan for the inflight state too
    if spec is not None and data:
        name, kind = spec
        if kind == "commit_json":
            rec[name] = CommitMetadata.from_json(data).to_avro()
        elif kind == "replace_json":
            rec[name] = ReplaceCommitMetadata.from_json(data).to_avro()
        else:
            rec[name] = deserialize_plan(kind, data)
    return rec


def _archive_dir(table: HoodieTable) -> str:
    return table.archive_path


def archive_context(table: HoodieTable, tl: Any) -> ArchiveContext:
    """The timeline facts archival's bounds need that take file reads: the latest clean's
    horizon and savepoints, and the metadata table's latest compaction."""
    cleans = [i for i in tl.instants if i.action == Action.CLEAN and is_completed(i)]
    latest_clean = cleans[-1].timestamp if cleans else None
    earliest = None
    savepoints: tuple[str, ...] = ()
    if cleans:  # Hudi reads the clean's plan, not its metadata
        try:
            plan = deserialize_plan("HoodieCleanerPlan", tl.read_plan(cleans[-1]))
            earliest = ((plan.get("earliestInstantToRetain") or {}).get("timestamp")) or None
            kept = ((plan.get("extraMetadata") or {}).get(CLEAN_SAVEPOINTED_TIMESTAMPS) or "")
        except HoodieTimelineError:
            # an archival killed while deleting this (archived) clean's files took its plan
            # first: its completed metadata holds the same horizon
            meta = deserialize_plan("HoodieCleanMetadata", tl.read_details(cleans[-1]))
            earliest = meta.get("earliestCommitToRetain") or None
            kept = ((meta.get("extraMetadata") or {}).get(CLEAN_SAVEPOINTED_TIMESTAMPS) or "")
        savepoints = tuple(t for t in kept.split(",") if t)
    has_mdt = bool((table.config.get(METADATA_PARTITIONS) or "").strip())
    mdt_compaction = None
    if has_mdt:
        mdt = Timeline.load(table.storage, Storage.join(table.base_path, ".hoodie", METADATA_FOLDER))
        done = [i.timestamp for i in mdt.instants if i.action == Action.COMMIT and is_completed(i)]
        mdt_compaction = done[-1] if done else None
    return ArchiveContext(is_mor=bool(table.is_mor), latest_clean=latest_clean,
                          latest_clean_earliest_retain=earliest, latest_clean_savepoints=savepoints,
                          has_metadata_table=has_mdt,
                          metadata_latest_compaction=mdt_compaction)


def write_archive_entries(table: HoodieTable, entries: Sequence[dict[str, Any]], batch: int) -> str:
    """Append entries (``batch`` records per Avro data block) to the archive log."""

    schema = avro_codec.schema_json("HoodieArchivedMetaEntry")
    folder = _archive_dir(table)
    table.storage.mkdirs(folder)
    writer = LogWriter(table.storage, folder, ARCHIVE_FILE_ID, "", ARCHIVE_WRITE_TOKEN, ext=ARCHIVE_EXT)
    path = ""
    try:
        for start in range(0, len(entries), max(batch, 1)):
            chunk = list(entries[start:start + max(batch, 1)])
            block = LogBlock(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: schema}, {},
                             encode_avro_records(chunk, schema))
            res = writer.append([block])
            path = res[-1].log_path
    finally:
        writer.close()
    return path


def run_archive(table: HoodieTable, config: HoodieConfig) -> dict[str, Any]:
    """Archive what the rules allow; then merge small archive files if enabled. Under
    the table lock, as Hudi's archiver: a writer checking conflicts at commit reads the
    timeline that archival deletes from."""
    settings, action = ArchiveSettings.from_config(config), ActionSettings.from_config(config)
    commit.prepare_for_change(table, action.change)
    with transaction_manager_for(table, action.lock).transaction("archive the timeline"):
        return _archive(table, settings)


def data_table_earliest(data_timeline: Timeline) -> str | None:
    """TimelineUtils.getEarliestInstantForMetadataArchival (not beyond savepoints): the earlier
    of the data table's first commit (any state) and its first pending instant (any action).
    Cleans and rollbacks do not count: an old one would hold the metadata timeline back."""
    first_commit = next((i.timestamp for i in data_timeline.instants if i.action in Action.COMMITS), None)
    first_pending = next((i.timestamp for i in data_timeline.instants if not is_completed(i)), None)
    found = [ts for ts in (first_commit, first_pending) if ts is not None]
    return min(found) if found else None


def archive_metadata_table(data: HoodieTable, mdt: HoodieTable, settings: ArchiveSettings) -> dict[str, Any] | None:
    """Archive the metadata table's own timeline, as Hudi's writer does after the metadata
    table's compaction and clean (under the data table's lock, inside its commit), with
    ``settings`` from :meth:`ArchiveSettings.of_metadata_table`. Skipped while too few
    instants are completed for any rule to archive one."""
    done = [i for i in mdt.timeline.instants if is_completed(i)]
    if (sum(1 for i in done if i.action in Action.COMMITS) <= settings.max_commits
            and all(sum(1 for i in done if i.action == a) <= settings.max_commits
                    for a in (Action.CLEAN, Action.ROLLBACK))):
        return None
    earliest = data_table_earliest(Timeline.load(data.storage, data.base_path))
    if earliest is None:
        return None
    return _archive(mdt, settings, earliest)


def _newest_archived(table: HoodieTable) -> str | None:
    """Timeline layout 2: the newest instant time the LSM history's latest snapshot holds
    (from its manifest's file names); None on layout 1, whose archive log has no such index."""
    if not table.format.archives_to_lsm or not table.storage.exists(table.history_path):
        return None
    return LsmTimelineWriter(table.storage, table.history_path).newest_archived_instant()


def _finish_killed_deletions(table: HoodieTable, tl: Timeline) -> Timeline:
    """Delete the active files of instants a killed archival archived already; archived
    again, they would be in the archive twice.

    Two crashes leave such instants: one while deleting what was archived (requested and
    inflight first, completed last), leaving completed instants with no other state file;
    and, on timeline layout 2, one right after the LSM snapshot was published (``_version_``
    written), before any active file went: every archived instant is then still complete on
    the active timeline, and a retry -- after more writes, with a larger batch -- would
    archive them again into a new level-0 file (issue 35, F5). Such instants are not newer
    than the snapshot's newest instant. The archive itself is read only when a suspect
    exists (savepointed commits left before an archived range are suspects too, and stay:
    the archive does not hold them)."""
    pending_states = {i.timestamp for i in tl.all_instants if not is_completed(i)}
    newest = _newest_archived(table)
    suspects = [i for i in tl.instants if is_completed(i) and (
        i.timestamp not in pending_states or (newest is not None and i.timestamp <= newest))]
    if not suspects:
        return tl
    archived = {i.timestamp for i in table.archived_timeline().instants if is_completed(i)}
    done = [i for i in suspects if i.timestamp in archived]
    _delete_archived_instants(table, done, tl.all_instants)
    return table.reload_timeline() if done else tl


def _delete_archived_instants(table: HoodieTable, chosen: Sequence[Instant], all_files: Sequence[Instant]) -> list[str]:
    """What follows an archive write: the archived writes' markers (Hudi deletes
    ``.hoodie/.temp/<ts>``) and compaction plans kept in ``.aux``, then every state file of
    the archived instants, requested and inflight first, completed last (a crash in between
    leaves nothing archived looking pending). Returns the instant files deleted."""
    timeline_dir = table.format.timeline_writer(table.storage, table.base_path).meta_path
    for inst in chosen:
        mk.delete_marker_dir(table.storage, table.base_path, inst.timestamp)
        if inst.action in (Action.COMMIT, Action.DELTA_COMMIT):
            table.storage.delete(table.storage.join(table.aux_path, f"{inst.timestamp}.compaction.requested"))
    deleted = []
    for f in deletion_order(state_files_of(chosen, all_files)):
        crash_point("archive.delete")
        if table.storage.delete(table.storage.join(timeline_dir, f.file_name)):
            deleted.append(f.file_name)
    return deleted


def _archive(table: HoodieTable, settings: ArchiveSettings, data_table_earliest: str | None = None) -> dict[str, Any]:
    started = time.time()
    fmt = table.format
    merged = 0 if fmt.archives_to_lsm else recover_merge(table)
    tl = _finish_killed_deletions(table, table.reload_timeline())
    ctx = dataclasses.replace(archive_context(table, tl), data_table_earliest=data_table_earliest)
    chosen = instants_to_archive(tl.instants, settings, ctx, rules_for(fmt))
    if not chosen:
        merge = 0 if fmt.archives_to_lsm else merge_archive_files_if_needed(table, settings)
        reason = nothing_to_archive_reason(
            tl.instants, settings, ctx, rules_for(fmt), metadata_delta_commits_since_compaction(table),
            settings.metadata_max_delta_commits)
        return {"instant": None, "action": "archive", "reason": f"nothing to archive: {reason}",
                "merged_files": merge + merged}
    files = state_files_of(chosen, tl.all_instants)
    timeline_dir = table.format.timeline_writer(table.storage, table.base_path).meta_path

    def read(f: Instant) -> bytes:
        path = table.storage.join(timeline_dir, f.file_name)
        return table.storage.read_bytes(path) if table.storage.exists(path) else b""

    crash_point("archive.before_write")
    if fmt.archives_to_lsm:
        lsm = LsmTimelineWriter(table.storage, table.history_path, settings.lsm)
        records = lsm_records(chosen, files, read)
        name = lsm.write(records)
        archive_file = table.storage.uri(table.storage.join(table.history_path, name) if name else table.history_path)
        written = len(records)
    else:
        entries = archive_entries(files, read)
        archive_file = table.storage.uri(write_archive_entries(table, entries, settings.batch))
        written = len(entries)
    crash_point("archive.after_write")
    deleted = _delete_archived_instants(table, chosen, tl.all_instants)
    # after the active files are gone, as Hudi: merge small archive logs (0.14) or compact
    # and clean the LSM timeline's layers (1.x)
    compacted: list[str] = []
    merge = 0
    if fmt.archives_to_lsm:
        compacted = lsm.compact_and_clean()
    else:
        merge = merge_archive_files_if_needed(table, settings)
    table.reload_timeline()
    return {
        "instant": chosen[-1].timestamp, "action": "archive", "state": "completed",
        "archived_instants": [i.timestamp for i in chosen], "archived": len(chosen),
        "entries": written, "files_deleted": len(deleted), "archive_file": archive_file,
        "merged_files": merge + merged, "compacted_files": compacted, "seconds": round(time.time() - started, 3),
    }


def archive_entries(files: Sequence[Instant], read: Callable[[Instant], bytes]) -> list[dict[str, Any]]:
    """Hudi 0.14: one ``HoodieArchivedMetaEntry`` per instant file, every state."""
    entries = []
    for f in sorted(files, key=lambda i: i.sort_key):
        plan = None
        if f.action == Action.COMPACTION and f.state == State.INFLIGHT:
            plan = read(Instant(f.timestamp, Action.COMPACTION, State.REQUESTED)) or None
        entries.append(archive_entry(f, read(f), plan))
    return entries


def lsm_record(done: Instant, files: Sequence[Instant], read: Callable[[Instant], bytes]) -> LsmRecord:
    """Hudi 1.x's MetadataConversionUtils.createLSMTimelineInstant: one row per completed
    action. ``metadata`` is the completed file's bytes (absent when empty); ``plan`` depends
    on the pending action: a clean's plan, a compaction's or log compaction's plan, a
    replacecommit's or clustering's requested metadata, or its inflight bytes when those
    are not empty; other actions have none."""
    requested = next((f for f in files if f.is_requested), None)
    inflight = next((f for f in files if f.is_inflight), None)
    pending = requested or inflight
    plan: bytes | None = None
    if pending is not None:
        if pending.action == Action.CLEAN:
            plan = read(pending)
        elif pending.action in (Action.COMPACTION, Action.LOG_COMPACTION):
            plan = read(Instant(done.timestamp, pending.action, State.REQUESTED))
        elif pending.action in (Action.REPLACE_COMMIT, Action.CLUSTERING):
            plan = (read(requested) if requested is not None else b"") or None
            plan = (read(inflight) if inflight is not None else b"") or plan
    return LsmRecord(done.timestamp, done.completion_time, done.action, read(done) or None, plan)


def lsm_records(chosen: Sequence[Instant], files: Sequence[Instant],
                read: Callable[[Instant], bytes]) -> list[LsmRecord]:
    """The LSM rows of the chosen completed instants, by instant time."""
    out = []
    for done in sorted(chosen, key=lambda i: i.sort_key):
        own = [f for f in files if f.timestamp == done.timestamp and f.completed().action == done.action]
        completed = next((f for f in own if f.is_completed), done)
        out.append(lsm_record(completed, own, read))
    return out


# ---------------------------------------------------------------- archive file merging
def _archive_files(table: HoodieTable) -> list[Any]:

    folder = _archive_dir(table)
    if not table.storage.exists(folder):
        return []
    out = []
    for st in table.storage.list_dir(folder):
        parsed = parse_log_file_name(st.name) if not st.is_dir else None
        if parsed is not None and parsed.ext == ARCHIVE_EXT and parsed.file_id == ARCHIVE_FILE_ID:
            out.append((parsed.version, st))
    return [st for _, st in sorted(out, key=lambda x: x[0])]


def recover_merge(table: HoodieTable) -> int:
    """Finish or undo an interrupted archive-file merge (Hudi's verifyLastMergeArchiveFilesIfNecessary).

    If every candidate still exists the merged file may be partial: delete it and the plan.
    If some candidates are gone the merged file was complete: delete the rest and the plan.
    """

    folder = _archive_dir(table)
    plan_path = table.storage.join(folder, MERGE_PLAN_FILE)
    if not table.storage.exists(plan_path):
        return 0
    plan = deserialize_plan("HoodieMergeArchiveFilePlan", table.storage.read_bytes(plan_path))
    candidates = [table.storage.join(folder, n.rsplit("/", 1)[-1]) for n in plan.get("candidate") or []]
    merged = table.storage.join(folder, (plan.get("mergedArchiveFileName") or "").rsplit("/", 1)[-1])
    if all(table.storage.exists(c) for c in candidates):
        table.storage.delete(merged)
    else:
        for c in candidates:
            table.storage.delete(c)
    table.storage.delete(plan_path)
    return 1


def merge_archive_files_if_needed(table: HoodieTable, settings: ArchiveSettings) -> int:
    """Merge the newest run of small archive files into one (hoodie.archive.merge.*).

    Returns how many files were merged (0 when disabled, storage cannot append, or too few).
    """

    if not settings.merge_enable or not flag(table.storage, "supports_append"):
        return 0
    limit, batch = settings.merge_small_file_limit, settings.merge_files_batch
    files = _archive_files(table)
    candidates = []
    for st in reversed(files):
        if st.size >= limit:
            break
        candidates.append(st)
    candidates.reverse()
    if len(candidates) < batch:
        return 0
    folder = _archive_dir(table)

    next_version = max(parse_log_file_name(st.name).version for st in files) + 1
    merged_name = log_file_name(ARCHIVE_FILE_ID, "", next_version, ARCHIVE_WRITE_TOKEN, ARCHIVE_EXT)
    plan = {"version": 1, "candidate": [st.name for st in candidates], "mergedArchiveFileName": merged_name}
    plan_path = table.storage.join(folder, MERGE_PLAN_FILE)
    table.storage.write_bytes(plan_path, serialize_plan("HoodieMergeArchiveFilePlan", plan))
    # A log file is a sequence of self-delimiting blocks, so the merged file is the
    # candidates' blocks back to back; written atomically, then the candidates go.
    merged_path = table.storage.join(folder, merged_name)
    table.storage.write_bytes(merged_path, b"".join(table.storage.read_bytes(st.path) for st in candidates))
    for st in candidates:
        table.storage.delete(st.path)
    table.storage.delete(plan_path)
    return len(candidates)
