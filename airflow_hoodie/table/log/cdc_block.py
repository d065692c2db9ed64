"""Change-data-capture (CDC) log files: Hudi's ``.cdc`` logs, written beside a COW merge.

A table with ``hoodie.table.cdc.enabled=true`` asks every writer that rewrites a file group to
log what changed in it, so a CDC query need not diff file versions. Hudi's merge handle with
change log writes one CDC_DATA block per flush into a log file of the file group, named like a
log file of the new base instant with a suffix after the write token (``-cdc`` on 0.14/0.15,
``.cdc`` on 1.x: the table's release line knows which). The block's schema depends on the
supplemental logging mode; in ``DATA_BEFORE_AFTER`` (Hudi's default, the only mode we write)
a record is ``{op, ts_ms, before, after}`` with the row images in the table's data schema (no
meta fields), ``op`` one of ``i``/``u``/``d`` and ``ts_ms`` the commit's instant time.

Pure format code: building the block and naming the file; the write handle decides which rows
changed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_hoodie.table.log.data_block import encode_avro_records
from airflow_hoodie.table.log.log_block import (
    BlockType,
    LogBlock,
    base_headers,
    writer_schema_json,
)

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


def cdc_schema(data_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``DATA_BEFORE_AFTER`` CDC record schema of a table whose data schema (no meta fields)
    is ``data_schema``: record ``CDC`` in the table schema's namespace, every field nullable with
    a null default (HoodieCDCUtils.createCDCSchema). The image is the table's record itself, so a
    reader resolves it as the table's row."""
    image = copy.deepcopy(dict(data_schema))
    schema: dict[str, Any] = {
        "type": "record", "name": "CDC",
        "fields": [
            {"name": "op", "type": _nullable_string(), "doc": "", "default": None},
            {"name": "ts_ms", "type": _nullable_string(), "doc": "", "default": None},
            {"name": "before", "type": ["null", image], "doc": "", "default": None},
            # the second use of the record type names it, as Avro requires
            {"name": "after", "type": ["null", _full_name(image)], "doc": "", "default": None},
        ],
    }
    if image.get("namespace"):
        schema["namespace"] = image["namespace"]
    return schema


def _full_name(record: Mapping[str, Any]) -> str:
    ns = record.get("namespace")
    return f"{ns}.{record['name']}" if ns else str(record["name"])


def cdc_data_block(instant_time: str, data_schema: Mapping[str, Any],
                   changes: Sequence[tuple[str, dict | None, dict | None]]) -> LogBlock:
    """One CDC_DATA block of ``changes`` (op, before image, after image as Avro-ready dicts),
    with the instant-time and schema headers Hudi's CDC logger sets."""
    schema_json = writer_schema_json(cdc_schema(data_schema))
    records = [{"op": op, "ts_ms": instant_time, "before": before, "after": after}
               for op, before, after in changes]
    return LogBlock(BlockType.CDC_DATA, base_headers(instant_time, schema_json, None), {},
                    encode_avro_records(records, schema_json))


def cdc_log_file_name(file_id: str, instant_time: str, write_token: str, suffix: str) -> str:
    """The name of the CDC log of ``file_id`` written at ``instant_time``: the first log version
    of that instant, then ``suffix`` (``-cdc`` or ``.cdc``, from the table's release line)."""
    return f".{file_id}_{instant_time}.log.1_{write_token}{suffix}"


def is_cdc_log_name(name: str) -> bool:
    """Whether ``name`` is a CDC log file (either release line's suffix)."""
    return ".log." in name and name.endswith((".cdc", "-cdc"))


__all__ = ["DATA_BEFORE", "DATA_BEFORE_AFTER", "DELETE", "INSERT", "LOGGING_MODES", "OP_KEY_ONLY", "UPDATE",
           "cdc_data_block", "cdc_log_file_name", "cdc_schema", "is_cdc_log_name"]
