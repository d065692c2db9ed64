"""``airflow-hoodie show``: the content of an instant file as JSON data, on every table
version: JSON commit metadata (version 6), Avro commit metadata (8 and 9, decoded), Avro
plans, and instants already archived (from the archived timeline, or the LSM timeline of
8 and 9)."""

from __future__ import annotations

import json
from typing import Any

from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata import avro_codec
from airflow_hoodie.table.timeline.instant import Instant, State

STATE_NAMES = {"requested": "REQUESTED", "inflight": "INFLIGHT", "completed": "COMPLETED"}


def instant_details(table: HoodieTable, instant: str, state: str | None = None) -> dict[str, Any]:
    """The content of an instant file as JSON data: commit metadata (JSON) or an Avro plan/metadata.

    ``instant`` is an instant time or an instant file name. Without ``state`` the latest
    state's file is shown, falling back to the requested file (where plans live) when the
    latest one is empty.
    """

    timeline = table.timeline
    parsed = Instant.parse(instant) if not instant.isdigit() else None
    ts = parsed.timestamp if parsed else instant
    current = timeline.get(ts, parsed.action if parsed else None)
    if current is None:
        archived = _archived_details(table, ts)
        if archived is not None:
            return archived
        raise HoodieError(
            f"instant {ts} is not on the active timeline of {table.base_uri}; "
            "run `airflow-hoodie timeline PATH` to list instants"
        )
    wanted = State[STATE_NAMES[state]] if state else (parsed.state if parsed else None)
    candidates = [wanted] if wanted else [current.state] + [s for s in (State.INFLIGHT, State.REQUESTED) if s != current.state]
    data, used = b"", current.state
    for st in candidates:
        try:
            data = timeline.read_details(current, st)
        except HoodieError:
            if wanted:
                raise
            continue
        used = st
        if data:
            break
    action = current.action
    result: dict[str, Any] = {
        "instant": ts,
        "action": action,
        "state": current.state.name,
        "file_state": used.name,
        "content_bytes": len(data),
    }
    result["content"] = decode_instant_content(data, action)
    return result


def _archived_details(table: HoodieTable, ts: str) -> dict[str, Any] | None:
    """An archived instant's metadata, from the ``HoodieArchivedMetaEntry`` that holds it."""
    try:
        archived = table.archived_timeline()
    except (ImportError, HoodieError):
        return None
    inst = next((i for i in archived.instants if i.timestamp == ts), None)
    if inst is None:
        return None
    state = getattr(inst, "state", None)
    return {
        "instant": ts,
        "action": inst.action,
        "state": getattr(state, "name", str(state)),
        "file_state": "ARCHIVED",
        "content": archived.metadata(ts),
    }


def decode_instant_content(data: bytes, action: str) -> Any:
    if not data:
        return None
    if data[:4] == b"Obj\x01":

        return avro_codec.deserialize(data)
    text = data.decode("utf-8", errors="replace").strip()
    if text.startswith("{"):
        try:
            from airflow_hoodie.table.metadata.commit_metadata import (
                parse_commit_metadata,
            )

            return parse_commit_metadata(data, action).to_dict()
        except (ImportError, HoodieError, ValueError, KeyError, TypeError):
            return json.loads(text)
    return {"raw": text}
