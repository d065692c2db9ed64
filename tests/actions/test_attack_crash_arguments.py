"""Attack: the settings that decide what data gets written, given as a user types them. A value
the write takes one way must be stored in hoodie.properties so that every later writer (ours, and
Hudi's Java writers, which parse booleans with Boolean.parseBoolean: only "true", any case, no
blanks) takes it the same way; a value that cannot be stored so must be refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieConfigError, HoodieError
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import _one, _simple_config


def _stored(base: str, key: str) -> str | None:
    for line in (Path(base) / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line.startswith(key + "="):
            return line.split("=", 1)[1]
    return None


@pytest.mark.parametrize("value", ["yes", "True "])
def test_a_hive_style_setting_is_stored_as_it_was_applied_or_refused(tmp_path: Path, value: str) -> None:
    base = str(tmp_path / "t")
    key = "hoodie.datasource.write.hive_style_partitioning"
    cfg = {**_simple_config(6), key: value}
    try:
        write_arrow(base, _one("a", 1, "a1"), "upsert", cfg)
    except HoodieConfigError:
        return  # refused before writing: as good as stored right
    written_hive_style = (Path(base) / "p=p0").is_dir()
    assert _stored(base, key) == ("true" if written_hive_style else "false")  # stored 'yes' / 'True '
    write_arrow(base, _one("a", 2, "a2"), "upsert", _simple_config(6))  # the next task, the table's own settings
    rows = read_table(base).to_pylist()
    assert [(r["id"], r["v"]) for r in rows] == [("a", "a2")]  # read a1 in p=p0 and a2 in p0 ('yes')


@pytest.mark.parametrize("key", ["hoodie.datasource.write.recordkey.field",
                                 "hoodie.datasource.write.partitionpath.field"])
def test_a_write_naming_other_key_fields_than_the_tables_is_refused(tmp_path: Path, key: str) -> None:
    base = str(tmp_path / "t")
    cfg = _simple_config(6)
    write_arrow(base, _one("a", 5, "a5"), "upsert", cfg)
    with pytest.raises(HoodieError, match="field"):
        write_arrow(base, _one("a", 2, "a2"), "upsert", {**cfg, key: "v"})  # wrote a second 'a'
    assert [(r["id"], r["v"]) for r in read_table(base).to_pylist()] == [("a", "a5")]


def test_an_operation_setting_that_contradicts_the_operation_is_refused(tmp_path: Path) -> None:
    base = str(tmp_path / "t")
    cfg = _simple_config(6)
    write_arrow(base, _one("a", 5, "a5"), "upsert", cfg)
    with pytest.raises(HoodieError, match="operation"):
        write_arrow(base, _one("a", 6, "a6"), "upsert", {**cfg, "hoodie.datasource.write.operation": "delete"})
    assert [(r["id"], r["v"]) for r in read_table(base).to_pylist()] == [("a", "a5")]
