"""CDC logging of a write on a table with ``hoodie.table.cdc.enabled=true``.

Hudi's COW merge handle with change log (HoodieMergeHandleWithChangeLog) records, for every file
group it rewrites, each record it updates (``u``: before and after image), deletes (``d``:
before image) and inserts into the group (``i``: after image), in a ``.cdc`` log file named in
the write stat's ``cdcStats``. A brand-new file group gets no CDC log: a CDC query infers its
inserts from the base file (BASE_FILE_INSERT). A MERGE_ON_READ delta commit's log append gets none
either (the query infers it from the slice, LOG_FILE); its compaction logs what it merged, as
Hudi's compactor does through the same handle. Anything we cannot log the way Hudi does is
refused before the write changes the table (:func:`refuse_unsupported_cdc`): a CDC consumer
must never miss changes silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.settings.cdc import CdcSettings
from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.table.log.cdc_block import (
    DATA_BEFORE_AFTER,
    DELETE,
    INSERT,
    UPDATE,
    cdc_data_block,
    cdc_log_file_name,
)
from airflow_hoodie.table.log.log_block import serialize_block
from airflow_hoodie.table.schema.avro_convert import arrow_to_avro_records
from airflow_hoodie.table.schema.meta_fields import COMMIT_TIME, RECORD_KEY
from airflow_hoodie.table.storage.storage import Storage

#: operations whose file groups the write path logs as Hudi does (merge handle / create handle)
LOGGED_OPERATIONS = ("upsert", "insert", "delete", "bulk_insert")


def refuse_unsupported_cdc_mode(cdc_enabled: bool, mode: str, action: str) -> None:
    """Refuse a table service that would log a CDC table's changes in a mode we do not write."""
    if cdc_enabled and mode != DATA_BEFORE_AFTER:
        raise HoodieNotSupportedError(
            f"The table logs CDC in supplemental logging mode {mode}; airflow-hoodie writes CDC logs only in "
            f"{DATA_BEFORE_AFTER}, so it does not run {action} on it. Nothing was changed: run it with Hudi's own "
            "table services.")


def compaction_changes(base_rows: pa.Table | None, merged: pa.Table, base_instant: str,
                       data_schema: Mapping[str, Any]) -> list[tuple[str, dict | None, dict | None]]:
    """What a compaction merged into a file group: a row written after the base file (its commit
    time) updates the base row of its key or is an insert; a base row gone was deleted. Rows the
    logs left alone are no change (Hudi's change-log merge handle logs only merged records)."""
    merged_keys = _keys(merged.column(RECORD_KEY))
    touched = merged.filter(pc.greater(merged.column(COMMIT_TIME).cast(pa.string()), base_instant))
    if base_rows is None or base_rows.num_rows == 0:
        return [(INSERT, None, a) for a in _images(touched, data_schema)]
    base_keys = _keys(base_rows.column(RECORD_KEY))
    touched_keys = _keys(touched.column(RECORD_KEY))
    updated = pc.is_in(touched_keys, value_set=base_keys)
    before = base_rows.take(pc.index_in(pc.filter(touched_keys, updated), value_set=base_keys))
    deleted = base_rows.filter(pc.invert(pc.is_in(base_keys, value_set=merged_keys)))
    changes: list[tuple[str, dict | None, dict | None]] = []
    changes += [(UPDATE, b, a) for b, a in zip(_images(before, data_schema),
                                               _images(touched.filter(updated), data_schema))]
    changes += [(DELETE, b, None) for b in _images(deleted, data_schema)]
    changes += [(INSERT, None, a) for a in _images(touched.filter(pc.invert(updated)), data_schema)]
    return changes


def refuse_unsupported_cdc(cdc: CdcSettings, operation: str) -> None:
    """Refuse, before anything is written, a write to a CDC table that we would log otherwise
    than Hudi (or not at all)."""
    if not cdc.enabled:
        return
    if cdc.mode != DATA_BEFORE_AFTER:
        raise HoodieNotSupportedError(
            f"The table logs CDC in supplemental logging mode {cdc.mode}; airflow-hoodie writes CDC logs only in "
            f"{DATA_BEFORE_AFTER} (Hudi's default). Nothing was written: write this table with Hudi's own writers, "
            "or create the table with hoodie.table.cdc.supplemental.logging.mode=DATA_BEFORE_AFTER.")
    if operation not in LOGGED_OPERATIONS:
        raise HoodieNotSupportedError(
            f"The {operation} operation on a table with hoodie.table.cdc.enabled=true is not supported: airflow-hoodie "
            "does not log the changes of replaced file groups. Nothing was written: run it with Hudi's own writers, "
            f"or use one of {', '.join(LOGGED_OPERATIONS)}.")


def _images(rows: pa.Table, data_schema: Mapping[str, Any]) -> list[dict | None]:
    """Avro-ready dicts of ``rows`` in the table's data schema (meta fields dropped, as Hudi's
    CDC logger projects both images)."""
    if rows.num_rows == 0:
        return []
    names = [f["name"] for f in data_schema["fields"]]
    return list(arrow_to_avro_records(rows.select(names), data_schema))


def _keys(keys: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Record keys as one plain string array (stored keys may come dictionary-encoded)."""
    arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    return arr.cast(pa.string())


def merge_changes(old_rows: pa.Table, kept_keys: pa.Array, written: pa.Table,
                  data_schema: Mapping[str, Any]) -> list[tuple[str, dict | None, dict | None]]:
    """The changes of one merged file group: ``old_rows`` the previous base file's rows (record
    key and data columns), ``kept_keys`` the keys of the rows carried over unchanged,
    ``written`` the merged records the new file holds beyond them (record key and data columns).
    An old row not carried over was updated (its key was written again) or deleted; a written
    key with no old row is an insert into the group."""
    old_keys = _keys(old_rows.column(RECORD_KEY))
    gone = old_rows.filter(pc.invert(pc.is_in(old_keys, value_set=_keys(kept_keys))))
    gone_keys = _keys(gone.column(RECORD_KEY))
    new_keys = _keys(written.column(RECORD_KEY))
    updated_mask = pc.is_in(gone_keys, value_set=new_keys)
    before_updated = gone.filter(updated_mask)
    after_at = pc.index_in(_keys(before_updated.column(RECORD_KEY)), value_set=new_keys)
    after_updated = written.take(after_at)
    deleted = gone.filter(pc.invert(updated_mask))
    inserted = written.filter(pc.invert(pc.is_in(new_keys, value_set=gone_keys)))
    changes: list[tuple[str, dict | None, dict | None]] = []
    changes += [(UPDATE, b, a) for b, a in zip(_images(before_updated, data_schema),
                                               _images(after_updated, data_schema))]
    changes += [(DELETE, b, None) for b in _images(deleted, data_schema)]
    changes += [(INSERT, None, a) for a in _images(inserted, data_schema)]
    return changes


def write_cdc_log(storage: Storage, base_path: str, partition_path: str, file_id: str, instant_time: str,
                  write_token: str, suffix: str, data_schema: Mapping[str, Any],
                  changes: list[tuple[str, dict | None, dict | None]]) -> dict[str, int]:
    """Write the CDC log of one merged file group (one CDC_DATA block, empty when nothing
    changed, as Hudi's logger flushes on close); returns its ``cdcStats`` entry (path relative
    to the table -> size). The APPEND marker comes first, so a rollback removes the file."""
    name = cdc_log_file_name(file_id, instant_time, write_token, suffix)
    mk.create_marker(storage, base_path, instant_time, partition_path, name, mk.IO_APPEND)
    data = serialize_block(cdc_data_block(instant_time, data_schema, changes))
    part_dir = storage.join(base_path, partition_path) if partition_path else base_path
    storage.write_bytes(storage.join(part_dir, name), data)
    rel = f"{partition_path}/{name}" if partition_path else name
    return {rel: len(data)}


__all__ = ["LOGGED_OPERATIONS", "compaction_changes", "merge_changes", "refuse_unsupported_cdc",
           "refuse_unsupported_cdc_mode", "write_cdc_log"]
