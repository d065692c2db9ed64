"""Why an archival archived nothing, in the rule's own words and numbers.

"Nothing to archive" on a young table is normal; on a table whose active timeline keeps
growing it is a symptom: a pending write or clustering, a savepoint, the compaction trigger,
or a metadata table that has not compacted holds every commit back. Operators used to find
out by reading Hudi's archiver. Each bound :func:`~airflow_hoodie.actions.archive_rules.commits_to_archive`
applies is evaluated again here and named when it stops the oldest commit from going.
"""

from __future__ import annotations

from typing import Sequence

from airflow_hoodie.actions.archive_rules import (
    ArchiveContext,
    ArchiveRules,
    ArchiveSettings,
    first_commit_completed_after,
    min_and_max_to_keep,
    oldest_commit_to_retain_for_pending,
    oldest_instant_to_retain_for_clustering,
    oldest_instant_to_retain_for_compaction,
)
from airflow_hoodie.actions.service_common import is_completed, is_pending
from airflow_hoodie.config_keys.archive import MAX_COMMITS, MIN_COMMITS
from airflow_hoodie.config_keys.compaction import MAX_DELTA_COMMITS
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_FOLDER,
    METADATA_PARTITIONS,
)
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action, Instant
from airflow_hoodie.table.timeline.timeline import Timeline

_PENDING_TAIL = "commits from the one it started on stay until it completes or is rolled back"


def nothing_to_archive_reason(instants: Sequence[Instant], s: ArchiveSettings, ctx: ArchiveContext,
                              rules: ArchiveRules, metadata_delta_commits: int | None = None,
                              metadata_max_delta_commits: int | None = None) -> str:
    """The rule (and its numbers) that left every completed instant on the active timeline.

    ``metadata_delta_commits``: the metadata table's delta commits since its own latest
    compaction, which fence the data table's archival until that table compacts."""
    ordered = sorted(instants, key=lambda i: i.sort_key)
    commits = [i for i in ordered if i.action in Action.COMMITS and is_completed(i)]
    min_keep, max_keep = min_and_max_to_keep(ordered, s)
    raised = f", raised to {max_keep} by the cleaner's retention" if max_keep != s.max_commits else ""
    blockers = _blockers(ordered, s, ctx, rules, metadata_delta_commits, metadata_max_delta_commits)
    if len(commits) <= max_keep:
        # a pending write holds the cleaner's earliest commit to retain back, which raises the bounds
        pending = [why for bound, why in blockers if why.endswith(_PENDING_TAIL)] if raised else []
        return (f"{len(commits)} completed commits on the active timeline; archival starts above "
                f"{MAX_COMMITS}={s.max_commits}{raised} and then keeps {MIN_COMMITS}={s.min_commits}"
                + (f" ({min_keep} with the cleaner's retention)" if raised else "")
                + "".join(f"; {why}" for why in pending))
    oldest = commits[0].timestamp
    holding = [why for bound, why in blockers if bound is None or bound <= oldest]
    head = f"{len(commits)} completed commits (over {MAX_COMMITS}={max_keep}), but the oldest, {oldest}, must stay: "
    holding = holding or [why for _, why in blockers]
    return head + ("; ".join(holding) if holding else "the cleaner's retention needs it")


def metadata_delta_commits_since_compaction(table: HoodieTable) -> int | None:
    """Completed delta commits of the table's metadata table after its latest compaction
    (None without one): the lag that fences the data table's archival."""
    if not (table.config.get(METADATA_PARTITIONS) or "").strip():
        return None
    mdt = Timeline.load(table.storage, Storage.join(table.base_path, ".hoodie", METADATA_FOLDER))
    done = [i for i in mdt.instants if is_completed(i)]
    last = max((i.timestamp for i in done if i.action == Action.COMMIT), default="")
    return sum(1 for i in done if i.action == Action.DELTA_COMMIT and i.timestamp > last)


def _blockers(ordered: Sequence[Instant], s: ArchiveSettings, ctx: ArchiveContext, rules: ArchiveRules,
              mdt_deltas: int | None, mdt_max: int | None) -> list[tuple[str | None, str]]:
    """(bound, reason) for each rule that keeps commits from ``bound`` on; a None bound keeps all."""
    out: list[tuple[str | None, str]] = []
    pending = next((i for i in ordered if i.action in Action.WRITE and is_pending(i)), None)
    if pending is not None:
        out.append((oldest_commit_to_retain_for_pending(ordered),
                    f"{pending.action} {pending.timestamp} is pending ({pending.state.name.lower()}); "
                    + _PENDING_TAIL))
    clustering = oldest_instant_to_retain_for_clustering(
        ordered, ctx, s.cleaner_policy if rules.clean_savepoint_guard else None)
    if clustering is not None:
        out.append((clustering, f"replacecommit {clustering} stays until a clean removed the file groups it "
                                "replaced (run the clean first)"))
    if ctx.has_metadata_table:
        lag = (f" ({mdt_deltas} delta commits since it last compacted; it compacts after "
               f"hoodie.metadata.compact.max.delta.commits={mdt_max})") if mdt_deltas is not None else ""
        if ctx.metadata_latest_compaction is None:
            out.append((None, f"the metadata table has not compacted yet{lag}; nothing is archived before its "
                              "first compaction"))
        elif rules.metadata_fence_by_completion:
            # Hudi 1.x fences by completion time: a commit requested before the metadata
            # table's compaction but completed after it stays too, so naming the compaction's
            # instant time alone read as if an older commit were held for no reason
            fence = ctx.metadata_latest_compaction
            commits = [i for i in ordered if i.action in Action.COMMITS and is_completed(i)]
            out.append((first_commit_completed_after(commits, fence),
                        f"the metadata table's latest compaction is {fence}; commits that completed after it "
                        f"stay{lag}"))
        else:
            out.append((ctx.metadata_latest_compaction,
                        f"the metadata table's latest compaction is {ctx.metadata_latest_compaction}; commits "
                        f"after it stay{lag}"))
    if ctx.is_mor and s.compaction_trigger in ("NUM_COMMITS", "NUM_AND_TIME"):
        bound = oldest_instant_to_retain_for_compaction(ordered, s.max_delta_commits, rules.compaction_by_completion)
        if bound is not None:
            out.append((bound, f"the delta commits since the last compaction stay for its trigger "
                               f"({MAX_DELTA_COMMITS}={s.max_delta_commits}): from {bound} on"))
    savepoints = [i.timestamp for i in ordered if i.action == Action.SAVEPOINT and is_completed(i)]
    if savepoints and not s.beyond_savepoint:
        out.append((savepoints[0], f"savepoint {savepoints[0]}: commits from it on stay "
                                   "(hoodie.archive.beyond.savepoint=false)"))
    if ctx.data_table_earliest is not None:
        out.append((ctx.data_table_earliest, f"the data table's earliest commit or pending instant "
                                             f"{ctx.data_table_earliest} bounds the metadata table's archival"))
    return out
