"""The expression-index functions without Spark: what Spark's documentation says they return,
written down (the comparison with a real Spark session is tests/spark/
test_expression_index_functions_spark.py), Hudi 1.1's option rules, and the refusals by name."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError
from airflow_hoodie.table.expression_index.functions import (
    FUNCTIONS,
    evaluate,
    expression_function,
)

UTC = dt.timezone.utc


def _ts(*values: str | None) -> pa.Array:
    return pa.array([None if v is None else dt.datetime.fromisoformat(v).replace(tzinfo=UTC) for v in values],
                    pa.timestamp("us", tz="UTC"))


def test_the_functions_are_hudi_1_1s_list_without_the_ones_not_evaluated():
    assert sorted(FUNCTIONS) == sorted([
        "identity", "from_unixtime", "unix_timestamp", "date_format", "to_date", "to_timestamp", "year", "month",
        "day", "hour", "lower", "upper", "substring", "trim", "ltrim", "rtrim", "regexp_extract"])


@pytest.mark.parametrize("name", ["concat", "split", "date_add", "md5", "LOWER", ""])
def test_any_other_function_is_refused_by_name(name):
    with pytest.raises(HoodieNotSupportedError, match=repr(name).replace("(", r"\(")):
        expression_function(name)
    with pytest.raises(HoodieNotSupportedError):
        evaluate(name, pa.array(["a"]))


def test_options_follow_hudi_unknown_ones_and_missing_required_ones_are_errors():
    with pytest.raises(HoodieConfigError, match="numentries"):
        evaluate("lower", pa.array(["A"]), {"numentries": "10"})
    assert evaluate("lower", pa.array(["A"]), {"numentries": "10", "expr": "lower"},
                    index_type="bloom_filters").to_pylist() == ["a"]
    with pytest.raises(HoodieConfigError, match="format"):
        evaluate("date_format", _ts("2024-01-01"))
    with pytest.raises(HoodieConfigError, match="'len'"):
        evaluate("substring", pa.array(["abc"]), {"pos": "1"})
    with pytest.raises(HoodieConfigError, match="group index is 3"):
        evaluate("regexp_extract", pa.array(["abc"]), {"pattern": "(a)(b)", "idx": "3"})


def test_pattern_letters_spark_does_not_take_are_refused_by_letter():
    with pytest.raises(HoodieNotSupportedError, match="letter 'Q'"):
        evaluate("date_format", _ts("2024-01-01"), {"format": "yyyy Q"})
    with pytest.raises(HoodieNotSupportedError, match="letter 'E'.*parsing"):  # Spark: formatting only
        evaluate("unix_timestamp", pa.array(["Mon 2024"]), {"format": "EEE yyyy"})
    with pytest.raises(HoodieNotSupportedError, match="optional"):
        evaluate("to_date", pa.array(["2024"]), {"format": "yyyy[-MM]"})


def test_datetime_functions_in_the_session_zone_across_dst():
    stamps = _ts("2024-03-10 06:59:59", "2024-03-10 07:00:00", "2024-11-03 05:30:00", "2024-11-03 06:30:00", None)
    ny = "America/New_York"
    assert evaluate("hour", stamps, time_zone=ny).to_pylist() == [1, 3, 1, 1, None]
    assert evaluate("date_format", stamps, {"format": "yyyy-MM-dd HH:mm a"}, ny).to_pylist() == [
        "2024-03-10 01:59 AM", "2024-03-10 03:00 AM", "2024-11-03 01:30 AM", "2024-11-03 01:30 AM", None]
    # a wall-clock time in the spring-forward gap moves forward by the gap; in the fall-back overlap
    # the earlier offset wins (java.time's ZonedDateTime.of)
    parsed = evaluate("unix_timestamp", pa.array(["2024-03-10 02:30:00", "2024-11-03 01:30:00", "2024-02-30 00:00:00"]),
                      {}, ny)
    assert parsed.to_pylist() == [1710055800, 1730611800, None]


def test_from_unixtime_and_unix_timestamp_round_trip_in_a_half_hour_zone():
    seconds = pa.array([0, -1, 1700000000, None], pa.int64())
    text = evaluate("from_unixtime", seconds, {}, "Asia/Kolkata")
    assert text.to_pylist() == ["1970-01-01 05:30:00", "1970-01-01 05:29:59", "2023-11-15 03:43:20", None]
    assert evaluate("unix_timestamp", text, {}, "Asia/Kolkata").to_pylist() == [0, -1, 1700000000, None]


def test_text_is_cast_as_spark_casts_it_and_invalid_text_is_null():
    texts = pa.array(["2024-01-31", " 2024-1-5 ", "2024", "2024-02-30", "31/01/2024", None])
    assert evaluate("to_date", texts).to_pylist() == [dt.date(2024, 1, 31), dt.date(2024, 1, 5), dt.date(2024, 1, 1),
                                                      None, None, None]
    assert evaluate("year", texts).to_pylist() == [2024, 2024, 2024, None, None, None]
    assert evaluate("to_date", pa.array(["31/01/2024", "31/1/2024"]), {"format": "dd/MM/yyyy"}).to_pylist() == [
        dt.date(2024, 1, 31), None]
    stamps = evaluate("to_timestamp", pa.array(["2024-01-31T10:11:12.5+05:30", "2024-01-31 10"]))
    assert [v.astimezone(UTC) for v in stamps.to_pylist()] == [dt.datetime(2024, 1, 31, 4, 41, 12, 500000, UTC),
                                                              dt.datetime(2024, 1, 31, 10, tzinfo=UTC)]


def test_spark_patterns_format_text_months_weekdays_fractions_and_quotes():
    stamps = _ts("2024-02-29 13:04:05.123456")
    fmt = "EEEE, d MMMM yy 'at' hh:mm:ss.SSSS a ''D''"
    assert evaluate("date_format", stamps, {"format": fmt}).to_pylist() == [
        "Thursday, 29 February 24 at 01:04:05.1234 PM '60'"]


def test_string_functions_take_spark_semantics():
    words = pa.array(["straße", "İx", "  a b ", "\ta", None])
    assert evaluate("upper", words).to_pylist() == ["STRASSE", "İX", "  A B ", "\tA", None]
    assert evaluate("trim", words).to_pylist() == ["straße", "İx", "a b", "\ta", None]  # only spaces
    assert evaluate("ltrim", pa.array(["xxaxx"]), {"trimString": "x"}).to_pylist() == ["axx"]
    texts = pa.array(["abcdef", "ab", "日本語", None])
    assert evaluate("substring", texts, {"pos": "-3", "len": "2"}).to_pylist() == ["de", "a", "日本", None]
    assert evaluate("substring", texts, {"pos": "0", "len": "2"}).to_pylist() == ["ab", "ab", "日本", None]
    assert evaluate("substring", texts, {"pos": "2", "len": "-1"}).to_pylist() == ["", "", "", None]
    found = evaluate("regexp_extract", pa.array(["a-12", "b", "é7"]), {"pattern": r"(\w)-?(\d+)?", "idx": "2"})
    assert found.to_pylist() == ["12", "", ""]  # a group that took no part, and Java's ASCII-only \w


def test_identity_and_chunked_input():
    chunked = pa.chunked_array([["a", None], ["B"]])
    assert evaluate("identity", chunked).to_pylist() == ["a", None, "B"]
    assert evaluate("lower", chunked).to_pylist() == ["a", None, "b"]


def test_inputs_spark_would_print_differently_are_refused_not_guessed():
    assert evaluate("upper", pa.array([1, None], pa.int64())).to_pylist() == ["1", None]
    with pytest.raises(HoodieNotSupportedError, match="input type double"):
        evaluate("upper", pa.array([1.0]))
    with pytest.raises(HoodieNotSupportedError, match="input type int64"):
        evaluate("date_format", pa.array([1]), {"format": "yyyy"})
