"""Which completed instants an archival may move off the active timeline: Hudi's selection
rules as pure functions of the instants, the settings and a few timeline facts.

Table version 6 follows Hudi 0.14's HoodieTimelineArchiver, rule for rule: a reader of the
table (ours, Hudi's, hudi-rs) trusts the active timeline to hold every commit whose files
still exist. ``hoodie.keep.min/max.commits``, raised where the cleaner keeps more
(ArchivalUtils.getMinAndMaxInstantsToKeep), apply per clean/rollback action and to the
completed commits; commits are archived only below every bound that still needs them: the
commit before the oldest pending write, the first savepoint (unless
``hoodie.archive.beyond.savepoint``), on MOR the delta commits the compaction trigger still
counts, the replacecommits whose replaced files the cleaner has not removed yet, and the
metadata table's latest compaction. Versions 8 and 9 select as Hudi 1.x's
TimelineArchiverV2, with the differences named in :class:`ArchiveRules`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from airflow_hoodie.actions.clean import earliest_commit_to_retain
from airflow_hoodie.actions.service_common import (
    is_completed,
    is_pending,
)
from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.settings.archive import ArchiveSettings
from airflow_hoodie.table.table_format import TableFormat
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    State,
    parse_instant_time,
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
    table's format names the rules (:func:`rules_for`)."""

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


#: the rules of each archiver a table format names (``TableFormat.archival_rules``)
_RULES = {"0.14": RULES_0_14, "1.x": RULES_1_X}


def rules_for(fmt: TableFormat) -> ArchiveRules:
    """The archival rules of a table of format ``fmt`` (its timeline layout's archiver)."""
    return _RULES[fmt.archival_rules]


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
