"""What the latest run of a table service decided when it planned nothing.

A sensor waiting for a compaction (or clustering, or clean) that the latest planning run
declined to schedule waits until its own timeout, hours later, with no word of why. The
planning run leaves its reason here; a sensor that finds nothing of that kind pending and
nothing newer than that decision fails at once with the reason instead
(:func:`airflow_hoodie.triggers.timeline_condition.check_not_futile`).

Kept under ``.hoodie/.aux/.airflow/outcomes/<kind>.json``, a folder Hudi's own writers
ignore, so a table stays exactly what Hudi expects. Any later instant of that kind, from us
or from a Hudi writer, makes the record stale: its ``latest_instant`` is the newest instant
time on the timeline when the decision was taken.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Iterable

from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.timeline import Timeline

OUTCOMES_FOLDER = ".hoodie/.aux/.airflow/outcomes"

#: the services whose planning runs leave a record (the actions a sensor names them by)
PLANNED_KINDS = ("compaction", "clustering", "clean")


@dataclass(frozen=True)
class NothingPlanned:
    kind: str
    reason: str
    #: the newest instant time on the timeline when the run decided
    latest_instant: str
    #: wall-clock time of the decision (UTC, ISO 8601), for people
    written: str


def _path(base_path: str, kind: str) -> str:
    return Storage.join(base_path, OUTCOMES_FOLDER, f"{kind}.json")


def record_nothing_planned(storage: Storage, base_path: str, kind: str, reason: str, timeline: Timeline) -> None:
    """Called by the planning run that scheduled nothing, with the timeline it decided on;
    best effort: a table service must not fail because its explanation could not be stored."""
    latest = max(timeline.timestamps, default="")
    record = NothingPlanned(kind, reason, latest, datetime.now(timezone.utc).isoformat(timespec="seconds"))
    try:
        storage.write_bytes(_path(base_path, kind), json.dumps(asdict(record)).encode())
    except HoodieError:
        pass


def nothing_planned(storage: Storage, base_path: str, kinds: Iterable[str]) -> dict[str, NothingPlanned]:
    """The records of ``kinds`` that exist (unreadable ones count as absent: no early failure)."""
    out: dict[str, NothingPlanned] = {}
    for kind in kinds:
        try:
            data = json.loads(storage.read_bytes(_path(base_path, kind)))
            out[kind] = NothingPlanned(**{k: str(data[k]) for k in ("kind", "reason", "latest_instant", "written")})
        except (HoodieError, ValueError, KeyError, TypeError):
            continue
    return out
