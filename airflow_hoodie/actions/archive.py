"""Archival: move old instants from the active timeline into ``.hoodie/archived``.

Selection follows Hudi 0.14's HoodieTimelineArchiver, rule for rule, because a reader
of the table (ours, Hudi's, hudi-rs) trusts the active timeline to hold every commit
whose files still exist: ``hoodie.keep.min/max.commits``, raised where the cleaner keeps
more (ArchivalUtils.getMinAndMaxInstantsToKeep), apply per clean/rollback action and to
the completed commits; commits are archived only below every bound that still needs
them: the commit before the oldest pending write, the first savepoint (unless
``hoodie.archive.beyond.savepoint``), on MOR the delta commits the compaction trigger
still counts, the replacecommits whose replaced files the cleaner has not removed yet,
and the metadata table's latest compaction (a metadata table's own timeline is archived by
the same rules, behind its data table's earliest instant: :func:`archive_metadata_table`).
``hoodie.commits.archival.batch`` only sizes the records per archive block. Every state file of a chosen instant is written as a
``HoodieArchivedMetaEntry`` in Avro data blocks to
``.hoodie/archived/.commits_.archive.N_1-0-1``; then requested/inflight files are
deleted before the completed ones, so a crash never makes a completed action look
pending.

Table versions 8 and 9 (timeline layout 2) archive as Hudi 1.x's TimelineArchiverV2: the
same bounds, with the differences in :class:`ArchiveRules` (cleans and rollbacks go only
with the commits around them; the metadata-table fence compares completion times). Each
chosen action becomes one ``HoodieLSMTimelineInstant`` row in a level-0 parquet file of
the LSM timeline (:mod:`lsm_timeline_writer`), published by a new manifest before any
active file is deleted; the LSM layers are compacted and cleaned afterwards.
"""
from __future__ import annotations

import time
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from airflow_hoodie.actions.clean import (
    COMMITS_RETAINED,
    HOURS_RETAINED,
    earliest_commit_to_retain,
    policy_of,
)
from airflow_hoodie.actions.compaction import MAX_DELTA_COMMITS, TRIGGER_STRATEGY
from airflow_hoodie.actions.service_common import (
    crash_point,
    deserialize_plan,
    flag,
    is_completed,
    is_pending,
    serialize_plan,
)
from airflow_hoodie.actions.transaction.service_transaction import (
    transaction_manager_for,
)
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.archive import (
    BATCH,
    BEYOND_SAVEPOINT,
    MAX_COMMITS,
    MERGE_ENABLE,
    MERGE_FILES_BATCH,
    MERGE_SMALL_FILE_LIMIT,
    MIN_COMMITS,
)
from airflow_hoodie.config_keys.metadata_table import COMPACT_MAX_DELTA_COMMITS as METADATA_COMPACT_MAX_DELTA_COMMITS
from airflow_hoodie.errors import HoodieConfigError, HoodieTimelineError
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
from airflow_hoodie.table.metadata_table.metadata_compaction import (
    CLEANER_COMMITS_RETAINED as METADATA_CLEANER_COMMITS_RETAINED,
)
from airflow_hoodie.table.metadata_table.removal import (
    METADATA_FOLDER,
    METADATA_PARTITIONS,
)
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    State,
    parse_instant_time,
)
from airflow_hoodie.table.timeline.lsm_timeline import LsmRecord
from airflow_hoodie.table.timeline.lsm_timeline_writer import LsmSettings, LsmTimelineWriter
from airflow_hoodie.table.timeline.timeline import Timeline



@dataclass(frozen=True)
class ArchiveSettings:
    """The write config the archiver reads: its own keys plus the cleaning and compaction
    settings that Hudi's archiver takes its bounds from."""

    min_commits: int
    max_commits: int
    batch: int
    beyond_savepoint: bool
    cleaner_policy: str = "KEEP_LATEST_COMMITS"
    cleaner_commits_retained: int = 10
    cleaner_hours_retained: int = 24
    compaction_trigger: str = "NUM_COMMITS"
    max_delta_commits: int = 5

    @classmethod
    def from_config(cls, config: HoodieConfig) -> "ArchiveSettings":

        validate_archive_config(config)
        return cls(config.get_int(MIN_COMMITS), config.get_int(MAX_COMMITS), config.get_int(BATCH),
                   config.get_bool(BEYOND_SAVEPOINT), policy_of(config), config.get_int(COMMITS_RETAINED),
                   config.get_int(HOURS_RETAINED), (config.get(TRIGGER_STRATEGY) or "NUM_COMMITS").upper(),
                   config.get_int(MAX_DELTA_COMMITS))


def validate_archive_config(config: HoodieConfig) -> None:
    """Hudi's write-config checks: max > min > cleaner.commits.retained."""

    min_c, max_c = config.get_int(MIN_COMMITS), config.get_int(MAX_COMMITS)
    retained = config.get_int(COMMITS_RETAINED)
    if min_c <= 0:
        raise HoodieConfigError(f"{MIN_COMMITS}={min_c} must be positive.")
    if max_c <= min_c:
        raise HoodieConfigError(
            f"Increase {MAX_COMMITS}={max_c} to be greater than {MIN_COMMITS}={min_c}."
        )
    if min_c <= retained:
        raise HoodieConfigError(
            f"Increase {MIN_COMMITS}={min_c} to be greater than {COMMITS_RETAINED}={retained}. "
            "Otherwise, there is risk of incremental pull missing data from few instants "
            "(the cleaner may keep file slices of commits that are no longer on the active timeline)."
        )


@dataclass(frozen=True)
class ArchiveContext:
    """Timeline facts that bound archival and need file reads to find out."""

    is_mor: bool = False
    #: the latest completed clean's instant time, if any clean completed
    latest_clean: str | None = None
    #: ``earliestInstantToRetain`` of that clean's plan; None when the plan has none
    #: (KEEP_LATEST_FILE_VERSIONS)
    latest_clean_earliest_retain: str | None = None
    #: the table lists metadata-table partitions in hoodie.properties
    has_metadata_table: bool = False
    #: the metadata table's latest completed compaction, if it has one
    metadata_latest_compaction: str | None = None
    #: the latest clean plan's ``savepointed_timestamps`` extra metadata (savepoints it kept files for)
    latest_clean_savepoints: tuple[str, ...] = ()
    #: archiving a metadata table: its data table's earliest commit or pending instant,
    #: which nothing at or after is archived (TimelineUtils.getEarliestInstantForMetadataArchival)
    data_table_earliest: str | None = None


@dataclass(frozen=True)
class ArchiveRules:
    """Where Hudi 1.x's TimelineArchiverV2 selects differently from 0.14's archiver; the
    table's timeline layout picks the rules (:func:`rules_for_layout`)."""

    #: 0.14 archives completed cleans and rollbacks by their own keep.min/max counts; 1.x
    #: archives them only with commits: those requested before the newest commit archived
    cleans_follow_commits: bool = False
    #: 0.14 keeps instants from the metadata table's latest compaction time on; 1.x keeps
    #: every commit from the first one *completed* after it (findInstantsModifiedAfterByCompletionTime)
    metadata_fence_by_completion: bool = False
    #: 1.x (ClusteringUtils.getEarliestReplacedSavepointInClean): when the latest clean kept
    #: files for a savepoint and a replacecommit lies between that savepoint and the clean's
    #: earliest instant to retain, replacecommits are kept from the savepoint on, so deleting
    #: the savepoint cannot bring replaced files back into view
    clean_savepoint_guard: bool = False
    #: 1.x slices files by completion time: a delta commit that completed after the latest
    #: compaction was requested is not in its base files and is kept until a compaction is
    #: (oldest_instant_to_retain_for_compaction)
    compaction_by_completion: bool = False


#: Hudi 0.14's HoodieTimelineArchiver (table version 6, timeline layout 1)
RULES_0_14 = ArchiveRules()
#: Hudi 1.x's TimelineArchiverV2 (table versions 8 and 9, timeline layout 2)
RULES_1_X = ArchiveRules(cleans_follow_commits=True, metadata_fence_by_completion=True, clean_savepoint_guard=True,
                         compaction_by_completion=True)


def rules_for_layout(timeline_layout: int) -> ArchiveRules:
    return RULES_1_X if timeline_layout >= 2 else RULES_0_14


def _sorted(instants: Sequence[Instant]) -> list[Instant]:
    return sorted(instants, key=lambda i: i.sort_key)


def _completed_commits(ordered: Sequence[Instant]) -> list[Instant]:
    """Hudi's completed commits timeline: commit, deltacommit, replacecommit."""
    return [i for i in ordered if i.action in Action.COMMITS and is_completed(i)]


def min_and_max_to_keep(instants: Sequence[Instant], s: ArchiveSettings) -> tuple[int, int]:
    """Hudi's ArchivalUtils.getMinAndMaxInstantsToKeep: when the cleaner needs more
    commits than ``hoodie.keep.min.commits`` (its earliest commit to retain lies further
    back, e.g. behind a pending write or by hours), both bounds move up by the difference,
    so archival never removes a commit whose files the cleaner still keeps."""

    ordered = _sorted(instants)
    commits_timeline = [i for i in ordered if i.action in Action.COMMITS]
    completed = _completed_commits(ordered)
    latest = completed[-1].timestamp if completed else None
    if latest is not None:
        try:  # Hudi parses the latest commit's time first and adjusts nothing when it cannot
            parse_instant_time(latest[:17])
        except HoodieTimelineError:
            return s.min_commits, s.max_commits
    earliest = earliest_commit_to_retain(commits_timeline, s.cleaner_policy, s.cleaner_commits_retained,
                                         s.cleaner_hours_retained, latest)
    if earliest is None:
        return s.min_commits, s.max_commits
    by_cleaning = sum(1 for c in completed if c.timestamp > earliest.timestamp) + 2
    if s.min_commits >= by_cleaning:
        return s.min_commits, s.max_commits
    return by_cleaning, by_cleaning + s.max_commits - s.min_commits


def clean_and_rollback_to_archive(instants: Sequence[Instant], min_keep: int, max_keep: int) -> list[Instant]:
    """Per action, completed cleans (rollbacks) beyond the max, down to the min."""
    out: list[Instant] = []
    for action in (Action.CLEAN, Action.ROLLBACK):
        done = [i for i in _sorted(instants) if i.action == action and is_completed(i)]
        if len(done) > max_keep:
            out.extend(done[: len(done) - min_keep])
    return out


def oldest_commit_to_retain_for_pending(ordered: Sequence[Instant]) -> str | None:
    """The greatest completed commit older than the oldest pending write (or the pending
    instant itself when no commit precedes it): a pending write must keep the commit it
    started from on the active timeline, so the timeline has no hole."""
    pending = next((i for i in ordered if i.action in Action.WRITE and is_pending(i)), None)
    if pending is None:
        return None
    before = [c.timestamp for c in _completed_commits(ordered) if c.timestamp < pending.timestamp]
    return before[-1] if before else pending.timestamp


def oldest_instant_to_retain_for_compaction(ordered: Sequence[Instant], max_delta_commits: int,
                                            by_completion: bool = False) -> str | None:
    """Hudi's CompactionUtils.getOldestInstantToRetainForCompaction: keep enough delta
    commits after the last compaction for the NUM_COMMITS trigger to count them.

    The delta commits (any state) after the latest completed commit or replacecommit, or
    all of them when there is none; with fewer than ``max_delta_commits`` the reference
    instant itself is kept, else the last ``max_delta_commits`` delta commits are.

    ``by_completion`` (timeline layout 2, where file slices follow completion times): a
    delta commit requested before the latest compaction but completed after it -- a
    metadata-table delta commit written right after the compaction its own write triggered,
    or a data-table one under optimistic concurrency -- is not in that compaction's base
    files; its log sits in the compaction's new slice. It stays on the active timeline
    until a later compaction merged it: once archived, the view would take it for an
    instant older than the compaction and leave its records (a clean's tombstones) behind
    the new base file (issue 35, F3)."""
    done = [i for i in ordered if i.action in (Action.COMMIT, Action.REPLACE_COMMIT) and is_completed(i)]
    deltas = [i for i in ordered if i.action == Action.DELTA_COMMIT]
    if done:
        reference = done[-1].timestamp
        since = [d for d in deltas if d.timestamp > reference]
    elif deltas:
        reference = deltas[0].timestamp
        since = deltas
    else:
        return None
    bound = reference if len(since) < max_delta_commits else since[len(since) - max_delta_commits].timestamp
    if by_completion and done:
        outside = [d.timestamp for d in deltas if d.timestamp < reference and not _completed_before(d, reference)]
        if outside:
            bound = min(bound, outside[0])
    return bound


def _completed_before(instant: Instant, ts: str) -> bool:
    """Whether ``instant`` completed before instant time ``ts`` (what a layout-2 compaction
    at ``ts`` merges: Hudi 1.x's ``isCompletedBefore``)."""
    return is_completed(instant) and instant.completion_time is not None and instant.completion_time < ts


def earliest_replaced_savepoint_in_clean(ordered: Sequence[Instant], ctx: ArchiveContext,
                                         cleaner_policy: str) -> str | None:
    """Hudi 1.x's getEarliestReplacedSavepointInClean: the earliest savepoint the latest clean
    kept files for, when a completed replacecommit lies between it and the clean's earliest
    instant to retain (not under KEEP_LATEST_FILE_VERSIONS)."""
    retain = ctx.latest_clean_earliest_retain
    savepoints = sorted(t for t in ctx.latest_clean_savepoints if t)
    if cleaner_policy == "KEEP_LATEST_FILE_VERSIONS" or not retain or not savepoints or retain <= savepoints[0]:
        return None
    if any(i.action == Action.REPLACE_COMMIT and is_completed(i) and savepoints[0] <= i.timestamp <= retain
           for i in ordered):
        return savepoints[0]
    return None


def oldest_instant_to_retain_for_clustering(ordered: Sequence[Instant], ctx: ArchiveContext,
                                            savepoint_guard_policy: str | None = None) -> str | None:
    """Hudi's ClusteringUtils.getOldestInstantToRetainForClustering.

    A replacecommit (clustering or insert overwrite) stays until the cleaner has removed
    the files it replaced, or the file-system view would show them again: the first
    replacecommit at or after the latest clean's ``earliestInstantToRetain``, or at or
    after the clean itself when its plan has none (KEEP_LATEST_FILE_VERSIONS); without any
    clean, the first replacecommit. An inflight replacecommit also keeps the completed
    commit before it."""
    replaces = [i for i in ordered if i.action in (Action.REPLACE_COMMIT, Action.CLUSTERING)]
    if not replaces:
        return None
    if ctx.latest_clean is not None:
        guard = (earliest_replaced_savepoint_in_clean(ordered, ctx, savepoint_guard_policy)
                 if savepoint_guard_policy is not None else None)
        low = guard or ctx.latest_clean_earliest_retain or ctx.latest_clean
        bound = next((r.timestamp for r in replaces if r.timestamp >= low), None)
    else:
        bound = replaces[0].timestamp
    inflight = next((r for r in replaces if r.state == State.INFLIGHT), None)
    if inflight is not None:
        before = [i.timestamp for i in ordered if i.action in Action.COMMITS and is_completed(i)
                  and i.timestamp < inflight.timestamp]
        if before and (bound is None or bound > before[-1]):
            bound = before[-1]
    return bound


def first_commit_completed_after(commits: Sequence[Instant], fence: str) -> str | None:
    """Hudi 1.x's metadata-table bound: the first completed commit whose completion time is
    after the metadata table's latest compaction ``fence`` (the compaction's own time aside)."""
    for c in commits:
        if c.completion_time and c.completion_time > fence and c.timestamp != fence:
            return c.timestamp
    return None


def commits_to_archive(instants: Sequence[Instant], s: ArchiveSettings, ctx: ArchiveContext,
                       min_keep: int, max_keep: int, rules: ArchiveRules = RULES_0_14) -> list[Instant]:
    """Hudi's getCommitInstantsToArchive: once more than ``max_keep`` commits are
    complete, the oldest ones below every bound, leaving ``min_keep``."""
    ordered = _sorted(instants)
    commits = _completed_commits(ordered)
    if len(commits) <= max_keep:
        return []
    bounds = [oldest_commit_to_retain_for_pending(ordered), oldest_instant_to_retain_for_clustering(
        ordered, ctx, s.cleaner_policy if rules.clean_savepoint_guard else None)]
    if rules.metadata_fence_by_completion and ctx.has_metadata_table:
        if ctx.metadata_latest_compaction is None:
            return []  # no compaction on the metadata table yet: nothing is archived
        bounds.append(first_commit_completed_after(commits, ctx.metadata_latest_compaction))
    if ctx.is_mor and s.compaction_trigger in ("NUM_COMMITS", "NUM_AND_TIME"):
        bounds.append(oldest_instant_to_retain_for_compaction(ordered, s.max_delta_commits,
                                                              rules.compaction_by_completion))
    limit = min((b for b in bounds if b is not None), default=None)
    savepoints = [i.timestamp for i in ordered if i.action == Action.SAVEPOINT and is_completed(i)]

    def archivable(c: Instant) -> bool:
        if s.beyond_savepoint:
            if c.timestamp in savepoints:
                return False
        elif savepoints and c.timestamp >= savepoints[0]:
            return False
        return limit is None or c.timestamp < limit

    return [c for c in commits if archivable(c)][: max(len(commits) - min_keep, 0)]


def clean_and_rollback_before(instants: Sequence[Instant], latest_commit: Instant | None) -> list[Instant]:
    """Hudi 1.x: the completed cleans and rollbacks requested before the newest commit
    being archived (none when no commit is), so the archived range stays contiguous."""
    if latest_commit is None:
        return []
    return [i for i in _sorted(instants) if i.action in (Action.CLEAN, Action.ROLLBACK) and is_completed(i)
            and i.timestamp < latest_commit.timestamp]


def instants_to_archive(instants: Sequence[Instant], s: ArchiveSettings, ctx: ArchiveContext,
                        rules: ArchiveRules = RULES_0_14) -> list[Instant]:
    """Completed instants to archive (clean/rollback, then commits), oldest first.

    However few qualify, they are archived: in Hudi ``hoodie.commits.archival.batch`` only
    sizes the records written per archive block. With a metadata table, nothing newer than
    its latest compaction goes (nothing at all before its first), as Hudi fences archival
    so the metadata table can still be rebuilt from the active timeline."""
    min_keep, max_keep = min_and_max_to_keep(instants, s)
    commits = commits_to_archive(instants, s, ctx, min_keep, max_keep, rules)
    if rules.cleans_follow_commits:
        chosen = clean_and_rollback_before(instants, commits[-1] if commits else None) + commits
    else:
        chosen = clean_and_rollback_to_archive(instants, min_keep, max_keep) + commits
    if ctx.has_metadata_table and not rules.metadata_fence_by_completion:
        fence = ctx.metadata_latest_compaction
        chosen = [] if fence is None else [i for i in chosen if i.timestamp < fence]
    if ctx.data_table_earliest is not None:
        chosen = [i for i in chosen if i.timestamp < ctx.data_table_earliest]
    return sorted(set(chosen), key=lambda i: i.sort_key)


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


def _archive_context(table: HoodieTable, tl: Any) -> ArchiveContext:

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
    table.prepare_for_change(config)
    with transaction_manager_for(table, config).transaction("archive the timeline"):
        return _archive(table, config)


def metadata_table_settings(config: HoodieConfig) -> ArchiveSettings:
    """The archival settings of a metadata table, as Hudi derives its write config from the
    data table's (HoodieMetadataWriteUtils): keep.min/max one above the data table's, its
    own cleaner (KEEP_LATEST_COMMITS, 20 commits) and compaction trigger, the other keys at
    their defaults."""
    defaults = HoodieConfig({})
    return ArchiveSettings(config.get_int(MIN_COMMITS) + 1, config.get_int(MAX_COMMITS) + 1,
                           defaults.get_int(BATCH), defaults.get_bool(BEYOND_SAVEPOINT), "KEEP_LATEST_COMMITS",
                           METADATA_CLEANER_COMMITS_RETAINED, defaults.get_int(HOURS_RETAINED), "NUM_COMMITS",
                           config.get_int(METADATA_COMPACT_MAX_DELTA_COMMITS))


def data_table_earliest(data_timeline: Timeline) -> str | None:
    """TimelineUtils.getEarliestInstantForMetadataArchival (not beyond savepoints): the earlier
    of the data table's first commit (any state) and its first pending instant (any action).
    Cleans and rollbacks do not count: an old one would hold the metadata timeline back."""
    first_commit = next((i.timestamp for i in data_timeline.instants if i.action in Action.COMMITS), None)
    first_pending = next((i.timestamp for i in data_timeline.instants if not is_completed(i)), None)
    found = [ts for ts in (first_commit, first_pending) if ts is not None]
    return min(found) if found else None


def archive_metadata_table(data: HoodieTable, mdt: HoodieTable, config: HoodieConfig) -> dict[str, Any] | None:
    """Archive the metadata table's own timeline, as Hudi's writer does after the metadata
    table's compaction and clean (under the data table's lock, inside its commit). Skipped
    while too few instants are completed for any rule to archive one."""
    settings = metadata_table_settings(config)
    done = [i for i in mdt.timeline.instants if is_completed(i)]
    if (sum(1 for i in done if i.action in Action.COMMITS) <= settings.max_commits
            and all(sum(1 for i in done if i.action == a) <= settings.max_commits
                    for a in (Action.CLEAN, Action.ROLLBACK))):
        return None
    earliest = data_table_earliest(Timeline.load(data.storage, data.base_path))
    if earliest is None:
        return None
    return _archive(mdt, HoodieConfig({}), settings, earliest)


def _newest_archived(table: HoodieTable) -> str | None:
    """Timeline layout 2: the newest instant time the LSM history's latest snapshot holds
    (from its manifest's file names); None on layout 1, whose archive log has no such index."""
    if table.format.timeline_layout < 2 or not table.storage.exists(table.history_path):
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


def _archive(table: HoodieTable, config: HoodieConfig, settings: ArchiveSettings | None = None,
             data_table_earliest: str | None = None) -> dict[str, Any]:
    started = time.time()
    settings = settings or ArchiveSettings.from_config(config)
    layout = table.format.timeline_layout
    merged = recover_merge(table) if layout == 1 else 0
    tl = _finish_killed_deletions(table, table.reload_timeline())
    ctx = dataclasses.replace(_archive_context(table, tl), data_table_earliest=data_table_earliest)
    chosen = instants_to_archive(tl.instants, settings, ctx, rules_for_layout(layout))
    if not chosen:
        merge = merge_archive_files_if_needed(table, config) if layout == 1 else 0
        return {"instant": None, "action": "archive", "reason": "nothing to archive under the current rules",
                "merged_files": merge + merged}
    files = state_files_of(chosen, tl.all_instants)
    timeline_dir = table.format.timeline_writer(table.storage, table.base_path).meta_path

    def read(f: Instant) -> bytes:
        path = table.storage.join(timeline_dir, f.file_name)
        return table.storage.read_bytes(path) if table.storage.exists(path) else b""

    crash_point("archive.before_write")
    if layout == 1:
        entries = archive_entries(files, read)
        archive_file = table.storage.uri(write_archive_entries(table, entries, settings.batch))
        written = len(entries)
    else:
        lsm = LsmTimelineWriter(table.storage, table.history_path, LsmSettings.from_config(config))
        records = lsm_records(chosen, files, read)
        name = lsm.write(records)
        archive_file = table.storage.uri(table.storage.join(table.history_path, name) if name else table.history_path)
        written = len(records)
    crash_point("archive.after_write")
    deleted = _delete_archived_instants(table, chosen, tl.all_instants)
    # after the active files are gone, as Hudi: merge small archive logs (0.14) or compact
    # and clean the LSM timeline's layers (1.x)
    compacted: list[str] = []
    merge = 0
    if layout == 1:
        merge = merge_archive_files_if_needed(table, config)
    else:
        compacted = lsm.compact_and_clean()
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


def merge_archive_files_if_needed(table: HoodieTable, config: HoodieConfig) -> int:
    """Merge the newest run of small archive files into one (hoodie.archive.merge.*).

    Returns how many files were merged (0 when disabled, storage cannot append, or too few).
    """

    if not config.get_bool(MERGE_ENABLE) or not flag(table.storage, "supports_append"):
        return 0
    limit = config.get_int(MERGE_SMALL_FILE_LIMIT)
    batch = config.get_int(MERGE_FILES_BATCH)
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
