"""Which rollback a "roll back the latest write" task made (C11b, issue 35).

The rollback job without a target instant rolls back the latest write. A try that completed
its rollback and was killed before it reported is retried by Airflow, and the retry cannot tell
its own finished rollback from a new request: it took the write before for "the latest write"
and rolled that back too, losing rows nobody asked to undo.

Writes find their earlier try by the write identity in their commit's ``extraMetadata``; a
rollback's Avro metadata (HoodieRollbackPlan, HoodieRollbackMetadata) has no such field, and
adding one would break Hudi's readers. So the job records, before its rollback instant exists,
``{writeId, rollbackInstant, target}`` in a small file under ``.hoodie/.aux/.airflow/rollbacks/``
(a folder Hudi's writers keep their own auxiliary files in and otherwise ignore). The record is
only a pointer: a retry trusts it only when the timeline holds that completed rollback of that
target, so a try killed before its rollback began leaves a record that means nothing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.storage.storage import Storage

RECORDS_FOLDER = ".airflow/rollbacks"


@dataclass(frozen=True)
class RollbackRecord:
    """What one task's rollback was: its rollback instant and the write it rolled back."""

    write_id: str
    rollback_instant: str
    target: str


def _path(table: HoodieTable, write_id: str) -> str:
    name = hashlib.sha256(write_id.encode()).hexdigest() + ".json"
    return Storage.join(table.aux_path, RECORDS_FOLDER, name)


def record_rollback(table: HoodieTable, record: RollbackRecord) -> None:
    """Keep ``record`` for the task's retries (replacing an earlier try's: only the last
    try's rollback can be the one that completed unreported)."""
    body = json.dumps({"writeId": record.write_id, "rollbackInstant": record.rollback_instant,
                       "target": record.target}, separators=(",", ":")).encode()
    table.storage.write_bytes(_path(table, record.write_id), body)


def recorded_rollback(table: HoodieTable, write_id: str) -> RollbackRecord | None:
    """The record an earlier try of the task with ``write_id`` left, if any."""
    try:
        data = table.storage.read_bytes(_path(table, write_id))
    except (HoodieError, OSError, FileNotFoundError):
        return None
    try:
        obj = json.loads(data)
        record = RollbackRecord(str(obj["writeId"]), str(obj["rollbackInstant"]), str(obj["target"]))
    except (ValueError, KeyError, TypeError):
        return None  # a torn write of the record: its try had not begun its rollback
    return record if record.write_id == write_id else None
