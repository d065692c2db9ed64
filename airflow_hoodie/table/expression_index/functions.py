"""The functions of Hudi's expression indexes, by the name ``index.json`` gives them.

Hudi 1.1 (``ExpressionIndexSparkFunctions``) applies each function to exactly one source column,
with its arguments taken from the index options: ``format`` (datetime functions), ``pos`` and
``len`` (substring), ``pattern`` and ``idx`` (regexp_extract), ``trimString`` (trim, ltrim, rtrim);
``expr`` (the function's name again) is always allowed, and a ``bloom_filters`` index also takes
the bloom filter's options. Any other option is an error, as in Hudi. A function this module does
not evaluate, whether Hudi knows it or not, is refused by name before anything is read or written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa

from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError
from airflow_hoodie.table.expression_index import datetime_functions as dt
from airflow_hoodie.table.expression_index import string_functions as st
from airflow_hoodie.table.expression_index.session_zone import session_zone

EXPR, FORMAT, POS, LEN, PATTERN, IDX, TRIM_STRING = "expr", "format", "pos", "len", "pattern", "idx", "trimString"
#: options a bloom_filters expression index may add (HoodieExpressionIndex.BLOOM_FILTER_CONFIG_MAPPING)
BLOOM_FILTER_OPTIONS = frozenset({"filtertype", "numentries", "fpp", "maxentries"})
#: what Hudi 1.1 registers but this module does not evaluate: refused by name
HUDI_FUNCTIONS_NOT_EVALUATED = ("split", "regexp_replace", "length", "date_add", "date_sub")

Apply = Callable[[pa.Array, Mapping[str, str], str], pa.Array]


@dataclass(frozen=True)
class ExpressionFunction:
    """One function: its name, the options it accepts, and how it evaluates a column."""

    name: str
    options: frozenset[str]
    apply: Apply
    required: frozenset[str] = frozenset()


def _int(options: Mapping[str, str], key: str, function: str) -> int:
    try:
        return int(options[key])
    except (KeyError, ValueError) as exc:
        raise HoodieConfigError(f"expression index function {function} needs an integer option {key!r}") from exc


def _fn(name: str, apply: Apply, *options: str, required: tuple[str, ...] = ()) -> ExpressionFunction:
    return ExpressionFunction(name, frozenset((EXPR, *options)), apply, frozenset(required))


def _trim(fn: Callable[[pa.Array, str | None], pa.Array]) -> Apply:
    return lambda v, o, z: fn(v, o.get(TRIM_STRING))


FUNCTIONS: dict[str, ExpressionFunction] = {f.name: f for f in (
    _fn("identity", lambda v, o, z: v),
    _fn("from_unixtime", lambda v, o, z: dt.from_unixtime(v, z, o.get(FORMAT, dt.DEFAULT_FORMAT)), FORMAT),
    _fn("unix_timestamp", lambda v, o, z: dt.unix_timestamp(v, z, o.get(FORMAT, dt.DEFAULT_FORMAT)), FORMAT),
    _fn("date_format", lambda v, o, z: dt.date_format(v, z, o[FORMAT]), FORMAT, required=(FORMAT,)),
    _fn("to_date", lambda v, o, z: dt.to_date(v, z, o.get(FORMAT)), FORMAT),
    _fn("to_timestamp", lambda v, o, z: dt.to_timestamp(v, z, o.get(FORMAT)), FORMAT),
    _fn("year", lambda v, o, z: dt.year(v, z)),
    _fn("month", lambda v, o, z: dt.month(v, z)),
    _fn("day", lambda v, o, z: dt.day(v, z)),
    _fn("hour", lambda v, o, z: dt.hour(v, z)),
    _fn("lower", lambda v, o, z: st.lower(v)),
    _fn("upper", lambda v, o, z: st.upper(v)),
    _fn("substring", lambda v, o, z: st.substring(v, _int(o, POS, "substring"), _int(o, LEN, "substring")),
        POS, LEN, required=(POS, LEN)),
    _fn("trim", _trim(st.trim), TRIM_STRING),
    _fn("ltrim", _trim(st.ltrim), TRIM_STRING),
    _fn("rtrim", _trim(st.rtrim), TRIM_STRING),
    _fn("regexp_extract", lambda v, o, z: st.regexp_extract(v, o[PATTERN], _int(o, IDX, "regexp_extract")),
        PATTERN, IDX, required=(PATTERN, IDX)),
)}


def expression_function(name: str) -> ExpressionFunction:
    """The function ``name``; refused by name (``HoodieNotSupportedError``) when not evaluated here."""
    function = FUNCTIONS.get(name)  # exact, as Hudi's SPARK_FUNCTION_MAP looks it up
    if function is None:
        known = "a function Hudi 1.1 registers, not evaluated here" if name in HUDI_FUNCTIONS_NOT_EVALUATED \
            else "not an expression-index function of Hudi 1.1"
        raise HoodieNotSupportedError(
            f"expression index function {name!r} is not supported ({known}); supported: {', '.join(sorted(FUNCTIONS))}")
    return function


def check_options(function: ExpressionFunction, options: Mapping[str, str], index_type: str) -> None:
    """Hudi's option check: unknown options are an error; a required one must be there."""
    allowed = function.options | (BLOOM_FILTER_OPTIONS if index_type == "bloom_filters" else frozenset())
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise HoodieConfigError(f"options {unknown} are not valid for expression index function {function.name}")
    missing = sorted(function.required - set(options))
    if missing:
        raise HoodieConfigError(f"expression index function {function.name} requires options {missing}")


def evaluate(name: str, values: pa.Array | pa.ChunkedArray, options: Mapping[str, str] | None = None,
             time_zone: str = "UTC", index_type: str = "column_stats") -> pa.Array:
    """``name(values)`` with Spark's semantics in the session ``time_zone``."""
    function = expression_function(name)
    options = dict(options or {})
    check_options(function, options, index_type)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return function.apply(values, options, session_zone(time_zone))
