"""Setting values that Hudi's own writers would read otherwise than we do are refused by
name (issue 35): booleans Java's ``Boolean.parseBoolean`` reads as false while we read them
true (``yes``, ``1``, ``True `` with a blank), and two spellings of one setting, the ordering
field above all, given different values (C27: one of them won silently)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import _one, _simple_config

KEY = "hoodie.datasource.write.hive_style_partitioning"


@pytest.mark.parametrize(("raw", "value"), [("true", True), ("TRUE", True), ("True", True),
                                            ("false", False), ("False", False)])
def test_true_and_false_in_any_case_read_as_hudi_reads_them(raw, value):
    assert HoodieConfig({KEY: raw}).get_bool(KEY) is value


@pytest.mark.parametrize("raw", ["yes", "no", "1", "0", "True ", " false", "on", ""])
def test_any_other_boolean_is_refused_by_name(raw):
    """Hudi reads every one of them as false; 'yes', '1' and 'True ' we used to apply as true."""
    with pytest.raises(HoodieConfigError, match=rf"{KEY}=.*not true or false.*{KEY}=true or {KEY}=false"):
        HoodieConfig({KEY: raw}).get_bool(KEY)


def test_a_write_with_a_boolean_hudi_reads_otherwise_changes_nothing(tmp_path: Path):
    base = tmp_path / "t"
    with pytest.raises(HoodieConfigError, match=KEY):
        write_arrow(str(base), _one("a", 1, "a1"), "upsert", {**_simple_config(6), KEY: "yes"})
    assert not (base / ".hoodie").exists()


@pytest.mark.parametrize(("first", "second"), [
    ("hoodie.datasource.write.precombine.field", "hoodie.table.ordering.fields"),
    ("hoodie.datasource.write.precombine.field", "hoodie.payload.ordering.field"),
    ("hoodie.datasource.write.precombine.field", "hoodie.table.precombine.field"),
    ("hoodie.table.ordering.fields", "hoodie.payload.ordering.field"),
])
def test_two_spellings_of_the_ordering_field_that_disagree_are_refused_naming_both(tmp_path: Path, first, second):
    base = tmp_path / "t"
    spellings = ("hoodie.datasource.write.precombine.field", "hoodie.table.ordering.fields",
                 "hoodie.payload.ordering.field", "hoodie.table.precombine.field")
    cfg = {**{k: v for k, v in _simple_config(6).items() if k not in spellings}, first: "ts", second: "v"}
    with pytest.raises(HoodieConfigError, match=r"two spellings of one setting") as caught:
        write_arrow(str(base), _one("a", 1, "a1"), "upsert", cfg)
    assert first in str(caught.value) and second in str(caught.value)
    assert not (base / ".hoodie").exists()
    # the hook refuses it before spark-submit, too
    with pytest.raises(HoodieConfigError, match="two spellings"):
        HoodieConfig(cfg).check_spelling()


def test_two_spellings_with_the_same_value_are_one_setting(tmp_path: Path):
    base = tmp_path / "t"
    cfg = {**_simple_config(6), "hoodie.datasource.write.precombine.field": "ts", "hoodie.table.ordering.fields": " ts"}
    write_arrow(str(base), _one("a", 1, "a1"), "upsert", cfg)
    assert (base / ".hoodie" / "hoodie.properties").exists()


def test_a_key_and_its_alias_that_disagree_are_refused():
    with pytest.raises(HoodieConfigError, match="hoodie.table.type='MERGE_ON_READ' and "
                                                "hoodie.datasource.write.table.type='COPY_ON_WRITE'"):
        HoodieConfig({"hoodie.table.type": "MERGE_ON_READ",
                      "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}).check_spellings_agree()


@pytest.mark.parametrize("version", [6, 9])
def test_a_write_ordering_by_another_field_than_the_tables_is_refused(tmp_path: Path, version: int):
    """C27 across the table and the write: the table orders by ts, a later write names v. It
    was accepted, and its record with an older ts replaced the newer one (ordered by v)."""
    base = tmp_path / "t"
    cfg = _simple_config(version)
    write_arrow(str(base), _one("a", 2, "a2"), "upsert", cfg)
    spellings = ("hoodie.datasource.write.precombine.field", "hoodie.table.ordering.fields",
                 "hoodie.payload.ordering.field", "hoodie.table.precombine.field")
    other = {**{k: v for k, v in cfg.items() if k not in spellings}, "hoodie.datasource.write.precombine.field": "v"}
    with pytest.raises(HoodieConfigError, match=r"orders records by v but the table's ordering field is ts"):
        write_arrow(str(base), _one("a", 1, "zz"), "upsert", other)
    write_arrow(str(base), _one("a", 1, "zz"), "upsert", {k: v for k, v in other.items() if k not in spellings})
    assert [r["v"] for r in read_table(str(base)).to_pylist()] == ["a2"]  # ts 1 does not replace ts 2
