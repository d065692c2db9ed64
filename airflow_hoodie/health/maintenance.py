"""Which table services are due under the table's own settings, each with its reason.

The rules are the ones the services themselves apply, not new ones: compaction's trigger
strategy (:func:`~airflow_hoodie.actions.compaction.compaction_due`), the archival rules
(:mod:`~airflow_hoodie.actions.archive_rules`, with :mod:`archive_reasons` saying why not),
Hudi's clean trigger (``hoodie.clean.max.commits`` completed commits since the last clean,
with commits beyond the cleaner's retention) and its inline clustering trigger
(``hoodie.clustering.inline.max.commits``). Services an operator would run on a schedule
can instead wait for these flags.
"""

from __future__ import annotations

from typing import Any, Sequence

from airflow_hoodie.actions.archive_reasons import nothing_to_archive_reason
from airflow_hoodie.actions.archive_rules import (
    ArchiveContext,
    ArchiveRules,
    instants_to_archive,
)
from airflow_hoodie.actions.clean import earliest_commit_to_retain
from airflow_hoodie.actions.compaction import compaction_due
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.clean import COMMITS_RETAINED
from airflow_hoodie.settings.archive import ArchiveSettings
from airflow_hoodie.settings.clean import CleanSettings
from airflow_hoodie.settings.compaction import CompactionSettings
from airflow_hoodie.table.timeline.instant import Action, Instant
from airflow_hoodie.table.timeline.instant_view import InstantView

CLEAN_MAX_COMMITS = "hoodie.clean.max.commits"
CLUSTERING_MAX_COMMITS = "hoodie.clustering.inline.max.commits"


def _commits_after(views: Sequence[InstantView], kind: str) -> int:
    last = max((v.timestamp for v in views if v.kind == kind and v.state == "COMPLETED"), default="")
    return sum(1 for v in views if v.state == "COMPLETED" and v.kind in ("commit", "deltacommit", "replacecommit")
               and v.timestamp > last)


def maintenance_due(instants: Sequence[Instant], views: Sequence[InstantView], config: HoodieConfig, is_mor: bool,
                    now_ts: str, archive_rules: ArchiveRules, archive_context: ArchiveContext,
                    metadata_delta_commits: int | None, metadata_max_delta_commits: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending = {v.kind for v in views if v.state != "COMPLETED"}
    if is_mor:
        if "compaction" in pending:
            out.append({"service": "compaction", "due": False, "reason": "a compaction plan is pending: execute it"})
        else:
            decision = compaction_due(instants, CompactionSettings.from_config(config), now_ts)
            out.append({"service": "compaction", "due": decision.due, "reason": decision.reason})
    since_clustering = _commits_after(views, "clustering")
    every = int(config.get(CLUSTERING_MAX_COMMITS) or 4)
    out.append({"service": "clustering", "due": since_clustering >= every and "clustering" not in pending,
                "reason": f"{since_clustering} commits since the last clustering ({CLUSTERING_MAX_COMMITS}={every})"
                + ("; a clustering plan is pending" if "clustering" in pending else "")})
    out.append(_clean_due(instants, views, config))
    out.append(_archival_due(instants, config, archive_rules, archive_context, metadata_delta_commits,
                             metadata_max_delta_commits))
    return out


def _clean_due(instants: Sequence[Instant], views: Sequence[InstantView], config: HoodieConfig) -> dict[str, Any]:
    since = _commits_after(views, "clean")
    every = int(config.get(CLEAN_MAX_COMMITS) or 1)
    settings = CleanSettings.from_config(config)
    policy = settings.policy
    latest = instants[-1].timestamp if instants else None
    earliest = earliest_commit_to_retain(instants, policy, settings.commits_retained, settings.hours_retained, latest)
    retention = f"{COMMITS_RETAINED}={settings.commits_retained}"
    if since < every:
        return {"service": "clean", "due": False,
                "reason": f"{since} commits since the last clean ({CLEAN_MAX_COMMITS}={every})"}
    if policy != "KEEP_LATEST_FILE_VERSIONS" and earliest is None:
        return {"service": "clean", "due": False,
                "reason": f"{policy}: every commit is within the retention ({retention})"}
    at = f", retaining from {earliest.timestamp}" if earliest is not None else ""
    return {"service": "clean", "due": True,
            "reason": f"{since} commits since the last clean ({CLEAN_MAX_COMMITS}={every}); {policy}{at}"}


def _archival_due(instants: Sequence[Instant], config: HoodieConfig, rules: ArchiveRules, ctx: ArchiveContext,
                  metadata_delta_commits: int | None, metadata_max_delta_commits: int) -> dict[str, Any]:
    settings = ArchiveSettings.from_config(config)
    chosen = instants_to_archive(instants, settings, ctx, rules)
    if chosen:
        commits = sum(1 for i in chosen if i.action in Action.COMMITS)
        return {"service": "archival", "due": True,
                "reason": f"{len(chosen)} completed instants may be archived ({commits} commits)"}
    return {"service": "archival", "due": False,
            "reason": nothing_to_archive_reason(instants, settings, ctx, rules, metadata_delta_commits,
                                                metadata_max_delta_commits)}
