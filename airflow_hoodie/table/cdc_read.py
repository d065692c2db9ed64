"""CDC queries: the changes of the commits in a window, as Hudi's Spark CDC relation returns them.

Each completed data-changing commit in ``(start, end]`` is taken apart per written file group,
as Hudi's HoodieCDCExtractor does (HoodieCDCInferenceCase):

* AS_IS: the write stat names CDC log files (``cdcStats``): their records are the changes
  (``DATA_BEFORE_AFTER``: op, commit time and both images as logged).
* BASE_FILE_INSERT: no CDC log and every record of the new base file is an insert.
* BASE_FILE_DELETE: a delete that emptied the group: every row of the previous base file is a
  deleted one.
* LOG_FILE and REPLACE_COMMIT (merge-on-read log files, replaced file groups) need the file
  slice before the commit merged with the log; they are refused by name.

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
from airflow_hoodie.table.file_group.file_naming import parse_base_file_name
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.log.cdc_block import DATA_BEFORE_AFTER, DELETE, INSERT
from airflow_hoodie.table.log.data_block import decode_avro_records
from airflow_hoodie.table.log.log_block import BlockType
from airflow_hoodie.table.log.log_reader import read_log_blocks_from_bytes
from airflow_hoodie.table.metadata.commit_metadata import WriteStat
from airflow_hoodie.table.schema.avro_convert import arrow_to_avro_records
from airflow_hoodie.table.schema.meta_fields import META_COLUMNS

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
    if table.is_mor:
        raise HoodieNotSupportedError(
            "CDC queries of MERGE_ON_READ tables (Hudi's LOG_FILE inference) are not supported by airflow-hoodie; "
            "query the table's CDC with Hudi's Spark reader, or use query_type='incremental'.")
    rows: list[Change] = []
    for instant in instants:
        meta = table.timeline.commit_metadata(instant)
        operation = (meta.operation_type or "").upper()
        if operation not in DATA_CHANGE_OPERATIONS:
            continue
        if getattr(meta, "partition_to_replace_file_ids", None):
            raise HoodieNotSupportedError(
                f"Commit {instant.timestamp} replaced file groups ({operation}); the CDC of replaced file groups "
                "(Hudi's REPLACE_COMMIT inference) is not supported by airflow-hoodie. Query this range with "
                "Hudi's Spark reader.")
        for partition, stat in meta.iter_write_stats():
            rows.extend(_stat_changes(table, instant.timestamp, operation, partition or "", stat, data_schema))
    return pa.table([[r[0] for r in rows], [r[1] for r in rows], [image_json(r[2]) for r in rows],
                     [image_json(r[3]) for r in rows]], schema=CDC_OUTPUT_SCHEMA)


def _stat_changes(table: HoodieTable, instant: str, operation: str, partition: str, stat: WriteStat,
                  data_schema: dict[str, Any]) -> Iterator[Change]:
    """The changes one write stat stands for (HoodieCDCExtractor.parseWriteStat)."""
    if stat.cdc_stats:
        if table.config.cdc_logging_mode != DATA_BEFORE_AFTER:
            raise HoodieNotSupportedError(
                f"The table logs CDC in mode {table.config.cdc_logging_mode}; airflow-hoodie reads CDC logs of mode "
                f"{DATA_BEFORE_AFTER} only. Query this table's CDC with Hudi's Spark reader.")
        for path in sorted(stat.cdc_stats):
            yield from _logged_changes(table, path)
        return
    if parse_base_file_name((stat.path or "").rsplit("/", 1)[-1]) is None:
        raise HoodieNotSupportedError(
            f"Commit {instant} appended to log file {stat.path}; CDC of log files (Hudi's LOG_FILE inference) is not "
            "supported by airflow-hoodie. Query this range with Hudi's Spark reader.")
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


def _logged_changes(table: HoodieTable, rel_path: str) -> Iterator[Change]:
    """The records of one CDC log file."""
    data = table.storage.read_bytes(table.storage.join(table.base_path, rel_path))
    for block in read_log_blocks_from_bytes(data, rel_path):
        if block.block_type != BlockType.CDC_DATA:
            continue
        for rec in decode_avro_records(block):
            yield rec.get("op"), rec.get("ts_ms") or block.instant_time, rec.get("before"), rec.get("after")


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
    names = [f["name"] for f in data_schema["fields"]]
    rows = pq.read_table(table.storage.open_input(table.storage.join(table.base_path, rel_path)))
    present = [n for n in names if n in rows.column_names]
    return list(arrow_to_avro_records(rows.select(present), {**data_schema, "fields": [
        f for f in data_schema["fields"] if f["name"] in present]}))


__all__ = ["CDC_OUTPUT_SCHEMA", "DATA_CHANGE_OPERATIONS", "image_json", "read_cdc"]
