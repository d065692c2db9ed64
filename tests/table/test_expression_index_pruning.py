"""Data skipping by expression indexes: ``read_table(filters=[(Expression(f, col, options), op, value)])``
returns exactly the rows whose ``f(col)`` satisfies the filter (the same rows as a read without
the metadata table, and as evaluating ``f`` over the full table), and, when an index defines the
same function with the same options on that column, opens fewer file slices. One filter per
documented function group, on v9 COW and MOR tables (the MOR one with log files holding
updated values)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_hoodie import Expression
from airflow_hoodie.table import read as read_module
from airflow_hoodie.table.read import read_table
from tests.actions.expression_index_check import (  # noqa: F401 - version_9 is the fixture
    assert_index_describes_storage,
    define_index,
    version_9,
)
from tests.actions.services_fixtures import table_config, write

pytestmark = pytest.mark.usefixtures("version_9")

BATCHES = 4

#: name -> (index type, function, column, options, operator, value): each value matches rows of one batch
CASES = {
    "identity": ("column_stats", "identity", "v", {}, "=", 2005),
    "from_unixtime": ("column_stats", "from_unixtime", "ts", {"format": "yyyy-MM-dd"}, "=", "2022-03-06"),
    "unix_timestamp": ("column_stats", "unix_timestamp", "at", {}, ">=", 1672531200),
    "date_format": ("column_stats", "date_format", "at", {"format": "yyyy-MM"}, "=", "2021-02"),
    "to_date": ("column_stats", "to_date", "day", {"format": "dd/MM/yyyy"}, "=", "2022-03-05"),
    "to_timestamp": ("column_stats", "to_timestamp", "at", {}, "<", dt.datetime(2021, 6, 1, tzinfo=dt.timezone.utc)),
    "year": ("column_stats", "year", "at", {}, "in", [2022, 2023]),
    "month": ("column_stats", "month", "at", {}, "=", 3),
    "day": ("column_stats", "day", "at", {}, ">", 13),
    "hour": ("column_stats", "hour", "at", {}, "=", 9),
    "lower": ("column_stats", "lower", "name", {}, "=", "b-24"),
    "upper": ("column_stats", "upper", "name", {}, "in", ["C-36", "C-33 "]),
    "substring": ("column_stats", "substring", "day", {"pos": "7", "len": "4"}, "=", "2021"),
    "trim": ("column_stats", "trim", "name", {}, "=", "D-45"),
    "ltrim": ("column_stats", "ltrim", "name", {}, ">=", "D"),
    "rtrim": ("column_stats", "rtrim", "name", {}, "=", "D-42"),
    "regexp_extract": ("column_stats", "regexp_extract", "name", {"pattern": "([A-Z])-(\\d+)", "idx": "1"},
                       "=", "B"),
    "bloom_lower": ("bloom_filters", "lower", "name", {}, "=", "c-36"),
    "bloom_to_date": ("bloom_filters", "to_date", "day", {"format": "dd/MM/yyyy"}, "in", ["2021-02-03"]),
}


def batch(t: int, ids: range | None = None, shift: int = 0) -> pa.Table:
    """Rows of batch ``t`` (1..4): every indexed value lies in a range of its own batch."""
    ids = list(ids if ids is not None else range(t * 10, t * 10 + 10))
    return pa.table({
        "id": [f"k{i:04d}" for i in ids], "p": [f"p{i % 2}" for i in ids],
        "ts": [int(dt.datetime(2019 + t, t, 1 + i % 10, tzinfo=dt.timezone.utc).timestamp()) + shift for i in ids],
        "v": [t * 1000 + i % 10 + shift for i in ids],
        "at": [f"{2019 + t}-{t:02d}-{10 + t + i % 3:02d} {t + 1 + i % 5:02d}:30:00" for i in ids],
        "day": [f"{1 + i % 10:02d}/{t:02d}/{2019 + t}" for i in ids],
        "name": [f"{' ' * (i % 3)}{'ABCD'[t - 1]}-{i + shift}{' ' * (i % 2)}" for i in ids],
    })


def _expression(case: str) -> Expression:
    _type, function, column, options, _op, _value = CASES[case]
    return Expression(function, column, options)


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one per file slice a read opens."""
    opened: list[int] = []
    real = read_module.read_file_slice

    def counted(*args, **kwargs):
        opened.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(read_module, "read_file_slice", counted)
    return opened


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(table.column("id").to_pylist(), table.column("v").to_pylist()))


def _build(base: str, table_type: str) -> None:
    cfg = table_config(table_type, **{"hoodie.parquet.small.file.limit": "0"})  # a file group per batch
    for t in range(1, BATCHES + 1):
        write(base, batch(t), cfg, "insert")
    for name, (index_type, function, column, options, _op, _value) in CASES.items():
        define_index(base, name, index_type, function, column, **options)
    if table_type == "MERGE_ON_READ":
        # updates in log files: batch 2's rows get new values (still inside batch 2's ranges
        # for some functions, outside for others), so merged rows differ from base rows
        write(base, batch(2, range(20, 23), shift=3), cfg)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_pruned_read_equals_the_full_read_and_opens_fewer_files(tmp_path, monkeypatch, table_type):
    base = str(tmp_path / "t")
    _build(base, table_type)
    full = read_table(base)
    opened = _counting_reads(monkeypatch)
    read_table(base)
    total = len(opened)
    assert total >= 2 * BATCHES
    for case, (_type, _function, _column, _options, op, value) in CASES.items():
        assert_index_describes_storage(base, case)
        expr = _expression(case)
        flt = [(expr, op, value)]
        opened.clear()
        pruned = read_table(base, filters=flt)
        pruned_opened = len(opened)
        unpruned = read_table(base, filters=flt, metadata_enable=False)
        mask = pc.is_in(expr.evaluate(full.column(expr.column)), pa.array(value).cast(expr.result_type(
            full.schema.field(expr.column).type))) if op == "in" else None
        assert _rows(pruned) == _rows(unpruned), case
        if mask is not None:
            assert _rows(pruned) == _rows(full.filter(mask)), case
        assert pruned.num_rows > 0, case
        assert pruned_opened < total, f"{case}: the index skipped nothing ({pruned_opened} of {total} slices)"


def test_an_expression_no_index_defines_is_exact_and_skips_nothing(tmp_path, monkeypatch):
    base = str(tmp_path / "t")
    _build(base, "COPY_ON_WRITE")
    opened = _counting_reads(monkeypatch)
    read_table(base)
    total = len(opened)
    # other options than the index's: the index does not apply
    expr = Expression("from_unixtime", "ts", {"format": "yyyy-MM"})
    opened.clear()
    rows = read_table(base, filters=[(expr, "=", "2021-02")], columns=["id", "v"])
    assert len(opened) == total
    assert rows.column_names == ["id", "v"]  # the source column was read for the filter, then projected away
    assert sorted(rows.column("v").to_pylist()) == [2000 + i for i in range(10)]
    # combined with a plain column filter and a projection
    both = read_table(base, filters=[(_expression("lower"), "=", "b-24"), ("p", "=", "p0")], columns=["v"])
    assert both.column("v").to_pylist() == [2004]


@pytest.mark.parametrize("version_9", [8], indirect=True)
def test_version_8_tables_keep_v1_expression_indexes_and_prune(tmp_path, monkeypatch, version_9):  # noqa: F811
    """Table version 8 (Hudi 1.0/1.1 at version 8) defines V1 indexes: untyped wrapped values."""
    base = str(tmp_path / "t")
    cfg = table_config("MERGE_ON_READ", **{"hoodie.parquet.small.file.limit": "0"})
    for t in range(1, BATCHES + 1):
        write(base, batch(t), cfg, "insert")
    cases = ("from_unixtime", "to_date", "year", "lower", "bloom_lower")
    for name in cases:
        index_type, function, column, options, _op, _value = CASES[name]
        define_index(base, name, index_type, function, column, index_version="V1", **options)
    write(base, batch(2, range(20, 23), shift=3), cfg)
    opened = _counting_reads(monkeypatch)
    read_table(base)
    total = len(opened)
    for name in cases:
        assert_index_describes_storage(base, name)
        _type, _function, _column, _options, op, value = CASES[name]
        flt = [(_expression(name), op, value)]
        opened.clear()
        pruned = read_table(base, filters=flt)
        assert len(opened) < total, name
        assert pruned.num_rows > 0 and _rows(pruned) == _rows(read_table(base, filters=flt, metadata_enable=False))


def test_an_expression_filter_is_checked_when_built_and_read(tmp_path):
    from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError

    with pytest.raises(HoodieNotSupportedError, match="'concat' is not supported"):
        Expression("concat", "name")
    with pytest.raises(HoodieConfigError, match="substring requires options"):
        Expression("substring", "name", {"pos": "1"})
    base = str(tmp_path / "t")
    write(base, batch(1), table_config("COPY_ON_WRITE"), "insert")
    with pytest.raises(HoodieConfigError, match="nope"):
        read_table(base, filters=[(Expression("lower", "nope"), "=", "a")])
