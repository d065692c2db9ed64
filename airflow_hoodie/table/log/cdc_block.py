"""Change-data-capture (CDC) log files: Hudi's ``.cdc`` logs, written beside a COW merge.

A table with ``hoodie.table.cdc.enabled=true`` asks every writer that rewrites a file group to
log what changed in it, so a CDC query need not diff file versions. Hudi's merge handle with
change log writes one CDC_DATA block per flush into a log file of the file group, named like a
log file of the new base instant with a suffix after the write token (``-cdc`` on 0.14/0.15,
``.cdc`` on 1.x: the table's release line knows which). The block's record depends on the
supplemental logging mode (HoodieCDCUtils.schemaBySupplementalLoggingMode, HoodieCDCLogger):

* ``DATA_BEFORE_AFTER`` (Hudi's default): ``{op, ts_ms, before, after}``, the row images in the
  table's data schema (no meta fields) and ``ts_ms`` the commit's instant time;
* ``DATA_BEFORE``: ``{op, record_key, before}``; a reader takes the after image from the new
  base file;
* ``OP_KEY_ONLY``: ``{op, record_key}`` (Hudi's fixed schema ``Record``, union order string
  first, no defaults); a reader takes both images from the file slices before and after.

``op`` is one of ``i``/``u``/``d``, ``record_key`` the record's Hudi key (``_hoodie_record_key``).

Pure format code: building the block and naming the file; the write handle decides which rows
changed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.log.cdc_bulk import CdcSegment, cdc_records_content
from airflow_hoodie.table.log.data_block import encode_avro_records
from airflow_hoodie.table.log.log_block import (
    INT32,
    LOG_BLOCK_CONTENT_VERSION,
    BlockType,
    LogBlock,
    base_headers,
    writer_schema_json,
)
from airflow_hoodie.table.schema.avro_convert import arrow_to_avro_records

#: table property values of the supplemental logging mode (HoodieCDCSupplementalLoggingMode);
#: 0.14 spells them lower case, 1.x upper case; both parse case-insensitively
OP_KEY_ONLY = "OP_KEY_ONLY"
DATA_BEFORE = "DATA_BEFORE"
DATA_BEFORE_AFTER = "DATA_BEFORE_AFTER"
LOGGING_MODES = (OP_KEY_ONLY, DATA_BEFORE, DATA_BEFORE_AFTER)

#: the CDC operations of HoodieCDCOperation
INSERT, UPDATE, DELETE = "i", "u", "d"


def _nullable_string() -> list[str]:
    return ["null", "string"]


#: the OP_KEY_ONLY record (HoodieCDCUtils.CDC_SCHEMA_OP_AND_RECORDKEY): a fixed schema, not
#: derived from the table's, with Hudi's own union order (string first) and no defaults
OP_KEY_ONLY_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "Record",
    "fields": [{"name": "op", "type": ["string", "null"]}, {"name": "record_key", "type": ["string", "null"]}],
}


def cdc_schema(data_schema: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """The CDC record schema of ``mode`` for a table whose data schema (no meta fields) is
    ``data_schema``. The two image modes make record ``CDC`` in the table schema's namespace,
    every field nullable with an empty doc and a null default (HoodieCDCUtils.createCDCSchema):
    ``{op, ts_ms, before, after}`` or ``{op, record_key, before}``. The image is the table's
    record itself, so a reader resolves it as the table's row."""
    if mode == OP_KEY_ONLY:
        return copy.deepcopy(OP_KEY_ONLY_SCHEMA)
    if mode not in (DATA_BEFORE, DATA_BEFORE_AFTER):
        raise HoodieConfigError(f"{mode!r} is not a CDC supplemental logging mode (one of {', '.join(LOGGING_MODES)})")
    image = copy.deepcopy(dict(data_schema))
    op = {"name": "op", "type": _nullable_string(), "doc": "", "default": None}
    before = {"name": "before", "type": ["null", image], "doc": "", "default": None}
    if mode == DATA_BEFORE:
        fields = [op, {"name": "record_key", "type": _nullable_string(), "doc": "", "default": None}, before]
    else:
        fields = [op, {"name": "ts_ms", "type": _nullable_string(), "doc": "", "default": None}, before,
                  # the second use of the record type names it, as Avro requires
                  {"name": "after", "type": ["null", _full_name(image)], "doc": "", "default": None}]
    schema: dict[str, Any] = {"type": "record", "name": "CDC", "fields": fields}
    if image.get("namespace"):
        schema["namespace"] = image["namespace"]
    return schema


def _full_name(record: Mapping[str, Any]) -> str:
    ns = record.get("namespace")
    return f"{ns}.{record['name']}" if ns else str(record["name"])


#: one logged change: op, record key, before image, after image (Avro-ready dicts of the data
#: columns, None where the change has none or the mode does not log it)
CdcChange = tuple[str, str, "dict | None", "dict | None"]


def cdc_records(instant_time: str, mode: str, changes: Sequence[CdcChange]) -> list[dict[str, Any]]:
    """The CDC records of ``changes`` in ``mode``, each with exactly the fields Hudi's CDC logger
    puts in it (HoodieCDCLogger's transformer of that mode)."""
    if mode == DATA_BEFORE_AFTER:
        return [{"op": op, "ts_ms": instant_time, "before": before, "after": after}
                for op, _key, before, after in changes]
    if mode == DATA_BEFORE:
        return [{"op": op, "record_key": key, "before": before} for op, key, before, _after in changes]
    if mode == OP_KEY_ONLY:
        return [{"op": op, "record_key": key} for op, key, _before, _after in changes]
    raise HoodieConfigError(f"{mode!r} is not a CDC supplemental logging mode (one of {', '.join(LOGGING_MODES)})")


def cdc_data_block(instant_time: str, data_schema: Mapping[str, Any], mode: str,
                   changes: Sequence[CdcChange]) -> LogBlock:
    """One CDC_DATA block of ``changes`` logged in ``mode``, with the instant-time and schema
    headers Hudi's CDC logger sets."""
    schema_json = writer_schema_json(cdc_schema(data_schema, mode))
    records = cdc_records(instant_time, mode, changes)
    return LogBlock(BlockType.CDC_DATA, base_headers(instant_time, schema_json, None), {},
                    encode_avro_records(records, schema_json))


def segment_changes(segments: Sequence[CdcSegment], data_schema: Mapping[str, Any]) -> list[CdcChange]:
    """The per-record change list of ``segments`` (Avro-ready image dicts, None where a segment
    has no image): the reference path's input, for schemas the bulk encoder declines."""
    names = [f["name"] for f in data_schema["fields"]]

    def images(rows: Any, n: int) -> list[Any]:
        return [None] * n if rows is None else list(arrow_to_avro_records(rows.select(names), dict(data_schema)))

    changes: list[CdcChange] = []
    for seg in segments:
        n = seg.num_rows
        changes += [(seg.op, k, b, a) for k, b, a in zip(seg.keys.cast("string").to_pylist(),
                                                          images(seg.before, n), images(seg.after, n))]
    return changes


def cdc_segments_block(instant_time: str, data_schema: Mapping[str, Any], mode: str,
                       segments: Sequence[CdcSegment]) -> LogBlock:
    """:func:`cdc_data_block` of the changes ``segments`` hold, encoded column by column when
    the data schema allows (:mod:`cdc_bulk`, the same bytes at a fraction of the cost), else
    through the per-record reference path."""
    schema_json = writer_schema_json(cdc_schema(data_schema, mode))
    header = INT32.pack(LOG_BLOCK_CONTENT_VERSION) + INT32.pack(sum(s.num_rows for s in segments))
    content = cdc_records_content(instant_time, data_schema, mode, segments, header)
    if content is None:
        return cdc_data_block(instant_time, data_schema, mode, segment_changes(segments, data_schema))
    return LogBlock(BlockType.CDC_DATA, base_headers(instant_time, schema_json, None), {}, content)


def cdc_log_file_name(file_id: str, instant_time: str, write_token: str, suffix: str) -> str:
    """The name of the CDC log of ``file_id`` written at ``instant_time``: the first log version
    of that instant, then ``suffix`` (``-cdc`` or ``.cdc``, from the table's release line)."""
    return f".{file_id}_{instant_time}.log.1_{write_token}{suffix}"


def is_cdc_log_name(name: str) -> bool:
    """Whether ``name`` is a CDC log file (either release line's suffix)."""
    return ".log." in name and name.endswith((".cdc", "-cdc"))


__all__ = ["DATA_BEFORE", "DATA_BEFORE_AFTER", "DELETE", "INSERT", "LOGGING_MODES", "OP_KEY_ONLY",
           "OP_KEY_ONLY_SCHEMA", "UPDATE", "CdcChange", "CdcSegment", "cdc_data_block", "cdc_segments_block", "cdc_log_file_name", "cdc_records",
           "cdc_schema", "is_cdc_log_name", "segment_changes"]
