"""How ``airflow-hoodie`` prints: plain JSON data from Arrow rows, Avro records and
dataclasses, and column-aligned text tables, the same for every subcommand."""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
from collections.abc import Mapping, Sequence
from typing import Any, TextIO


def to_jsonable(value: Any) -> Any:
    """Plain JSON data for values from Arrow rows, Avro records and dataclasses."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            text = raw.decode("utf-8")
            if text.isprintable():
                return text
        except UnicodeDecodeError:
            pass
        return {"base64": base64.b64encode(raw).decode("ascii")}
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if hasattr(value, "value") and hasattr(value, "name") and not isinstance(value, type):
        return getattr(value, "name")  # enums
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    return str(value)


def dump_json(obj: Any, out: TextIO, indent: int | None = 2) -> None:
    out.write(json.dumps(to_jsonable(obj), indent=indent, ensure_ascii=False))
    out.write("\n")


def cell(value: Any, width: int = 60) -> str:
    if value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(to_jsonable(value), ensure_ascii=False)
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def print_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], out: TextIO, width: int = 60) -> None:
    """Column-aligned text table; an empty result prints the header and ``(0 rows)``."""
    cells = [[cell(r.get(c), width) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for row in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() + "\n")
    if not rows:
        out.write("(0 rows)\n")
