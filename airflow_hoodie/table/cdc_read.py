"""CDC queries: the changes of the commits in a window, as Hudi's Spark CDC relation returns them.

Each completed data-changing commit in ``(start, end]`` is taken apart per written file group,
as Hudi's HoodieCDCExtractor does (HoodieCDCInferenceCase):

* AS_IS: the write stat names CDC log files (``cdcStats``): their records are the changes.
  ``DATA_BEFORE_AFTER`` logs op, commit time and both images; ``DATA_BEFORE`` op, record key and
  the before image, the after image of an ``i``/``u`` is the new base file's row of that key;
  ``OP_KEY_ONLY`` op and record key, the before image of a ``u``/``d`` is the previous base
  file's row (the write stat's ``prevCommit``) and the after image the new one's
  (HoodieCDCExtractor.parseWriteStat, CDCFileGroupIterator).
* BASE_FILE_INSERT: no CDC log and every record of the new base file is an insert.
* BASE_FILE_DELETE: a delete that emptied the group: every row of the previous base file is a
  deleted one.
* LOG_FILE: a merge-on-read delta commit appended to the group's log. The slice its write stat
  names (``baseFile`` + ``logFiles``) is read merged as of the commit before and as of the
  commit: a row the commit wrote (its ``_hoodie_commit_time``) is an update of the row before it
  or an insert, a row gone is a delete.
* REPLACE_COMMIT: an insert_overwrite (or delete_partition) replaced file groups: every row of a
  replaced group's last slice before the commit is a delete; its new groups are BASE_FILE_INSERT.
  Where Hudi skips a replaced group whose files are gone, we raise: the deletes would be missing.

The result has Hudi's CDC columns, all strings: ``op`` (``i``/``u``/``d``), ``ts_ms`` (the
commit's instant time), ``before`` and ``after`` (the row images as JSON objects of the
table's data columns, meta columns left out, null where there is no image), one row per
change, commits in timeline order.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieNotSupportedError
from airflow_hoodie.table.file_group.file_group import FileSlice
from airflow_hoodie.table.file_group.file_naming import parse_base_file_name
from airflow_hoodie.table.file_group.file_slice_reader import (
    SliceReadOptions,
    read_file_slice,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.cdc_block import (
    DATA_BEFORE,
    DATA_BEFORE_AFTER,
    DELETE,
    INSERT,
    OP_KEY_ONLY,
    UPDATE,
)
from airflow_hoodie.table.log.data_block import decode_avro_records
from airflow_hoodie.table.log.log_block import BlockType
from airflow_hoodie.table.log.log_reader import read_log_blocks_from_bytes
from airflow_hoodie.table.merge_config import MergeConfig
from airflow_hoodie.table.metadata.commit_metadata import WriteStat
from airflow_hoodie.table.schema.avro_convert import arrow_to_avro_records
from airflow_hoodie.table.schema.meta_fields import (
    COMMIT_TIME,
    META_COLUMNS,
    RECORD_KEY,
)

#: Hudi's CDC output columns (HoodieCDCUtils.CDC_COLUMNS), all strings in Spark's relation
CDC_OUTPUT_SCHEMA = pa.schema([("op", pa.string()), ("ts_ms", pa.string()),
                               ("before", pa.string()), ("after", pa.string())])

#: WriteOperationType.isDataChange: the operations whose commits a CDC query reports
DATA_CHANGE_OPERATIONS = frozenset({
    "INSERT", "INSERT_PREPPED", "UPSERT", "UPSERT_PREPPED", "BULK_INSERT", "BULK_INSERT_PREPPED",
    "DELETE", "DELETE_PREPPED", "INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE", "DELETE_PARTITION",
})

Change = tuple[str, str, "dict | None", "dict | None"]


def _json_default(value: Any) -> Any:
    """Values json cannot write: bytes as base64 (Jackson's form), decimals and others as text."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def image_json(image: dict | None) -> str | None:
    """A row image as Hudi's InternalRowToJsonStringConverter writes it: compact JSON, fields in
    schema order, nulls kept, meta columns left out."""
    if image is None:
        return None
    row = {k: v for k, v in image.items() if k not in META_COLUMNS}
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False, default=_json_default)


def read_cdc(table: HoodieTable, instants: list[Any], data_schema: dict[str, Any]) -> pa.Table:
    """The changes of ``instants`` (completed writes, in timeline order) as Hudi's CDC columns."""
    rows: list[Change] = []
    completed = sorted(i.timestamp for i in table.timeline.completed_commits())
    for instant in instants:
        meta = table.timeline.commit_metadata(instant)
        operation = (meta.operation_type or "").upper()
        if operation not in DATA_CHANGE_OPERATIONS:
            continue
        for partition, stat in meta.iter_write_stats():
            rows.extend(_stat_changes(table, instant.timestamp, operation, partition or "", stat, data_schema,
                                      completed))
        for partition, file_ids in sorted((getattr(meta, "partition_to_replace_file_ids", None) or {}).items()):
            for file_id in file_ids:
                rows.extend(_replaced_group_changes(table, instant.timestamp, partition or "", file_id, data_schema,
                                                    completed))
    return pa.table([[r[0] for r in rows], [r[1] for r in rows], [image_json(r[2]) for r in rows],
                     [image_json(r[3]) for r in rows]], schema=CDC_OUTPUT_SCHEMA)


def _stat_changes(table: HoodieTable, instant: str, operation: str, partition: str, stat: WriteStat,
                  data_schema: dict[str, Any], completed: list[str]) -> Iterator[Change]:
    """The changes one write stat stands for (HoodieCDCExtractor.parseWriteStat)."""
    if stat.cdc_stats:
        yield from _as_is_changes(table, instant, partition, stat, data_schema)
        return
    if parse_base_file_name((stat.path or "").rsplit("/", 1)[-1]) is None:
        yield from _log_file_changes(table, instant, partition, stat, data_schema, completed)
        return
    if operation.startswith("DELETE") and stat.num_writes == 0 and stat.num_deletes:
        before = _previous_base_file(table, partition, stat)
        for image in _file_images(table, before, data_schema):
            yield DELETE, instant, image, None
    elif stat.num_update_writes == 0 and stat.num_deletes == 0 and stat.num_writes == stat.num_inserts:
        for image in _file_images(table, stat.path or "", data_schema):
            yield INSERT, instant, None, image
    else:
        raise HoodieCorruptedDataError(
            f"Commit {instant} rewrote file group {stat.file_id} in '{partition}' with updates or deletes but logged "
            "no CDC file (there should be a cdc log file); its changes cannot be told. The commit was written "
            "without CDC logging: re-create the table with hoodie.table.cdc.enabled=true before relying on CDC.")


def _as_is_changes(table: HoodieTable, instant: str, partition: str, stat: WriteStat,
                   data_schema: dict[str, Any]) -> Iterator[Change]:
    """AS_IS: the records of the stat's CDC logs, with the images the table's logging mode left
    out taken from the base files before (``prevCommit``) and after (the stat's ``path``)."""
    mode = table.config.cdc_logging_mode
    records = [rec for path in sorted(stat.cdc_stats or {}) for rec in _cdc_records(table, path)]
    if mode == DATA_BEFORE_AFTER:
        for rec, block_instant in records:
            yield rec.get("op"), rec.get("ts_ms") or block_instant, rec.get("before"), rec.get("after")
        return
    if mode not in (DATA_BEFORE, OP_KEY_ONLY):
        raise HoodieNotSupportedError(f"The table logs CDC in mode {mode}, which is not one of Hudi's "
                                      "supplemental logging modes; its CDC logs cannot be read.")
    after = _images_by_key(table, stat.path or "", data_schema)
    before = _images_by_key(table, _previous_base_file(table, partition, stat), data_schema) \
        if mode == OP_KEY_ONLY else {}
    for rec, _block_instant in records:
        op, key = rec.get("op"), rec.get("record_key")
        old = rec.get("before") if mode == DATA_BEFORE else (_image_of(before, key, stat, "previous") if op != INSERT
                                                             else None)
        new = _image_of(after, key, stat, "new") if op != DELETE else None
        yield op, instant, old, new


def _image_of(images: dict[str, dict], key: str | None, stat: WriteStat, which: str) -> dict:
    """The image of ``key`` in a base file of the stat's group; a logged key missing there means
    the files are not the ones the log was written with: no image is made up."""
    image = images.get(key) if key is not None else None
    if image is None:
        raise HoodieCorruptedDataError(
            f"The CDC log of file group {stat.file_id} names record key {key!r}, which the {which} base file of the "
            "group does not hold; the change's image cannot be told. The files were rewritten outside the timeline.")
    return image


def _images_by_key(table: HoodieTable, rel_path: str, data_schema: dict[str, Any]) -> dict[str, dict]:
    """Every row of a base file as an image, by its stored record key (``_hoodie_record_key``)."""
    rows = pq.read_table(table.storage.open_input(table.storage.join(table.base_path, rel_path)))
    if RECORD_KEY not in rows.column_names or rows.column(RECORD_KEY).null_count:
        raise HoodieNotSupportedError(
            f"{rel_path} stores no record keys (hoodie.populate.meta.fields=false); the images of a CDC log of mode "
            f"{table.config.cdc_logging_mode} are found by record key. Query this table's CDC with Hudi's Spark reader.")
    return dict(zip(rows.column(RECORD_KEY).cast(pa.string()).to_pylist(), _table_images(rows, data_schema)))


def _replaced_group_changes(table: HoodieTable, instant: str, partition: str, file_id: str,
                            data_schema: dict[str, Any], completed: list[str]) -> Iterator[Change]:
    """REPLACE_COMMIT: every row of the group's last committed slice before ``instant`` is deleted."""
    done = set(completed)
    first = completed[0] if completed else None
    for group in table.file_system_view(table.timeline).all_file_groups(partition):
        if group.file_id != file_id:
            continue
        slices = [s for s in group.slices if s.base_instant < instant
                  and (s.base_instant in done or (first is not None and s.base_instant < first))]
        if not slices:
            break
        last = max(slices, key=lambda s: s.base_instant)
        slice_ = FileSlice(partition, file_id, last.base_instant, last.base_file,
                           [lf for lf in last.log_files if not lf.suffix])
        rows = _slice_rows(table, slice_, [t for t in completed if t < instant])
        for image in _table_images(rows, data_schema):
            yield DELETE, instant, image, None
        return
    raise HoodieCorruptedDataError(
        f"File group {file_id} in '{partition}', replaced by commit {instant}, has no files left (cleaned?); the "
        "deletes of the replace cannot be told. Query a range the cleaner still retains.")


def _slice_rows(table: HoodieTable, slice_: FileSlice, valid: list[str]) -> pa.Table:
    """The slice's rows merged with only the log blocks of ``valid`` commits (none: a slice not
    yet written)."""
    rows = read_file_slice(table.storage, slice_, SliceReadOptions(
        merge_config=MergeConfig.from_properties(table.config), as_of=valid[-1],
        valid_instants=frozenset(valid))) if valid else None
    if rows is None or RECORD_KEY not in rows.column_names:
        return pa.table({RECORD_KEY: pa.array([], pa.string()), COMMIT_TIME: pa.array([], pa.string())})
    return rows


def _log_file_changes(table: HoodieTable, instant: str, partition: str, stat: WriteStat,
                      data_schema: dict[str, Any], completed: list[str]) -> Iterator[Change]:
    """LOG_FILE: the changes a delta commit's log append made to its file slice."""
    slice_ = _slice_of_log(table, partition, stat)
    before = _slice_rows(table, slice_, [t for t in completed if t < instant])
    after = _slice_rows(table, slice_, [t for t in completed if t <= instant])
    before_rows = dict(zip(before.column(RECORD_KEY).to_pylist(), _table_images(before, data_schema)))
    after_keys, after_times = after.column(RECORD_KEY).to_pylist(), after.column(COMMIT_TIME).to_pylist()
    for key, written, image in zip(after_keys, after_times, _table_images(after, data_schema)):
        if written == instant:
            old = before_rows.get(key)
            yield (UPDATE if old is not None else INSERT), instant, old, image
    gone = set(before_rows) - set(after_keys)
    for key, old in before_rows.items():
        if key in gone:
            yield DELETE, instant, old, None


def _slice_of_log(table: HoodieTable, partition: str, stat: WriteStat) -> FileSlice:
    """The file slice holding the stat's log file, with every data log file of it (the stat's
    ``logFiles`` name only the files of its commit on 1.x tables); blocks of later commits are
    left out by the read's valid instants."""
    name = (stat.path or "").rsplit("/", 1)[-1]
    for group in table.file_system_view(table.timeline).all_file_groups(partition):
        if group.file_id != stat.file_id:
            continue
        for slice_ in group.slices:
            if any(lf.file_name == name for lf in slice_.log_files):
                return FileSlice(partition, slice_.file_id, slice_.base_instant, slice_.base_file,
                                 [lf for lf in slice_.log_files if not lf.suffix])
    raise HoodieCorruptedDataError(
        f"Log file {stat.path} of a commit in the CDC window is not on storage (cleaned or compacted away?); its "
        "changes cannot be told. Query a range the cleaner still retains.")


def _cdc_records(table: HoodieTable, rel_path: str) -> Iterator[tuple[dict[str, Any], str]]:
    """The records of one CDC log file, each with the instant time of its block."""
    data = table.storage.read_bytes(table.storage.join(table.base_path, rel_path))
    for block in read_log_blocks_from_bytes(data, rel_path):
        if block.block_type != BlockType.CDC_DATA:
            continue
        for rec in decode_avro_records(block):
            yield rec, block.instant_time


def _previous_base_file(table: HoodieTable, partition: str, stat: WriteStat) -> str:
    """The base file of the group written at the stat's ``prevCommit`` (a delete emptied it)."""
    part_dir = table.storage.join(table.base_path, partition) if partition else table.base_path
    for status in table.storage.list_dir(part_dir):
        parsed = parse_base_file_name(status.name)
        if parsed is not None and parsed.file_id == stat.file_id and parsed.instant == stat.prev_commit:
            return f"{partition}/{status.name}" if partition else status.name
    raise HoodieCorruptedDataError(
        f"The base file of file group {stat.file_id} at {stat.prev_commit} is gone (cleaned?); the deletes of a later "
        "commit cannot be told. Query a range the cleaner still retains.")


def _file_images(table: HoodieTable, rel_path: str, data_schema: dict[str, Any]) -> list[dict]:
    """Every row of a base file as an image in the table's data schema."""
    return _table_images(pq.read_table(table.storage.open_input(table.storage.join(table.base_path, rel_path))),
                         data_schema)


def _table_images(rows: pa.Table, data_schema: dict[str, Any]) -> list[dict]:
    """Every row of ``rows`` as an Avro-form image of the table's data columns."""
    if rows.num_rows == 0:
        return []
    names = [f["name"] for f in data_schema["fields"]]
    present = [n for n in names if n in rows.column_names]
    return list(arrow_to_avro_records(rows.select(present), {**data_schema, "fields": [
        f for f in data_schema["fields"] if f["name"] in present]}))


__all__ = ["CDC_OUTPUT_SCHEMA", "DATA_CHANGE_OPERATIONS", "image_json", "read_cdc"]
