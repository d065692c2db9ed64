"""Spark SQL's string functions over Arrow columns.

Where Arrow's kernel agrees with Java it is used (trim, substring by code point); where it does
not, the function maps each distinct value once with Python, whose full Unicode case mapping is
Java's (``'ß'.upper()`` is ``'SS'`` in both; Arrow's simple mapping keeps ``ß``), and whose ``re``
reads the patterns Hudi users write for ``regexp_extract`` as ``java.util.regex`` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError


def _text(values: pa.Array, function: str) -> pa.Array:
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return values
    if pa.types.is_integer(values.type) or pa.types.is_boolean(values.type):
        return values.cast(pa.string())  # as Java prints them; a double's text differs ("1.0" vs "1")
    raise HoodieNotSupportedError(f"expression index function {function}: input type {values.type} is not supported")


def map_distinct(values: pa.Array, fn: Callable[[str], str]) -> pa.Array:
    """``fn`` over each distinct string once; nulls stay null."""
    encoded = pc.dictionary_encode(values)
    mapped = pa.array([fn(v) for v in encoded.dictionary.to_pylist()], pa.string())
    return pc.take(mapped, encoded.indices)


def lower(values: pa.Array) -> pa.Array:
    return map_distinct(_text(values, "lower"), str.lower)


def upper(values: pa.Array) -> pa.Array:
    return map_distinct(_text(values, "upper"), str.upper)


def trim(values: pa.Array, trim_string: str | None = None) -> pa.Array:
    """Both ends stripped of the characters of ``trim_string`` (Spark: only the space by default)."""
    return pc.utf8_trim(_text(values, "trim"), characters=" " if trim_string is None else trim_string)


def ltrim(values: pa.Array, trim_string: str | None = None) -> pa.Array:
    return pc.utf8_ltrim(_text(values, "ltrim"), characters=" " if trim_string is None else trim_string)


def rtrim(values: pa.Array, trim_string: str | None = None) -> pa.Array:
    return pc.utf8_rtrim(_text(values, "rtrim"), characters=" " if trim_string is None else trim_string)


def substring(values: pa.Array, pos: int, length: int) -> pa.Array:
    """Spark's ``substring(s, pos, len)``: 1-based, 0 is 1, a negative ``pos`` counts from the end,
    characters before the start of the string are counted but not returned."""
    text = _text(values, "substring")
    if length <= 0:
        return pc.if_else(pc.is_valid(text), "", pa.nulls(len(text), pa.string()))
    if pos > 0:
        start, stop = pos - 1, pos - 1 + length
    elif pos == 0:
        start, stop = 0, length
    else:
        start, stop = pos, (pos + length if pos + length < 0 else 2**31 - 1)
    return pc.utf8_slice_codeunits(text, start=start, stop=stop)


def regexp_extract(values: pa.Array, pattern: str, idx: int = 1) -> pa.Array:
    """Group ``idx`` of the first match; ``""`` when nothing matches or the group did not take part."""
    try:
        regex = re.compile(pattern, re.ASCII)  # java.util.regex: \w, \d, \s, \b and (?i) are ASCII-only
    except re.error as exc:
        raise HoodieNotSupportedError(f"regexp_extract pattern {pattern!r} is not a regex this implementation "
                                      f"reads as java.util.regex does: {exc}") from exc
    if idx < 0 or idx > regex.groups:
        raise HoodieConfigError(f"regexp_extract: the regex has {regex.groups} groups, but the group index is {idx}")

    def extract(value: str) -> str:
        match = regex.search(value)
        return (match.group(idx) or "") if match else ""

    return map_distinct(_text(values, "regexp_extract"), extract)
