"""Every expression-index function against real Spark: the same inputs through Hudi's Spark
function (``ExpressionIndexSparkFunctions`` calls these ``pyspark.sql.functions``) and through
ours, on edge cases (nulls, DST gaps and overlaps, half-hour zones, pre-1970 instants, Spark
pattern letters, strict parsing, negative substring positions, unicode, regex groups).

Spark runs with ANSI mode off, the mode in which Hudi's writers evaluate these functions (invalid
input gives null rather than failing the write).
"""

from __future__ import annotations

import datetime as _dt

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from airflow_hoodie.table.expression_index.functions import evaluate

ZONES = ("UTC", "America/New_York", "Asia/Kathmandu", "-08:00")


def _micros(text: str) -> int:
    stamp = _dt.datetime.fromisoformat(text).replace(tzinfo=_dt.timezone.utc)
    return (stamp - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(microseconds=1)


INSTANTS = [_micros(t) for t in (
    "1970-01-01 00:00:00", "1969-12-31 23:59:59.500000", "1900-01-01 12:00:00", "2024-02-29 12:34:56.789012",
    "2024-03-10 06:59:59.999999", "2024-03-10 07:30:00", "2024-11-03 05:30:00", "2024-11-03 06:30:00",
    "2024-12-31 23:59:59", "2099-07-04 00:00:00.000001")] + [None]
DAYS = [0, -1, 19782, 19723, -25567, 47482, None]
SECONDS = [0, -1, 1710052200, 1730611800, 1730615400, 4102444800, -2208988800, None]

DATE_TEXT = ["2024-01-31", "2024-1-5", "2024", "2024-01", " 2024-01-31 ", "2024-01-31T10:11:12Z",
             "2024-02-30", "2024-13-01", "2024-01-31 anything", "20240131", "bad", "", "+2024-01-31", None]
TIMESTAMP_TEXT = ["2024-01-31 10:11:12", "2024-01-31T10:11:12.123456789", "2024-01-31 10:11", "2024-1-5 1:2:3",
                  "2024-01-31", "2024", "2024-01-31T10:11:12Z", "2024-01-31 10:11:12+05:30",
                  "2024-01-31 10:11:12-0800", "2024-01-31 10:11:12 America/Los_Angeles",
                  "2024-01-31 10:11:12UTC", "2024-03-10 02:30:00", "2024-11-03 01:30:00", "2024-01-31 25:00:00",
                  "2024-01-31 10", "2024-01-31T", " 2024-01-31 10:11:12 ", "bad", "", None]

#: (format, strings): parsing with a pattern; everything else must be null as in Spark
PARSE_CASES = [
    ("yyyy-MM-dd HH:mm:ss", ["2024-03-10 02:30:00", "2024-11-03 01:30:00", "2024-02-29 23:59:59",
                             "2023-02-29 00:00:00", "2024-2-3 1:2:3", " 2024-01-01 00:00:00",
                             "2024-01-01 00:00:00 ", "2024-01-01 24:00:00", "garbage", None]),
    ("dd/MM/yyyy", ["05/03/2024", "31/04/2024", "5/3/2024", "05/03/24", None]),
    ("yyyyMMdd", ["20240131", "2024013", "202401311", "00010101"]),
    ("yyyy-MM-dd'T'HH:mm:ss.SSS", ["2024-01-31T10:11:12.5", "2024-01-31T10:11:12.123", "2024-01-31T10:11:12.1234",
                                   "2024-01-31T10:11:12", "2024-01-31t10:11:12.000"]),
    ("MMM d, yyyy", ["Jan 5, 2024", "jan 5, 2024", "JAN 15, 2024", "Sept 5, 2024"]),
    ("MMMM d yyyy", ["February 29 2024", "february 29 2023"]),
    ("yy-MM-dd", ["24-01-31", "99-12-31", "2024-01-31"]),
    ("hh:mm a, yyyy-MM-dd", ["12:30 AM, 2024-01-01", "12:30 PM, 2024-01-01", "01:05 pm, 2024-01-01",
                             "13:00 PM, 2024-01-01"]),
    ("yyyy D", ["2024 60", "2023 366", "2024 366"]),
    ("kk:mm yyyy-MM-dd", ["24:00 2024-01-01", "01:00 2024-01-01", "00:00 2024-01-01"]),
]
FORMATS = ["yyyy-MM-dd HH:mm:ss", "yyyy/MM/dd", "yyyyMMddHH", "EEE, d MMM yyyy hh:mm:ss a", "EEEE MMMM",
           "yy-M-d H:m:s.SSSSSS", "'T'HH''mm''", "D DD DDD", "kk KK h", "y yyy yyyy", "S SS SSS", "LLL L"]
WORDS = ["Hello", "STRASSE", "straße", "İstanbul", "ΟΔΟΣ ΣΑΣ", "ǅemal", "ﬁne", "", "日本語", "😀 x", None]


@pytest.fixture
def spark_zone(spark):
    """Sets the session time zone (ANSI off) for one comparison, and restores both after."""
    before = {k: spark.conf.get(k) for k in ("spark.sql.session.timeZone", "spark.sql.ansi.enabled")}
    spark.conf.set("spark.sql.ansi.enabled", "false")

    def set_zone(zone: str):
        spark.conf.set("spark.sql.session.timeZone", zone)
        return spark

    yield set_zone
    for key, value in before.items():
        spark.conf.set(key, value)


def _frame(spark, kind: str, values: list):
    """A one-column DataFrame ``v`` of Spark type ``kind`` and the same column in Arrow."""
    if kind == "timestamp":
        df = spark.createDataFrame([(v,) for v in values], "m bigint").select(F.timestamp_micros("m").alias("v"))
        return df, pa.array(values, pa.timestamp("us", tz="UTC"))
    if kind == "date":
        df = spark.createDataFrame([(v,) for v in values], "d int").select(F.date_from_unix_date("d").alias("v"))
        return df, pa.array(values, pa.date32())
    if kind == "bigint":
        return spark.createDataFrame([(v,) for v in values], "v bigint"), pa.array(values, pa.int64())
    return spark.createDataFrame([(v,) for v in values], "v string"), pa.array(values, pa.string())


def _normal(value):
    if isinstance(value, _dt.datetime):  # compare instants, whatever zone Spark hands them back in
        return value.astimezone(_dt.timezone.utc) if value.tzinfo else value.replace(tzinfo=_dt.timezone.utc)
    return value


def _compare_all(spark, kind, values, cases, zone="UTC"):
    """Each case ``(spark_column, name, options)`` over ``values``, Spark's results read in one
    query (one column per case): a query per case cost most of this file's time."""
    df, arrow = _frame(spark, kind, values)
    rows = df.select(*[column.alias(f"r{i}") for i, (column, _, _) in enumerate(cases)]).toArrow()
    problems = []
    for i, (_, name, options) in enumerate(cases):
        expected = [_normal(v) for v in rows.column(f"r{i}").to_pylist()]
        actual = [_normal(v) for v in evaluate(name, arrow, options or {}, zone).to_pylist()]
        mismatches = [(values[j], e, a) for j, (e, a) in enumerate(zip(expected, actual)) if e != a]
        if mismatches:
            problems.append(f"{name}{options or ''} in {zone}: (input, spark, ours) {mismatches}")
    assert not problems, "\n".join(problems)


def _compare(spark, kind, values, spark_column, name, options=None, zone="UTC"):
    _compare_all(spark, kind, values, [(spark_column, name, options)], zone)


@pytest.mark.parametrize("zone", ZONES)
def test_datetime_functions_of_instants_and_dates(spark_zone, zone):
    spark = spark_zone(zone)
    for kind, values in (("timestamp", INSTANTS), ("date", DAYS)):
        cases = [(F.year("v"), "year", None), (F.month("v"), "month", None), (F.dayofmonth("v"), "day", None),
                 (F.hour("v"), "hour", None), (F.to_date("v"), "to_date", None),
                 (F.to_timestamp("v"), "to_timestamp", None), (F.unix_timestamp("v"), "unix_timestamp", None)]
        cases += [(F.date_format("v", fmt), "date_format", {"format": fmt}) for fmt in FORMATS]
        _compare_all(spark, kind, values, cases, zone)


@pytest.mark.parametrize("zone", ZONES)
def test_from_unixtime(spark_zone, zone):
    spark = spark_zone(zone)
    cases = [(F.from_unixtime("v"), "from_unixtime", None)]
    cases += [(F.from_unixtime("v", fmt), "from_unixtime", {"format": fmt}) for fmt in FORMATS]
    _compare_all(spark, "bigint", SECONDS, cases, zone)


@pytest.mark.parametrize("zone", ("UTC", "America/New_York"))
def test_datetime_functions_cast_text_as_spark_does(spark_zone, zone):
    spark = spark_zone(zone)
    _compare_all(spark, "string", DATE_TEXT, [(column("v"), name, None) for name, column in (
        ("year", F.year), ("month", F.month), ("day", F.dayofmonth), ("to_date", F.to_date))], zone)
    _compare_all(spark, "string", TIMESTAMP_TEXT, [
        (F.to_timestamp("v"), "to_timestamp", None), (F.hour("v"), "hour", None),
        (F.date_format("v", "yyyy-MM-dd HH:mm"), "date_format", {"format": "yyyy-MM-dd HH:mm"})], zone)


@pytest.mark.parametrize("zone", ("UTC", "America/New_York"))
def test_parsing_with_spark_patterns(spark_zone, zone):
    spark = spark_zone(zone)
    for fmt, texts in PARSE_CASES:
        _compare_all(spark, "string", texts, [
            (F.unix_timestamp("v", fmt), "unix_timestamp", {"format": fmt}),
            (F.to_timestamp("v", fmt), "to_timestamp", {"format": fmt}),
            (F.to_date("v", fmt), "to_date", {"format": fmt})], zone)
    texts = PARSE_CASES[0][1]
    _compare(spark, "string", texts, F.unix_timestamp("v"), "unix_timestamp", zone=zone)


def test_case_mapping_and_trimming(spark_zone):
    spark = spark_zone("UTC")
    _compare_all(spark, "string", WORDS, [(F.lower("v"), "lower", None), (F.upper("v"), "upper", None)])
    padded = ["  a b  ", "\ta\t", " \u3000a ", "xxaxx", "xyaxyz", "", "   ", None]
    cases = []
    for name, column in (("trim", F.trim), ("ltrim", F.ltrim), ("rtrim", F.rtrim)):
        cases.append((column("v"), name, None))
        cases += [(column("v", F.lit(chars)), name, {"trimString": chars}) for chars in ("x", "yx", "\u3000 ")]
    _compare_all(spark, "string", padded, cases)


@pytest.mark.parametrize(("pos", "length"), [(1, 3), (0, 2), (-3, 2), (-10, 4), (-2, 5), (3, 0), (2, -1),
                                             (10, 2), (-1, 1), (-6, 6), (2, 2147483647)])
def test_substring(spark_zone, pos, length):
    spark = spark_zone("UTC")
    texts = ["abcdef", "ab", "", "日本語テキスト", "😀x😀y", None]
    _compare(spark, "string", texts, F.substring("v", pos, length), "substring", {"pos": str(pos), "len": str(length)})


@pytest.mark.parametrize(("pattern", "idx"), [(r"(\d+)-(\d+)", 0), (r"(\d+)-(\d+)", 1), (r"(\d+)-(\d+)", 2),
                                              (r"(a)?b", 1), (r"é(\w+)", 1), (r"(?i)(ABC)", 1), (r"\s(\S+)$", 1),
                                              (r"^(\w+)@(\w+)\.com$", 2)])
def test_regexp_extract(spark_zone, pattern, idx):
    spark = spark_zone("UTC")
    texts = ["12-345", "x 7-8 y 9-10", "b", "ab", "éte", "éété", "xabc", "one two", "me@host.com", "", None]
    _compare(spark, "string", texts, F.regexp_extract("v", pattern, idx), "regexp_extract",
             {"pattern": pattern, "idx": str(idx)})


def test_identity_is_the_column_itself(spark_zone):
    spark = spark_zone("UTC")
    _compare(spark, "string", WORDS, F.col("v"), "identity")
    _compare(spark, "timestamp", INSTANTS, F.col("v"), "identity")
