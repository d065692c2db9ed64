"""Attack: our writes and services on copies of Hudi 1.x tables that Hudi's Spark writer
built with a record index, column stats and partition stats (a TIMESTAMP-keyed COW table and
a non-partitioned MOR table of the conformance corpus). After each action the rows must be
the model's, hudi-rs (which lists through the metadata table) must read them as ours does,
and every index must describe storage: ``files``, ``record_index`` (each key where it is),
``column_stats`` (pyarrow's own min/max/nulls of each latest base file), and
``partition_stats`` (bounding every value the snapshot returns from its partition)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import assert_metadata_describes_storage
from tests.actions.test_attack_paths_indexes import assert_partition_stats_bound_the_rows
from tests.table.metadata_table.stats_check import assert_stats_describe_storage
from tests.table.normalize import hudi_rs_rows, normalize_table
from tests.table.table_files import copy_conformance_table

CFG = {"hoodie.datasource.write.recordkey.field": "txn_id", "hoodie.cleaner.commits.retained": "1",
       "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
       "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)}


def _user_rows(base: str) -> pa.Table:
    t = read_table(base)
    return t.drop_columns([col for col in t.column_names if col.startswith("_hoodie_")])


def _state(base: str) -> dict[str, list[tuple[int, str]]]:
    """txn_id -> its rows' (txn_ts, merchant): the COW table holds one key twice (Hudi's inserts)."""
    out: dict[str, list[tuple[int, str]]] = {}
    for r in read_table(base, columns=["txn_id", "txn_ts", "merchant_name"]).to_pylist():
        out.setdefault(r["txn_id"], []).append((r["txn_ts"], r["merchant_name"]))
    return {k: sorted(v) for k, v in out.items()}


def _changed(rows: pa.Table, step: int, new_id: str | None = None) -> pa.Table:
    """The rows with a later ordering value and a new merchant (and key, when ``new_id``)."""
    out = rows.set_column(rows.schema.get_field_index("txn_ts"), "txn_ts", pc.add(rows.column("txn_ts"), step))
    out = out.set_column(out.schema.get_field_index("merchant_name"), "merchant_name",
                         pa.array([f"m{step}"] * out.num_rows, pa.string()))
    if new_id is not None:
        out = out.set_column(out.schema.get_field_index("txn_id"), "txn_id",
                             pa.array([f"{new_id}{i}" for i in range(out.num_rows)], pa.string()))
    return out


def _check(base: str, model: dict[str, list[tuple[int, str]]], step: str) -> None:
    assert _state(base) == model, f"rows after {step}"
    assert normalize_table(read_table(base)) == hudi_rs_rows(base), f"hudi-rs after {step}"
    assert_metadata_describes_storage(base, step)
    assert_stats_describe_storage(base)
    assert_partition_stats_bound_the_rows(base, step)


#: the table with every index in CI; HOODIE_ATTACK_CONFORMANCE_ALL=1 adds the MOR one (passes, 6 s)
TABLES = ["cow/v9_timebasedkeygen_nonhivestyle"] + (
    ["mor/v9_nonpartitioned_rollback"] if os.environ.get("HOODIE_ATTACK_CONFORMANCE_ALL") else [])


@pytest.mark.parametrize("name", TABLES)
def test_writes_and_services_keep_a_hudi_tables_indexes_true(conformance_next, tmp_path: Path, name: str) -> None:
    base = str(copy_conformance_table(conformance_next, name, tmp_path))
    cfg = HoodieConfig(CFG)
    load: Callable[[], HoodieTable] = lambda: HoodieTable.load(base)  # noqa: E731
    rows = _user_rows(base)
    model = _state(base)
    # the keys stored once: an upsert of a key stored twice has no one answer
    rows = rows.filter(pc.is_in(rows.column("txn_id"), pa.array([k for k, v in model.items() if len(v) == 1])))
    assert rows.num_rows >= 2
    _check(base, model, "nothing")

    def upsert(batch: pa.Table) -> None:
        write_arrow(base, batch, "upsert", CFG)
        for r in batch.to_pylist():
            model[r["txn_id"]] = [(r["txn_ts"], r["merchant_name"])]

    steps: list[tuple[str, Callable[[], Any]]] = [
        ("upsert", lambda: upsert(pa.concat_tables([_changed(rows.slice(0, 2), 10),
                                                      _changed(rows.slice(0, 1), 10, "NEW")]))),
        ("delete", lambda: (write_arrow(base, rows.slice(1, 1), "delete", CFG),
                            model.pop(rows.column("txn_id")[1].as_py()))),
        ("compaction", lambda: (c.schedule_compaction(load(), cfg, force=True),
                                c.execute_pending_compactions(load(), LocalExecutor(), cfg))
         if load().table_type == "MERGE_ON_READ" else None),
        ("clustering", lambda: cu.run_clustering(load(), cfg, LocalExecutor())),
        ("clean", lambda: cl.run_clean(load(), cfg, LocalExecutor())),
        ("archival", lambda: run_archive(load(), cfg)),
    ]
    for step, action in steps:
        action()
        _check(base, model, step)
    before = dict(model)
    upsert(_changed(rows.slice(0, 1), 30, "LATE"))
    _check(base, model, "a last upsert")
    rollback_latest_or(load(), None, cfg)
    _check(base, before, "the rollback of the last upsert")
