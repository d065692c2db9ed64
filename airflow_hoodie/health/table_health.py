"""One table's health, as one JSON object: what an operator asks of a Hudi table before
running its services, and what a stuck service or a lagging metadata table looks like.

Read-only and Spark-free, so the Airflow plugin's API, the maintenance-due sensor's trigger,
the CLI (``airflow-hoodie health``) and each write's Asset event share it. Its storage calls
are bounded by the active timeline's length and the metadata table's files, not by the
number of partitions (the listing goes through the metadata table when the table has one):
``benchmarks/health_calls.py`` counts them.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import Any, Mapping

from airflow_hoodie.actions.archive import archive_context
from airflow_hoodie.actions.archive_reasons import (
    metadata_delta_commits_since_compaction,
)
from airflow_hoodie.actions.archive_rules import rules_for
from airflow_hoodie.actions.transaction.heartbeat import Heartbeats
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.archive import MAX_COMMITS, MIN_COMMITS
from airflow_hoodie.config_keys.locks import PROVIDER
from airflow_hoodie.config_keys.metadata_table import COMPACT_MAX_DELTA_COMMITS
from airflow_hoodie.errors import HoodieError
from airflow_hoodie.health.files import file_figures, written_rows
from airflow_hoodie.health.maintenance import maintenance_due
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.partitions import (
    METADATA_FOLDER,
    METADATA_PARTITIONS,
)
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import parse_instant_time
from airflow_hoodie.table.timeline.instant_view import (
    COMPLETED,
    InstantView,
    instant_views,
)
from airflow_hoodie.table.timeline.timeline import Timeline

SMALL_FILE_LIMIT = "hoodie.parquet.small.file.limit"
#: where the lock providers that keep a file in the table keep it
_LOCK_FILES = {"FileSystemBasedLockProvider": ".hoodie/lock", "StorageBasedLockProvider": ".hoodie/.locks/table_lock.json"}
_DATA_ACTIONS = ("commit", "deltacommit", "replacecommit")


def table_health(base_uri: str, storage_options: Mapping[str, str] | None = None,
                 config: Mapping[str, str] | None = None, rows: bool = True) -> dict[str, Any]:
    """The health object of the table at ``base_uri``; ``config``: the write settings the
    services run with (keep.min/max, cleaner and compaction settings); Hudi's defaults
    otherwise, as the table itself stores none of them. ``rows=False`` leaves the
    per-partition row counts at 0 and reads no commit file for them (an Asset event's
    compact form needs none)."""
    cfg = HoodieConfig(dict(config or {}))
    table = HoodieTable.load(base_uri, storage_options=dict(storage_options or {}) or None)
    table.use_metadata_table = True  # list as Hudi's readers do: through the metadata table when it has files
    timeline = table.timeline
    views = instant_views(timeline)
    now = time.time()
    now_ts = _now_instant(table)
    data_views = [v for v in views if v.state == COMPLETED and v.kind in _DATA_ACTIONS]
    latest = max(data_views, key=lambda v: v.checkpoint, default=None)
    mdt_lag = metadata_delta_commits_since_compaction(table)
    health: dict[str, Any] = {
        "base_path": table.base_uri,
        "table_type": table.table_type,
        "table_version": table.format.version,
        "table_name": table.config.table_name,
        "latest_commit": ({"instant": latest.timestamp, "action": latest.action,
                           "completion_time": latest.completion_time} if latest else None),
        "completed_instants": {"count": sum(1 for v in views if v.state == COMPLETED),
                               "keep_min_commits": cfg.get_int(MIN_COMMITS),
                               "keep_max_commits": cfg.get_int(MAX_COMMITS)},
        "pending": _pending(table, cfg, views, now),
        **_since_services(views, table.is_mor),
    }
    slices = table.file_system_view(timeline).latest_merged_file_slices()
    small = int(cfg.get(SMALL_FILE_LIMIT) or 104857600)
    health.update(file_figures(slices, small, written_rows(timeline) if rows else {}).as_dict())
    health["metadata_table"] = _metadata_table(table, views, mdt_lag)
    health["lock"] = _lock(table, dict(config or {}).get(PROVIDER))
    health["maintenance_due"] = maintenance_due(
        timeline.instants, views, cfg, bool(table.is_mor), now_ts, rules_for(table.format),
        archive_context(table, timeline), mdt_lag, cfg.get_int(COMPACT_MAX_DELTA_COMMITS))
    health["timeline"] = [v.to_dict() for v in views]
    health["summary"] = summary(health)
    return health


def summary(health: Mapping[str, Any]) -> str:
    """One line a person reads at a glance (the table list, the Asset event, the CLI)."""
    stuck = [p for p in health["pending"] if p["heartbeat_live"] is False]
    due = [d["service"] for d in health["maintenance_due"] if d["due"]]
    parts = [f"{health['table_type']} v{health['table_version']}",
             f"{health['completed_instants']['count']} instants",
             f"{health['file_groups']} file groups, {health['log_files']} log files"]
    if stuck:
        parts.append(f"STUCK: {', '.join(p['action'] + ' ' + p['instant'] for p in stuck)}")
    if health["metadata_table"]["enabled"] and health["metadata_table"]["lag_instants"]:
        parts.append(f"metadata table {health['metadata_table']['lag_instants']} instants behind")
    parts.append(f"due: {', '.join(due)}" if due else "nothing due")
    return "; ".join(parts)


def compact(health: Mapping[str, Any]) -> dict[str, Any]:
    """The few figures an Asset event carries (its ``extra`` must stay small)."""
    return {"summary": health["summary"], "file_groups": health["file_groups"], "log_files": health["log_files"],
            "small_file_groups": health["small_file_groups"], "pending": len(health["pending"]),
            "due": [d["service"] for d in health["maintenance_due"] if d["due"]]}


def _now_instant(table: HoodieTable) -> str:
    """Now, as an instant time of this table's timeline time zone (Hudi's default is local)."""
    zone = timezone.utc if table.config.timeline_timezone == "UTC" else None
    now = datetime.now(zone)
    return now.strftime("%Y%m%d%H%M%S") + f"{now.microsecond // 1000:03d}"


def _age_seconds(table: HoodieTable, instant_time: str, now: float) -> float | None:
    try:
        when = parse_instant_time(instant_time)
    except HoodieError:
        return None
    zone = timezone.utc if table.config.timeline_timezone == "UTC" else None
    stamp = when.replace(tzinfo=zone).timestamp() if zone else when.timestamp()
    return round(max(now - stamp, 0.0), 1)


def _pending(table: HoodieTable, cfg: HoodieConfig, views: list[InstantView], now: float) -> list[dict[str, Any]]:
    """Each requested/inflight instant; ``heartbeat_live`` false marks a writer or service
    that died (Hudi's rule: a heartbeat older than interval x tolerable misses, or none).
    A plan nobody has started (a requested compaction or clustering) has no heartbeat by
    design: it is waiting, not stuck, and shows ``heartbeat_live`` None."""
    beats = Heartbeats(table.storage, table.base_path, LockSettings.from_config(cfg))
    out = []
    for v in views:
        if v.state == COMPLETED:
            continue
        waiting_plan = v.state == "REQUESTED" and v.kind in ("compaction", "logcompaction", "clustering", "clean")
        out.append({"instant": v.timestamp, "action": v.kind, "state": v.state,
                    "age_seconds": _age_seconds(table, v.timestamp, now),
                    "heartbeat_live": None if waiting_plan else not beats.is_expired(v.timestamp)})
    return out


def _since_services(views: list[InstantView], is_mor: bool) -> dict[str, Any]:
    done = [v for v in views if v.state == COMPLETED]

    def last(kind: str) -> str | None:
        return max((v.timestamp for v in done if v.kind == kind), default=None)

    def writes_after(ts: str | None, kinds: tuple[str, ...]) -> int:
        return sum(1 for v in done if v.kind in kinds and (ts is None or v.timestamp > ts))

    compaction, clustering, clean = last("compaction"), last("clustering"), last("clean")
    return {
        "delta_commits_since_compaction": writes_after(compaction, ("deltacommit",)) if is_mor else None,
        "commits_since_clustering": writes_after(clustering, _DATA_ACTIONS),
        "commits_since_clean": writes_after(clean, _DATA_ACTIONS),
        "last_compaction": compaction, "last_clustering": clustering, "last_clean": clean,
    }


def _metadata_table(table: HoodieTable, views: list[InstantView], deltas_since_compaction: int | None
                    ) -> dict[str, Any]:
    """Whether the metadata table's delta commits cover the data table's completed changes:
    each completed data-table instant that changes the listing gets a metadata delta commit
    at its own instant time; ``lag_instants`` counts those missing after the newest covered."""
    partitions = [p for p in (table.config.get(METADATA_PARTITIONS) or "").split(",") if p]
    if not partitions:
        return {"enabled": False, "partitions": [], "lag_instants": None, "covers_latest_commit": None,
                "delta_commits_since_compaction": None}
    mdt = Timeline.load(table.storage, Storage.join(table.base_path, ".hoodie", METADATA_FOLDER))
    covered = {i.timestamp for i in mdt.instants if i.is_completed and i.action == "deltacommit"}
    changes = [v for v in views if v.state == COMPLETED and v.action in (*_DATA_ACTIONS, "clean", "rollback", "restore")]
    newest = max((v.timestamp for v in changes if v.timestamp in covered), default="")
    lag = [v.timestamp for v in changes if v.timestamp > newest and v.timestamp not in covered]
    data_latest = max((v.timestamp for v in changes if v.kind in _DATA_ACTIONS), default=None)
    return {"enabled": True, "partitions": partitions, "lag_instants": len(lag),
            "covers_latest_commit": data_latest is None or data_latest in covered,
            "delta_commits_since_compaction": deltas_since_compaction}


def _lock(table: HoodieTable, provider: str | None) -> dict[str, Any]:
    """The lock provider the services were given (None: none named; a file lock found in the
    table is reported anyway), and the holder where a file in the table names it (ZooKeeper
    and DynamoDB keep theirs outside the table: holder None)."""
    short = provider.rsplit(".", 1)[-1] if provider else None
    for name, rel in _LOCK_FILES.items():
        if short not in (None, name):
            continue
        path = Storage.join(table.base_path, rel)
        try:
            data = table.storage.read_bytes(path)
        except HoodieError:
            continue
        try:
            holder: Any = json.loads(data or b"{}")
        except ValueError:
            holder = data.decode("utf-8", "replace")[:200]
        return {"provider": short or name, "holder": holder, "file": table.storage.uri(path)}
    return {"provider": short, "holder": None, "file": None}
