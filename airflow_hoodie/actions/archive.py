"""Archival: move old instants from the active timeline into ``.hoodie/archived``.

Selection follows Hudi's HoodieTimelineArchiver (0.14): completed clean and rollback
instants beyond ``hoodie.keep.max.commits`` per action down to ``hoodie.keep.min.commits``;
completed commits only when there are more than the max, only older than every bound
that still needs them (oldest pending compaction/clustering, oldest inflight write, the
first savepoint unless ``hoodie.archive.beyond.savepoint``, for MOR the earliest delta
commit not yet compacted, and the clustering bound derived from the latest clean's
``earliestCommitToRetain``), leaving at least the min. A batch smaller than
``hoodie.commits.archival.batch`` is not archived. Every state file of a chosen instant
is written as a ``HoodieArchivedMetaEntry`` in Avro data blocks to
``.hoodie/archived/.commits_.archive.N_1-0-1``; then requested/inflight files are deleted
before the completed ones, so a crash never makes a completed action look pending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from airflow_hoodie.actions.service_common import is_completed, is_pending
from airflow_hoodie.config import ConfigKey, HoodieConfig, register
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.instant import Action, Instant

MIN_COMMITS = "hoodie.keep.min.commits"
MAX_COMMITS = "hoodie.keep.max.commits"
BATCH = "hoodie.commits.archival.batch"
BEYOND_SAVEPOINT = "hoodie.archive.beyond.savepoint"
MERGE_ENABLE = "hoodie.archive.merge.enable"
MERGE_SMALL_FILE_LIMIT = "hoodie.archive.merge.small.file.limit.bytes"
MERGE_FILES_BATCH = "hoodie.archive.merge.files.batch.size"

register(
    ConfigKey(MIN_COMMITS, "20", "Fewest instants left on the active timeline"),
    ConfigKey(MAX_COMMITS, "30", "Archive once the active timeline holds more than this many commits"),
    ConfigKey(BATCH, "10", "Instants archived per batch"),
    ConfigKey(BEYOND_SAVEPOINT, "false", "Archive past savepoints, keeping only the savepointed commits"),
    ConfigKey(MERGE_ENABLE, "false", "Merge small archive files"),
    ConfigKey(MERGE_SMALL_FILE_LIMIT, str(20 * 1024 * 1024), "Archive files smaller than this are merged"),
    ConfigKey(MERGE_FILES_BATCH, "10", "Merge once this many small archive files exist"),
    ConfigKey("hoodie.archive.automatic", "true"),
    ConfigKey("hoodie.archive.async", "false"),
)


@dataclass(frozen=True)
class ArchiveSettings:
    min_commits: int
    max_commits: int
    batch: int
    beyond_savepoint: bool

    @classmethod
    def from_config(cls, config: HoodieConfig) -> "ArchiveSettings":
        validate_archive_config(config)
        return cls(config.get_int(MIN_COMMITS), config.get_int(MAX_COMMITS), config.get_int(BATCH),
                   config.get_bool(BEYOND_SAVEPOINT))


def validate_archive_config(config: HoodieConfig) -> None:
    """Hudi's write-config checks: max > min > cleaner.commits.retained."""
    from airflow_hoodie.actions.clean import COMMITS_RETAINED

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
    #: earliestCommitToRetain of the latest completed clean, if any clean exists
    latest_clean_earliest_retain: str | None = None
    has_completed_clean: bool = False
    #: timestamps of completed replacecommits that are clustering (not insert_overwrite)
    clustering_replace_ts: frozenset[str] | None = None


def _sorted(instants: Sequence[Instant]) -> list[Instant]:
    return sorted(instants, key=lambda i: i.sort_key)


def clean_and_rollback_to_archive(instants: Sequence[Instant], s: ArchiveSettings) -> list[Instant]:
    out: list[Instant] = []
    for action in (Action.CLEAN, Action.ROLLBACK):
        done = [i for i in _sorted(instants) if i.action == action and is_completed(i)]
        if len(done) > s.max_commits:
            out.extend(done[: len(done) - s.min_commits])
    return out


def earliest_uncompacted_delta_commit(instants: Sequence[Instant]) -> str | None:
    """MOR bound: first completed delta commit after the latest completed compaction.

    Without any compaction yet, the first delta commit (nothing of it is compacted).
    """
    ordered = _sorted(instants)
    compactions = [i.timestamp for i in ordered if i.action == Action.COMMIT and is_completed(i)]
    deltas = [i.timestamp for i in ordered if i.action == Action.DELTA_COMMIT and is_completed(i)]
    if compactions:
        after = [d for d in deltas if d > compactions[-1]]
        return after[0] if after else None
    return deltas[0] if deltas else None


def clustering_retain_bound(instants: Sequence[Instant], ctx: ArchiveContext) -> str | None:
    """Hudi's getEarliestInstantToRetainForClustering: a replacecommit stays active until
    the clean has removed the files it replaced, and nothing from just before an inflight
    clustering is archived."""
    ordered = _sorted(instants)
    replaces = [i for i in ordered if i.action == Action.REPLACE_COMMIT and is_completed(i)
                and (ctx.clustering_replace_ts is None or i.timestamp in ctx.clustering_replace_ts)]
    bound: str | None = None
    if ctx.has_completed_clean:
        low = ctx.latest_clean_earliest_retain or ""
        first = next((r.timestamp for r in replaces if r.timestamp >= low), None)
        bound = first
    elif replaces:
        bound = replaces[0].timestamp
    pending_cluster = next((i for i in ordered if i.action == Action.REPLACE_COMMIT and is_pending(i)), None)
    if pending_cluster is not None:
        before = [i.timestamp for i in ordered if i.action in Action.COMMITS and is_completed(i)
                  and i.timestamp < pending_cluster.timestamp]
        candidate = before[-1] if before else pending_cluster.timestamp
        bound = candidate if bound is None else min(bound, candidate)
    return bound


def commits_to_archive(instants: Sequence[Instant], s: ArchiveSettings, ctx: ArchiveContext) -> list[Instant]:
    ordered = _sorted(instants)
    commits = [i for i in ordered if i.action in Action.COMMITS and is_completed(i)]
    if len(commits) <= s.max_commits:
        return []
    bounds: list[str] = []
    pending_cc = next((i.timestamp for i in ordered if is_pending(i)
                       and i.action in (Action.COMPACTION, Action.REPLACE_COMMIT, Action.LOG_COMPACTION)), None)
    if pending_cc:
        bounds.append(pending_cc)
    inflight_write = next((i.timestamp for i in ordered if is_pending(i)
                           and i.action in (Action.COMMIT, Action.DELTA_COMMIT)), None)
    if inflight_write:
        bounds.append(inflight_write)
    savepoints = [i.timestamp for i in ordered if i.action == Action.SAVEPOINT and is_completed(i)]
    if savepoints and not s.beyond_savepoint:
        bounds.append(savepoints[0])
    if ctx.is_mor:
        delta_bound = earliest_uncompacted_delta_commit(ordered)
        if delta_bound:
            bounds.append(delta_bound)
    cluster_bound = clustering_retain_bound(ordered, ctx)
    if cluster_bound:
        bounds.append(cluster_bound)
    limit = min(bounds) if bounds else None
    savepointed = set(savepoints)
    eligible = [c for c in commits if (limit is None or c.timestamp < limit)
                and not (s.beyond_savepoint and c.timestamp in savepointed)]
    return eligible[: max(len(commits) - s.min_commits, 0)]


def instants_to_archive(instants: Sequence[Instant], s: ArchiveSettings, ctx: ArchiveContext) -> list[Instant]:
    """Completed instants to archive (clean/rollback first, then commits), oldest first;
    empty when fewer than ``hoodie.commits.archival.batch``."""
    chosen = clean_and_rollback_to_archive(instants, s) + commits_to_archive(instants, s, ctx)
    chosen = sorted(set(chosen), key=lambda i: i.sort_key)
    if len(chosen) < s.batch:
        return []
    return chosen


def state_files_of(completed: Sequence[Instant], all_files: Sequence[Instant]) -> list[Instant]:
    """Every instant file (any state) belonging to the chosen completed instants.

    A completed ``commit`` produced by a compaction also owns the ``compaction``
    requested/inflight files with the same timestamp.
    """
    keys = {(c.timestamp, c.action) for c in completed}
    out = []
    for f in all_files:
        action = Action.COMMIT if f.action == Action.COMPACTION else (
            Action.DELTA_COMMIT if f.action == Action.LOG_COMPACTION else f.action)
        if (f.timestamp, action) in keys:
            out.append(f)
    return out


def deletion_order(files: Sequence[Instant]) -> list[Instant]:
    """Requested and inflight files first, completed last (a crash never leaves an
    archived action looking pending)."""
    return sorted(files, key=lambda i: (is_completed(i), i.sort_key))
