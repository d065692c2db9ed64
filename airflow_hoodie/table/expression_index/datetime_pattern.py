"""Spark's datetime patterns (``sql-ref-datetime-pattern``), for formatting and parsing Arrow columns.

Spark 3+ formats and parses with ``java.time.DateTimeFormatter`` built from the pattern (case-
insensitive parsing, strict resolution: 2024-02-30 is no date, and then the value is null) and a
second fraction that parses 1 up to the letter count of digits. Supported letters: ``y M L d D H
h k K m s S a`` for both, ``E`` for formatting only (Spark refuses it for parsing). A pattern with
any other letter, or an optional section, is refused by name rather than guessed. Values are
wall-clock microseconds (``session_zone`` turns them into instants).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.expression_index.session_zone import MICROS_PER_DAY
from airflow_hoodie.table.keygen.joda_zone import (
    civil_from_days,
    days_from_civil,
)

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_FORMAT_LETTERS = frozenset("yMLdDHhkKmsSaE")
PARSE_LETTERS = frozenset("yMLdDHhkKmsSa")
#: the widest value of each numeric letter written with one letter
MAX_DIGITS = {"M": 2, "L": 2, "d": 2, "D": 3, "H": 2, "h": 2, "k": 2, "K": 2, "m": 2, "s": 2}


@dataclass(frozen=True)
class Token:
    """A run of one pattern letter, or literal text (``letter`` empty)."""

    letter: str
    count: int = 0
    text: str = ""


@lru_cache(maxsize=128)
def tokenize(pattern: str) -> tuple[Token, ...]:
    """The pattern's letter runs and literals; quotes as ``DateTimeFormatter`` reads them."""
    tokens: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "'":
            end = i + 1
            text = []
            while end < n:
                if pattern[end] == "'":
                    if end + 1 < n and pattern[end + 1] == "'":
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            tokens.append(Token("", text="".join(text) if end > i + 1 else "'"))
            i = end + 1
        elif ch.isascii() and ch.isalpha():
            end = i
            while end < n and pattern[end] == ch:
                end += 1
            tokens.append(Token(ch, end - i))
            i = end
        elif ch in "[]{}#":
            raise HoodieNotSupportedError(f"datetime pattern {pattern!r}: {ch!r} (optional sections and "
                                          "reserved characters) is not supported by expression indexes")
        else:
            tokens.append(Token("", text=ch))
            i += 1
    return tuple(tokens)


def checked_tokens(pattern: str, allowed: frozenset[str], use: str) -> tuple[Token, ...]:
    """The tokens of ``pattern``; a letter outside ``allowed`` is refused by name."""
    tokens = tokenize(pattern)
    for tok in tokens:
        if tok.letter and tok.letter not in allowed:
            raise HoodieNotSupportedError(
                f"datetime pattern {pattern!r}: letter {tok.letter!r} is not supported for {use} "
                f"by expression indexes (supported: {''.join(sorted(allowed))})")
    return tokens


def _padded(values: np.ndarray, width: int) -> pa.Array:
    text = pc.cast(pa.array(values, pa.int64()), pa.string())
    return pc.utf8_lpad(text, width=width, padding="0") if width > 1 else text


def _format_token(tok: Token, fields: dict[str, np.ndarray]) -> pa.Array:
    letter, k = tok.letter, tok.count
    if letter == "y":
        year = fields["year"]
        return _padded(year % 100, 2) if k == 2 else _padded(year, k)
    if letter in "ML" and k >= 3:
        names = [m[:3] if k == 3 else (m[0] if k == 5 else m) for m in MONTHS]
        return pc.take(pa.array(names), pa.array(fields["month"] - 1))
    if letter == "E":
        names = [d[:3] if k <= 3 else (d[0] if k == 5 else d) for d in _WEEKDAYS]
        return pc.take(pa.array(names), pa.array(fields["weekday"]))
    if letter == "a":
        return pc.take(pa.array(["AM", "PM"]), pa.array((fields["hour"] >= 12).astype(np.int64)))
    if letter == "S":
        digits = pc.utf8_lpad(pc.cast(pa.array(fields["micros"] * 1000), pa.string()), width=9, padding="0")
        return pc.utf8_slice_codeunits(digits, 0, k)
    hour = fields["hour"]
    value = {"M": fields["month"], "L": fields["month"], "d": fields["day"], "D": fields["doy"],
             "H": hour, "m": fields["minute"], "s": fields["second"], "K": hour % 12,
             "h": np.where(hour % 12 == 0, 12, hour % 12), "k": np.where(hour == 0, 24, hour)}[letter]
    return _padded(value, k)


def local_fields(local: np.ndarray) -> dict[str, np.ndarray]:
    """Calendar fields of wall-clock microseconds (proleptic Gregorian, as Spark 3+)."""
    days = np.floor_divide(local, MICROS_PER_DAY)
    tod = local - days * MICROS_PER_DAY
    year, month, day = civil_from_days(days)
    seconds = tod // 1_000_000
    return {"year": year, "month": month, "day": day, "doy": days - days_from_civil(year, 1, 1) + 1,
            "weekday": (days + 3) % 7, "hour": seconds // 3600, "minute": seconds // 60 % 60,
            "second": seconds % 60, "micros": tod % 1_000_000}


def format_local(local: np.ndarray, pattern: str) -> pa.Array:
    """Wall-clock microseconds as text in the Spark ``pattern``."""
    tokens = checked_tokens(pattern, _FORMAT_LETTERS, "formatting")
    if len(local) == 0:
        return pa.array([], pa.string())
    fields = local_fields(local)
    parts = [pa.array([tok.text] * len(local), pa.string()) if not tok.letter else _format_token(tok, fields)
             for tok in tokens]
    if not parts:
        return pa.array([""] * len(local), pa.string())
    return pc.binary_join_element_wise(*parts, "")
