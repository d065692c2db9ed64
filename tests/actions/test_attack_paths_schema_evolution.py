"""Attack: schema evolution (an added column, an int column widened to long, a float widened
to double) followed by compaction and clustering, with column_stats and partition_stats on.
A filtered read prunes files by those statistics: after each step, every filter must return
exactly the rows an unfiltered read keeps under the same predicate (a stats record written
with the old type, or a value past the old type's range, would prune a matching file), and
hudi-rs must read what ours does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_paths_indexes import assert_partition_stats_bound_the_rows
from tests.table.metadata_table.stats_check import assert_stats_describe_storage
from tests.table.normalize import hudi_rs_rows, normalize_table

BIG = 2**40  # past int32


def _config(version: int, table_type: str) -> dict[str, str]:
    cfg = {"hoodie.table.name": "t", "hoodie.table.type": table_type,
           "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.datasource.write.partitionpath.field": "p", "hoodie.metadata.index.column.stats.enable": "true",
           "hoodie.metadata.index.partition.stats.enable": "true", "hoodie.parquet.small.file.limit": "0",
           "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)}
    if version != 6:
        cfg["hoodie.write.table.version"] = str(version)
    return cfg


def _first() -> pa.Table:
    return pa.table({"id": ["a", "b", "c", "d"], "p": ["p0", "p0", "p1", "p1"], "ts": pa.array([1] * 4, pa.int64()),
                     "n": pa.array([1, 2, 3, 4], pa.int32()), "f": pa.array([0.5, 1.5, 2.5, 3.5], pa.float32())})


def _evolved() -> pa.Table:
    """Updates of a and c, a new key e: n past int32, a new column (f keeps its type: its
    widening on MERGE_ON_READ is tests/actions/test_float_widening_mor.py)."""
    return pa.table({"id": ["a", "c", "e"], "p": ["p0", "p1", "p1"], "ts": pa.array([2] * 3, pa.int64()),
                     "n": pa.array([BIG, -BIG, 7], pa.int64()), "f": pa.array([0.25, -8.0, 2.25], pa.float32()),
                     "x": pa.array(["xa", None, "xe"], pa.string())})


FILTERS: list[tuple[str, str, Any]] = [
    ("n", "==", BIG), ("n", "<", -2**35), ("n", ">", 2**35), ("n", "==", 2), ("f", "==", 0.25), ("f", "<", -1.0),
    ("f", "==", 1.5), ("x", "==", "xa"), ("x", "==", "xe"), ("x", ">", "xb"),
]


def _kept(t: pa.Table, column: str, op: str, value: Any) -> list[str]:
    arr = t.column(column)
    mask = {"==": pc.equal, "<": pc.less, ">": pc.greater}[op](arr, value)
    return sorted(t.filter(mask).column("id").to_pylist())


def _check(base: str, step: str, stats: bool = True) -> None:
    whole = read_table(base)
    assert whole.schema.field("n").type == pa.int64(), step
    got = {r["id"]: (r["n"], r["f"], r["x"]) for r in whole.select(["id", "n", "f", "x"]).to_pylist()}
    assert got == {"a": (BIG, 0.25, "xa"), "b": (2, 1.5, None), "c": (-BIG, -8.0, None), "d": (4, 3.5, None),
                   "e": (7, 2.25, "xe")}, f"rows after {step}"
    for column, op, value in FILTERS:
        ours = sorted(read_table(base, filters=[(column, op, value)]).column("id").to_pylist())
        assert ours == _kept(whole, column, op, value), f"filter {column} {op} {value} after {step}"
    assert normalize_table(whole) == hudi_rs_rows(base), f"hudi-rs after {step}"
    # (not assert_metadata_describes_storage: it wants column_stats for every column of each
    # file, and v8/v9 keep indexing the columns their index definition was made with; a file
    # without stats for the filtered column is kept, which the filters above prove.)
    if stats:
        assert_stats_describe_storage(base)
    assert_partition_stats_bound_the_rows(base, step)


@pytest.mark.parametrize("version,table_type", [(6, "MERGE_ON_READ"), (9, "MERGE_ON_READ")])
def test_widened_and_added_columns_survive_compaction_clustering_and_filters(tmp_path: Path, version: int,
                                                                               table_type: str) -> None:
    base = str(tmp_path / "t")
    cfg = _config(version, table_type)
    write_arrow(base, _first(), "upsert", cfg)
    write_arrow(base, _evolved(), "upsert", cfg)
    _check(base, "the evolving upsert", stats=version != 6)
    if table_type == "MERGE_ON_READ":
        c.schedule_compaction(HoodieTable.load(base), HoodieConfig(cfg), force=True)
        c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), HoodieConfig(cfg))
        _check(base, "compaction", stats=version != 6)
    cu.run_clustering(HoodieTable.load(base), HoodieConfig(cfg), LocalExecutor())
    _check(base, "clustering", stats=version != 6)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_the_write_that_adds_a_column_indexes_it_on_v6(tmp_path: Path, table_type: str) -> None:
    """Hudi 0.14 indexes every column of the commit's own writer schema (the schema in its
    commit metadata) when no column list is set, so the files of that commit carry stats for
    the new column; a data-skipping reader that finds a file indexed but without stats for
    the filtered column does not get a bound for it."""
    base = str(tmp_path / "t")
    cfg = _config(6, table_type)
    write_arrow(base, _first(), "upsert", cfg)
    write_arrow(base, _evolved(), "upsert", cfg)
    table = HoodieTable.load(base)
    from airflow_hoodie.table.metadata_table.stats_reader import index_partition_files, read_index_records

    columns: dict[str, set[str]] = {}
    for rec in read_index_records(index_partition_files(table, "column_stats")).values():
        m = rec["ColumnStatsMetadata"]
        columns.setdefault(m["fileName"], set()).add(m["columnName"])
    latest = [f.file_name for fs in table.file_system_view().latest_merged_file_slices()
              for f in ([fs.base_file] if fs.base_file else []) + list(fs.log_files)
              if table.timeline.filter(actions=("commit", "deltacommit")).instants[-1].timestamp in f.file_name]
    assert latest, "the evolving write wrote no file"
    assert all("x" in columns.get(name, set()) for name in latest), {n: sorted(columns.get(n, ())) for n in latest}
