"""CDC logging of a write on a table with ``hoodie.table.cdc.enabled=true``.

Hudi's COW merge handle with change log (HoodieMergeHandleWithChangeLog) records, for every file
group it rewrites, each record it updates (``u``), deletes (``d``) and inserts into the group
(``i``), in a ``.cdc`` log file named in the write stat's ``cdcStats``; what a record holds is the
table's supplemental logging mode's (:mod:`cdc_block`: both images, the before image and the
key, or the key only). A brand-new file group gets no CDC log: a CDC query infers its inserts
from the base file (BASE_FILE_INSERT), which is also how it reads an insert_overwrite's new
groups (its replaced groups are REPLACE_COMMIT deletes). A MERGE_ON_READ delta commit's log
append gets none either (the query infers it from the slice, LOG_FILE); its compaction logs
what it merged only when the index puts inserts into logs too (:func:`compaction_logs_changes`),
as Hudi's HoodieMergeHandleFactory picks the change-log handle for compaction. Anything we
cannot log the way Hudi does is refused before the write changes the table
(:func:`refuse_unsupported_cdc`): a CDC consumer must never miss changes silently.
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
    OP_KEY_ONLY,
    UPDATE,
    CdcSegment,
    cdc_log_file_name,
    cdc_segments_block,
)
from airflow_hoodie.table.log.log_block import serialize_block
from airflow_hoodie.table.schema.meta_fields import COMMIT_TIME, RECORD_KEY
from airflow_hoodie.table.storage.storage import Storage

#: operations whose changes a CDC query can tell: merged groups get a .cdc log, new groups are
#: read as inserts, an overwrite's replaced groups as deletes (HoodieCDCInferenceCase)
LOGGED_OPERATIONS = ("upsert", "insert", "delete", "bulk_insert", "insert_overwrite", "insert_overwrite_table")


#: index types whose MERGE_ON_READ writes yield pure log files, inserts included
#: (HoodieWriteConfig.isYieldingPureLogForMor)
PURE_LOG_INDEX_TYPES = ("BUCKET", "FLINK_STATE")


def compaction_logs_changes(cdc_enabled: bool, index_type: str | None) -> bool:
    """Whether a compaction of this table writes .cdc logs. Hudi 1.x's HoodieMergeHandleFactory
    gives compaction the change-log merge handle only on a CDC table whose write config's index
    yields pure log files (BUCKET, FLINK_STATE): other indexes send inserts to base files and
    updates to logs, which the CDC extractor already reads (BASE_FILE_INSERT, LOG_FILE). Any
    other compaction writes no .cdc file, so we write none either: a table we compact must have
    the files Hudi's compactor would leave (Hudi's SIMPLE default included)."""
    return cdc_enabled and (index_type or "SIMPLE").strip().upper() in PURE_LOG_INDEX_TYPES


def compaction_changes(base_rows: pa.Table | None, merged: pa.Table, base_instant: str,
                       mode: str) -> list[CdcSegment]:
    """What a compaction merged into a file group: a row written after the base file (its commit
    time) updates the base row of its key or is an insert; a base row gone was deleted. Rows the
    logs left alone are no change (Hudi's change-log merge handle logs only merged records)."""
    touched = merged.filter(pc.greater(merged.column(COMMIT_TIME).cast(pa.string()), base_instant))
    if base_rows is None or base_rows.num_rows == 0:
        return _changes(mode, inserted=touched)
    base_keys = _keys(base_rows.column(RECORD_KEY))
    touched_keys = _keys(touched.column(RECORD_KEY))
    updated = pc.is_in(touched_keys, value_set=base_keys)
    before = base_rows.take(pc.index_in(pc.filter(touched_keys, updated), value_set=base_keys))
    deleted = base_rows.filter(pc.invert(pc.is_in(base_keys, value_set=_keys(merged.column(RECORD_KEY)))))
    return _changes(mode, before, touched.filter(updated), deleted, touched.filter(pc.invert(updated)))


def _changes(mode: str, before_updated: pa.Table | None = None, after_updated: pa.Table | None = None,
             deleted: pa.Table | None = None, inserted: pa.Table | None = None) -> list[CdcSegment]:
    """The changes of one file group as segments (updates, deletes, inserts, Hudi's order), each
    with its record keys and the images ``mode`` logs: none (OP_KEY_ONLY), the before image
    (DATA_BEFORE) or both. Rows stay Arrow tables: the block encodes them column by column."""
    with_before, with_after = mode != OP_KEY_ONLY, mode == DATA_BEFORE_AFTER
    segments: list[CdcSegment] = []
    if before_updated is not None and after_updated is not None and before_updated.num_rows:
        segments.append(CdcSegment(UPDATE, _keys(after_updated.column(RECORD_KEY)),
                                   before_updated if with_before else None, after_updated if with_after else None))
    if deleted is not None and deleted.num_rows:
        segments.append(CdcSegment(DELETE, _keys(deleted.column(RECORD_KEY)), deleted if with_before else None))
    if inserted is not None and inserted.num_rows:
        segments.append(CdcSegment(INSERT, _keys(inserted.column(RECORD_KEY)), None,
                                   inserted if with_after else None))
    return segments


def refuse_unsupported_cdc(cdc: CdcSettings, operation: str, populate_meta_fields: bool) -> None:
    """Refuse, before anything is written, a write to a CDC table that we would log otherwise
    than Hudi (or not at all). A table without meta fields in a mode that logs keys only or the
    before image only is refused too: a CDC query rebuilds the missing images by the record key
    stored in the data files, and such a table stores none."""
    if not cdc.enabled:
        return
    if operation not in LOGGED_OPERATIONS:
        raise HoodieNotSupportedError(
            f"The {operation} operation on a table with hoodie.table.cdc.enabled=true is not supported: airflow-hoodie "
            "would not log its changes. Nothing was written: run it with Hudi's own writers, "
            f"or use one of {', '.join(LOGGED_OPERATIONS)}.")
    if not populate_meta_fields and cdc.mode != DATA_BEFORE_AFTER:
        raise HoodieNotSupportedError(
            f"A CDC table in supplemental logging mode {cdc.mode} with hoodie.populate.meta.fields=false is not "
            "supported: its CDC query finds the images by the record keys the data files store, and these store "
            f"none. Nothing was written: use mode {DATA_BEFORE_AFTER} or populate the meta fields.")


def _keys(keys: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Record keys as one plain string array (stored keys may come dictionary-encoded)."""
    arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    return arr.cast(pa.string())


def merge_changes(gone: pa.Table, written: pa.Table, mode: str) -> list[CdcSegment]:
    """The changes of one merged file group: ``gone`` the previous base file's rows the merge
    did not carry over (record key and data columns; the merge handle's own mask picks them, so
    the old file's keys are never hashed again), ``written`` the merged records the new file
    holds beyond the carried rows (record key and data columns). A gone row was updated (its key
    was written again) or deleted; a written key with no gone row is an insert into the group."""
    gone_keys = _keys(gone.column(RECORD_KEY))
    new_keys = _keys(written.column(RECORD_KEY))
    updated_mask = pc.is_in(gone_keys, value_set=new_keys)
    before_updated = gone.filter(updated_mask)
    after_updated = written.take(pc.index_in(_keys(before_updated.column(RECORD_KEY)), value_set=new_keys))
    return _changes(mode, before_updated, after_updated, gone.filter(pc.invert(updated_mask)),
                    written.filter(pc.invert(pc.is_in(new_keys, value_set=gone_keys))))


def write_cdc_log(storage: Storage, base_path: str, partition_path: str, file_id: str, instant_time: str,
                  write_token: str, suffix: str, data_schema: Mapping[str, Any], mode: str,
                  changes: list[CdcSegment]) -> dict[str, int]:
    """Write the CDC log of one merged file group (one CDC_DATA block of ``mode``'s records,
    empty when nothing changed, as Hudi's logger flushes on close); returns its ``cdcStats``
    entry (path relative to the table -> size). The APPEND marker comes first, so a rollback
    removes the file."""
    name = cdc_log_file_name(file_id, instant_time, write_token, suffix)
    mk.create_marker(storage, base_path, instant_time, partition_path, name, mk.IO_APPEND)
    data = serialize_block(cdc_segments_block(instant_time, data_schema, mode, changes))
    part_dir = storage.join(base_path, partition_path) if partition_path else base_path
    # streamed like every other log file and the base file beside it (Hudi's log writer
    # hflushes, never fsyncs): write_bytes' temp file, fsync and rename cost 17-45 ms a group
    # on a loaded disk, and the marker above already has a torn file rolled back
    with storage.open_output(storage.join(part_dir, name)) as out:
        out.write(data)
    rel = f"{partition_path}/{name}" if partition_path else name
    return {rel: len(data)}


__all__ = ["LOGGED_OPERATIONS", "PURE_LOG_INDEX_TYPES", "compaction_changes", "compaction_logs_changes", "merge_changes", "refuse_unsupported_cdc", "write_cdc_log"]
