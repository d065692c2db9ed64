"""Attack: exactly-once retries across archival. A try that committed and died before reporting
leaves its write identity in the commit's extraMetadata; the retry must find it there even when
archival (run by another task, or by Hudi's writers after each commit) moved that commit out of
the active timeline meanwhile, or it writes the batch a second time."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.actions.write_identity import format_write_id, settle_previous_try, with_write_id
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import _simple_config


def _row(key: str) -> pa.Table:
    return pa.table({"id": [key], "p": ["p0"], "ts": pa.array([1], pa.int64()), "v": [f"{key}1"], "d": [None]})


@pytest.mark.parametrize("version", [6, 9])
def test_a_retry_finds_its_committed_try_after_archival(tmp_path: Path, version: int) -> None:
    base = str(tmp_path / "t")
    cfg = {**_simple_config(version), "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
           "hoodie.cleaner.commits.retained": "1", "hoodie.metadata.compact.max.delta.commits": "1"}
    write_id = format_write_id("dag", "run1", "load", -1)
    mine = with_write_id(HoodieConfig(cfg), write_id)
    first = write_arrow(base, _row("a"), "bulk_insert", mine).instant  # committed; the task died before reporting
    for key in ("b", "c", "d"):  # other tasks write meanwhile
        write_arrow(base, _row(key), "bulk_insert", cfg)
    assert first in run_archive(HoodieTable.load(base), HoodieConfig(cfg)).get("archived_instants", [])
    previous = settle_previous_try(base, None, mine, write_id)  # the Airflow retry
    assert previous is not None and previous["instant"] == first  # None: the retry writes again
    assert [r["v"] for r in read_table(base).to_pylist() if r["id"] == "a"] == ["a1"]
