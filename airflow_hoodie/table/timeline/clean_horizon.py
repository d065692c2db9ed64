"""How far back the table's files still reach after its last completed clean.

Time travel, savepoints and restores all ask it: the last clean's
``earliestCommitToRetain`` is the oldest instant whose files are all still there (a
KEEP_LATEST_FILE_VERSIONS clean records none)."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.timeline.instant import Action, State
from airflow_hoodie.table.timeline.timeline import Timeline


@dataclass(frozen=True)
class CleanHorizon:
    clean: str  #: the last completed clean's instant time
    earliest_commit_to_retain: str  #: "" when that clean recorded none (file-version policy)


def clean_horizon(timeline: Timeline) -> CleanHorizon | None:
    """The last completed clean's horizon, or None when no clean is on the active timeline."""
    cleans = [i for i in timeline.instants if i.action == Action.CLEAN and i.state == State.COMPLETED]
    if not cleans:
        return None
    meta = avro_codec.deserialize(timeline.read_details(cleans[-1]), "HoodieCleanMetadata")
    return CleanHorizon(cleans[-1].timestamp, meta.get("earliestCommitToRetain") or "")
