"""Who wrote an instant: a write identity stored in the commit's ``extraMetadata``.

Hudi lets a writer put its own keys in a commit's ``extraMetadata``: every write option
whose key starts with ``hoodie.datasource.write.commitmeta.key.prefix`` (default ``_``)
is copied there, the way Hudi Streamer keeps its checkpoint on the timeline. The Airflow
operators use it for a write identity (dag_id, run_id, task_id, map_index), so that:

- the hook finds the instant a job produced on the timeline when the job's own output
  never reaches it (cluster deploy mode);
- a retry that finds a completed instant with its identity returns it and writes nothing
  (a try killed after its commit and before its result must not write the batch twice);
- a retry that finds its own pending instant rolls it back before writing again.

The identity is also in the inflight file's ``extraMetadata`` (Hudi's workload profile is
commit metadata too), so a pending instant is recognisable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from airflow_hoodie.actions import commit
from airflow_hoodie.actions.rollback import rollback_instant
from airflow_hoodie.actions.transaction.service_transaction import (
    transaction_manager_for,
)
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieError, HoodieTableNotFoundError
from airflow_hoodie.settings.action import WRITE_ID_SUFFIX, ActionSettings, write_id_key  # noqa: F401 - for callers
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata.commit_metadata import (
    CommitMetadata,
    parse_commit_metadata,
)
from airflow_hoodie.table.timeline.instant import Instant, State
from airflow_hoodie.table.timeline.timeline import Timeline

#: actions a write or a table service completes as
_WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")


def format_write_id(dag_id: str, run_id: str, task_id: str, map_index: int | None = -1) -> str:
    """The canonical text of an Airflow task's write identity (compared as a string)."""
    return json.dumps({"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": -1 if map_index is None else int(map_index)},
                      sort_keys=True, separators=(",", ":"))


def with_write_id(config: HoodieConfig, write_id: str | None) -> HoodieConfig:
    """The write config carrying ``write_id`` as a commit-metadata option."""
    if not write_id:
        return config
    return config.with_values({write_id_key(config): write_id})




@dataclass
class FoundWrite:
    """What the timeline holds for one write identity."""

    completed: Instant | None = None
    metadata: Any = None
    pending: list[Instant] = field(default_factory=list)


def _extra_of(timeline: Timeline, instant: Instant) -> Mapping[str, str] | None:
    try:
        body = timeline.read_details(instant)
    except HoodieError:
        return None  # archived or rolled back meanwhile
    if not body or not body.strip():
        return None  # a .requested commit holds nothing
    try:
        return parse_commit_metadata(body, instant.action).extra_metadata
    except (HoodieError, ValueError, KeyError, TypeError):
        return None  # not commit metadata (a plan): no identity


def find_write(timeline: Timeline, config: HoodieConfig, write_id: str) -> FoundWrite:
    """The completed instant (newest) and the pending ones that carry ``write_id``."""
    key = write_id_key(config)
    found = FoundWrite()
    for instant in reversed(timeline.filter(actions=_WRITE_ACTIONS).instants):
        if instant.state == State.REQUESTED:
            continue
        extra = _extra_of(timeline, instant)
        if not extra or extra.get(key) != write_id:
            continue
        if instant.is_completed and found.completed is None:
            found.completed = instant
            found.metadata = parse_commit_metadata(timeline.read_details(instant), instant.action)
        elif instant.is_pending:
            found.pending.append(instant)
    return found


def _find_archived_write(table: HoodieTable, config: HoodieConfig, write_id: str) -> FoundWrite:
    """The committed try among archived instants: archival (after every commit, in Hudi's
    writers) may move it off the active timeline between the try and its retry, and
    writing the batch again would store it twice. Newest first; the archive is read only
    when the active timeline holds no try at all."""
    key = write_id_key(config)
    archived = table.archived_timeline()
    for instant in reversed(archived.completed_commits()):
        meta = archived.metadata(instant.timestamp, State.COMPLETED)
        if meta and (meta.get("extraMetadata") or {}).get(key) == write_id:
            return FoundWrite(completed=instant, metadata=CommitMetadata.from_avro(meta))
    return FoundWrite()


def result_of(found: FoundWrite, base_path: str) -> dict[str, Any]:
    """A job-style result for a completed instant, read back from its commit metadata."""
    if found.completed is None:
        raise HoodieError("No completed instant carries this write identity.")
    stats = [s.to_dict() for s in found.metadata.write_stats]
    operation = getattr(found.metadata, "operation_type", None)
    return {
        "instant": found.completed.timestamp,
        "completion_time": found.completed.completion_time,
        "checkpoint": found.completed.checkpoint,
        "action": found.completed.action,
        "state": "COMPLETED",
        "operation": str(operation).lower() if operation else None,
        "base_path": base_path,
        "inserts": sum(int(s.get("numInserts") or 0) for s in stats),
        "updates": sum(int(s.get("numUpdateWrites") or 0) for s in stats),
        "deletes": sum(int(s.get("numDeletes") or 0) for s in stats),
        "files_written": len({s.get("path") for s in stats if s.get("path")}),
        "bytes_written": sum(int(s.get("totalWriteBytes") or 0) for s in stats),
        "partitions": len({s.get("partitionPath") for s in stats}),
        "found_on_timeline": True,
    }


def settle_previous_try(base_uri: str, storage_options: Mapping[str, str] | None, config: HoodieConfig,
                        write_id: str) -> dict[str, Any] | None:
    """Before a write with ``write_id``: the result of a try that already committed it, or None.

    A completed instant with this identity means an earlier try of the same task wrote the
    batch and died before reporting: its result is returned and nothing is written. Pending
    instants with this identity are that task's own dead attempts: rolled back first, so
    the write starts from a clean table whatever the failed-writes policy.
    """
    try:
        table = HoodieTable.load(base_uri, dict(storage_options or {}) or None)
    except HoodieTableNotFoundError:
        return None
    found = find_write(table.timeline, config, write_id)
    if found.completed is None and not found.pending:
        found = _find_archived_write(table, config, write_id)
    if found.completed is not None:
        return {**result_of(found, base_uri), "retry_of_completed_write": True}
    settings = ActionSettings.from_config(config)
    if found.pending:
        commit.prepare_for_change(table, settings.change)
    lock = settings.lock
    for instant in found.pending:
        # the rollback changes the metadata table: under the table lock, as every such change
        with transaction_manager_for(table, lock).transaction(f"roll back {instant.timestamp}"):
            rollback_instant(table, instant.timestamp)
    return None
