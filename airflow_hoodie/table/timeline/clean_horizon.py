"""How far back the table's files still reach after its last completed clean.

Time travel, savepoints and restores all ask it: the last clean's
``earliestCommitToRetain`` is the oldest instant whose files are all still there (a
KEEP_LATEST_FILE_VERSIONS clean records none)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_hoodie.table.file_group.file_naming import parse_base_file_name
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


def files_cleaned_from(timeline: Timeline, view: Any, instant_time: str) -> list[str]:
    """Base files a reader as of ``instant_time`` needs that a clean on the active timeline
    deleted: a file-version clean (or a clustering's replaced group cleaned after it) keeps
    no horizon, and a savepoint, time travel or restore to such an instant would see the
    rows that happened to survive as the table. A deleted file is needed when its group is
    live as of ``instant_time`` and has no later slice by then (a group whose replacecommit
    was archived was replaced before any instant on the active timeline)."""
    cleans = [i for i in timeline.instants if i.action == Action.CLEAN and i.state == State.COMPLETED]
    if not cleans:
        return []
    replaced_at = view.replace_instants_by_group()
    replaced = {k for k, ts in replaced_at.items() if ts <= instant_time}
    groups = view.service_file_groups()
    lost = []
    for clean in cleans:
        meta = avro_codec.deserialize(timeline.read_details(clean), "HoodieCleanMetadata")
        for part, pm in (meta.get("partitionMetadata") or {}).items():
            for path in pm.get("successDeleteFiles") or []:
                name = path.rsplit("/", 1)[-1]
                parsed = parse_base_file_name(name)
                if parsed is None or parsed.instant > instant_time or (part, parsed.file_id) in replaced:
                    continue
                fg = groups.get((part, parsed.file_id))
                if fg is None:
                    # every file of the group is gone: a clustering replaced it, after the
                    # instant if its replacecommit is still active, before it if archived
                    gone = (part, parsed.file_id) in replaced_at
                else:
                    gone = not any(parsed.instant < s.base_instant <= instant_time for s in fg.slices)
                if gone:
                    lost.append(f"{part}/{name}" if part else name)
    return lost
