"""Attack: the history a savepoint, a restore and time travel stand on. A clustering replaces
the file groups of commit T and a KEEP_LATEST_FILE_VERSIONS clean then deletes them (that
policy records no earliestCommitToRetain, so the clean horizon says nothing): T's rows live on
only in the clustering's files. Time travel to T must not read silently empty, and a savepoint
of T (which holds no file) must not be accepted: restoring to it deletes the clustering's files,
the last copy of every row."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.restore import restore_to
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_attack_lake_sequences import _simple_config, lake_rows


def _values(base: str, **query: str) -> dict[str, str]:
    return {r["id"]: r["v"] for r in read_table(base, **query).to_pylist()}


@pytest.mark.parametrize("version,table_type", [(6, "COPY_ON_WRITE"), (9, "MERGE_ON_READ")])
def test_a_commit_whose_files_were_clustered_away_and_cleaned_is_neither_read_empty_nor_savepointed(
        tmp_path: Path, version: int, table_type: str) -> None:
    base = str(tmp_path / "t")
    cfg = _simple_config(version, table_type)
    t1 = write_arrow(base, lake_rows([{"id": "a", "p": "p0", "ts": 1, "v": "a1", "d": None},
                                      {"id": "b", "p": "p0", "ts": 1, "v": "b1", "d": None}]), "upsert", cfg).instant
    small = {"hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)}
    assert cu.run_clustering(HoodieTable.load(base), HoodieConfig({**cfg, **small}), LocalExecutor())["state"] == \
        "completed"
    versions = {cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS, cl.FILE_VERSIONS_RETAINED: "1"}
    cl.run_clean(HoodieTable.load(base), HoodieConfig({**cfg, **versions}), LocalExecutor())
    everything = {"a": "a1", "b": "b1"}
    assert _values(base) == everything
    try:
        assert _values(base, as_of=t1) == everything  # read {}
    except HoodieError:
        pass  # refused: as good
    try:
        create_savepoint(HoodieTable.load(base), t1, config=HoodieConfig(cfg))  # accepted, 0 files
    except HoodieError:
        return  # refused: nothing to restore to
    restore_to(HoodieTable.load(base), t1, HoodieConfig(cfg))
    assert _values(base) == everything  # raised HoodieCorruptedDataError: t1's file is gone, the clustering's too
