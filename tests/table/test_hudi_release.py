"""The table-version seam: a version number maps to its release line in one place, and a
table's format is resolved once from its config and again when the config changes."""

from __future__ import annotations

from airflow_hoodie.table.file_group.log_file_layout import log_file_layout
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.hudi_release import (
    RELEASE_0_X,
    RELEASE_1_0,
    RELEASE_1_1,
    release_of,
)
from airflow_hoodie.table.properties import TableConfig
from airflow_hoodie.table.table_format import TableFormat


def test_each_version_reads_as_its_release_line() -> None:
    assert [release_of(v) for v in (5, 6, 7, 8, 9, 10)] == [
        RELEASE_0_X, RELEASE_0_X, RELEASE_0_X, RELEASE_1_0, RELEASE_1_1, RELEASE_1_1]
    assert (RELEASE_0_X.stats_index_version, RELEASE_1_0.stats_index_version, RELEASE_1_1.stats_index_version) == (
        "V1", "V1", "V2")


def test_the_format_takes_the_named_layout_else_the_release_lines() -> None:
    def of(**props: str) -> TableFormat:
        return TableFormat.of(TableConfig({"hoodie.table.name": "t", **props}))

    assert of(**{"hoodie.table.version": "6"}).timeline_layout == 1
    assert of(**{"hoodie.table.version": "8"}).timeline_layout == 2
    assert of(**{"hoodie.table.version": "6", "hoodie.timeline.layout.version": "2"}).archives_to_lsm
    assert TableFormat.for_version(9) == TableFormat(9, 2)
    fmt = of(**{"hoodie.table.version": "9", "hoodie.timeline.path": "tl", "hoodie.timeline.history.path": "h"})
    assert fmt.history_path("/t/.hoodie") == "/t/.hoodie/tl/h"
    assert (fmt.archival_rules, TableFormat(6, 1).archival_rules) == ("1.x", "0.14")
    assert log_file_layout(fmt) is not None and log_file_layout(fmt) == fmt.log_file_layout


def test_a_table_resolves_its_format_once_per_config(tmp_path) -> None:
    table = HoodieTable.create(str(tmp_path / "t"), {"hoodie.table.name": "t", "hoodie.table.version": "6"})
    first = table.format
    assert table.format is first and first.timeline_layout == 1
    table.update_config({"hoodie.timeline.layout.version": "2"})
    assert table.format is not first and table.format.has_completion_times
    table.reload_config()
    assert table.format.timeline_layout == 2
