"""The metadata table's compaction keeps each column-stats value in the wrapper it was
written in. The min/max fields are unions of wrapper records; a value decoded without its
record name and encoded again takes the union's first wrapper that fits: a DoubleWrapper 0.1
became a FloatWrapper 0.100000001, and an equality filter on 0.1 skipped the file."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.metadata_table import files_listing, stats_reader
from airflow_hoodie.table.metadata_table.files_listing import _decode_values
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.read import read_table

#: (column, Arrow value, Hudi's wrapper: column stats V1 on table version 6, V2 on 1.x)
COLUMNS = [("d", pa.array([0.1], pa.float64()), "DoubleWrapper", "DoubleWrapper"),
           ("l", pa.array([7], pa.int64()), "LongWrapper", "LongWrapper"),
           ("dt", pa.array([datetime.date(2024, 5, 6)], pa.date32()), "DateWrapper", "IntWrapper")]


def _row(key: str, part: str) -> pa.Table:
    return pa.table({"id": [key], "p": [part], "ts": [1], **{c: arr for c, arr, _, _ in COLUMNS}})


def _write_three(base: Path, version: str) -> None:
    conf = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.metadata.index.column.stats.enable": "true", "hoodie.metadata.compact.max.delta.commits": "1",
            "hoodie.time.generator.max_expected_clock_skew_ms": "0", "hoodie.write.table.version": version}
    for key, part in (("a", "p0"), ("b", "p1"), ("c", "p0")):  # the metadata table compacts between them
        write_arrow(str(base), _row(key, part), "upsert", conf)


def _filtered(base: Path, column: str, value: object) -> list[str]:
    return sorted(read_table(str(base), columns=["id"], filters=[(column, "==", value)]).column("id").to_pylist())


@pytest.mark.parametrize("version", ["6", "9"])
def test_compacted_column_stats_keep_their_wrappers_and_filters_find_the_row(tmp_path: Path, version: str) -> None:
    base = tmp_path / "t"
    _write_three(base, version)
    compacted = [p for p in (base / ".hoodie" / "metadata" / "column_stats").glob("*.hfile")
                 if not p.name.split("_")[-1].startswith("0000000000000")]
    assert compacted, "the metadata table did not compact its column_stats partition"
    wrappers: dict[str, set[str]] = {}
    for path in compacted:
        hfile = HFile(path.read_bytes(), str(path))
        for _, rec in _decode_values(hfile.records(), hfile.schema_json, str(path), named_unions=True):
            stats = rec["ColumnStatsMetadata"]
            for bound in (stats["minValue"], stats["maxValue"]):
                if bound is not None:
                    wrappers.setdefault(stats["columnName"], set()).add(bound[0].rsplit(".", 1)[-1])
    for column, arr, v1, v2 in COLUMNS:
        assert wrappers[column] == {v1 if version == "6" else v2}, column
        assert _filtered(base, column, arr[0].as_py()) == ["a", "b", "c"], column


@pytest.mark.parametrize("version", ["6", "9"])
def test_stats_narrowed_by_the_old_compaction_prune_nothing(tmp_path: Path, version: str, monkeypatch) -> None:
    """A table compacted by the code before the fix holds a double's bounds in FloatWrappers:
    such a range keeps its file in a filtered read rather than drop the row."""
    base = tmp_path / "t"
    with monkeypatch.context() as m:  # the compaction as it was: wrappers decoded bare
        m.setattr(stats_reader, "_decode_values",
                  lambda pairs, schema, where, named_unions=False: files_listing._decode_values(pairs, schema, where))
        _write_three(base, version)
    for column, arr, _, _ in COLUMNS:
        assert _filtered(base, column, arr[0].as_py()) == ["a", "b", "c"], column
