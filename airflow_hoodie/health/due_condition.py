"""The conditions a maintenance-due sensor waits for, evaluated on a health object.

Operators schedule compaction on cron because nothing tells them when it is due; Hudi's
users ask for exactly that. A condition names one or more thresholds over the figures of
:func:`~airflow_hoodie.health.table_health.table_health`; ``match`` says whether any or all
must hold. Plain JSON, so a trigger can store it.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from airflow_hoodie.errors import HoodieConfigError

MATCHES = ("any", "all")


def due_condition(*, compaction_due: bool = False, services_due: Iterable[str] = (), delta_commits: int | None = None,
                  log_bytes: int | None = None, small_file_groups: int | None = None,
                  pending_older_than: float | None = None, match: str = "any") -> dict[str, Any]:
    """``compaction_due``: compaction's own trigger holds (``services_due`` the same for any
    of compaction, clustering, clean, archival); ``delta_commits``: at least this many since
    the last compaction; ``log_bytes``: log files of the latest slices hold at least this
    many bytes; ``small_file_groups``: at least this many base files under the small-file
    limit; ``pending_older_than``: a pending instant is at least this many seconds old."""
    services = sorted({*(["compaction"] if compaction_due else []), *map(str, services_due)})
    unknown = [s for s in services if s not in ("compaction", "clustering", "clean", "archival")]
    if unknown:
        raise HoodieConfigError(f"services_due {unknown} are not services; use compaction, clustering, clean, archival.")
    if match not in MATCHES:
        raise HoodieConfigError(f"match={match!r}: use 'any' or 'all'.")
    thresholds = {"delta_commits": delta_commits, "log_bytes": log_bytes, "small_file_groups": small_file_groups,
                  "pending_older_than": pending_older_than}
    given = {k: v for k, v in thresholds.items() if v is not None}
    if not services and not given:
        raise HoodieConfigError("A maintenance-due condition needs at least one threshold: compaction_due, "
                                "services_due, delta_commits, log_bytes, small_file_groups or pending_older_than.")
    return {"services_due": services, **given, "match": match}


def met(condition: Mapping[str, Any], health: Mapping[str, Any]) -> list[str] | None:
    """The parts of ``condition`` that hold, in words; None when the condition does not."""
    checks: list[tuple[bool, str]] = []
    due = {d["service"]: d for d in health["maintenance_due"]}
    for service in condition.get("services_due", []):
        entry = due.get(service)
        checks.append((bool(entry and entry["due"]),
                       f"{service} due: {entry['reason'] if entry else 'not applicable to this table'}"))
    if "delta_commits" in condition:
        n = health.get("delta_commits_since_compaction") or 0
        checks.append((n >= condition["delta_commits"], f"{n} delta commits since the last compaction "
                                                        f"(>= {condition['delta_commits']})"))
    if "log_bytes" in condition:
        n = health.get("log_bytes", 0)
        checks.append((n >= condition["log_bytes"], f"{n} log bytes (>= {condition['log_bytes']})"))
    if "small_file_groups" in condition:
        n = health["small_file_groups"]
        checks.append((n >= condition["small_file_groups"], f"{n} small file groups (>= {condition['small_file_groups']})"))
    if "pending_older_than" in condition:
        old = [p for p in health["pending"] if (p["age_seconds"] or 0) >= condition["pending_older_than"]]
        checks.append((bool(old), f"{len(old)} pending instants older than {condition['pending_older_than']} s"
                       + (f" ({', '.join(p['action'] + ' ' + p['instant'] for p in old)})" if old else "")))
    held = [why for ok, why in checks if ok]
    if (condition.get("match", "any") == "all" and len(held) == len(checks)) or \
            (condition.get("match", "any") == "any" and held):
        return held
    return None
