"""A write reads the metadata table's files partition once: the view it checks when it loads
the table is the one it plans on, unless an instant completed in between (then it reads it
again). A storage listing is taken again (it finds a file deleted in between). And through
the metadata table a write plans on the same files, with the same sizes, as through storage,
so keeping the metadata table never changes what a write does (which groups take inserts,
which are merged, which get log files)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.file_group import file_system_view
from airflow_hoodie.table.file_group.file_system_view import FileSystemView
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.table_versions import table_version, version_settings  # noqa: F401 - the fixture

pytestmark = pytest.mark.usefixtures("table_version")


def _conf(mdt: bool) -> dict[str, str]:
    # no small files: updates of the MERGE_ON_READ table go to log files
    return {"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ",
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.parquet.small.file.limit": "0",
            "hoodie.metadata.enable": str(mdt).lower(), **version_settings()}


def _rows(ids: list[int], ts: int) -> pa.Table:
    return pa.table({"id": ids, "ts": [ts] * len(ids), "p": ["a" if i % 2 else "b" for i in ids],
                     "v": [f"v{ts}-{i}" for i in ids]})


def _table(tmp_path: Path, mdt: bool) -> str:
    base = str(tmp_path / ("mdt" if mdt else "plain"))
    write_arrow(base, _rows(list(range(20)), 1), "upsert", _conf(mdt))
    write_arrow(base, _rows([1, 2, 3, 4], 2), "upsert", _conf(mdt))   # log files
    write_arrow(base, _rows([2, 5, 20, 21], 3), "upsert", _conf(mdt))  # more logs, new group
    return base


@pytest.mark.parametrize("mdt", [True, False], ids=["metadata table", "storage"])
def test_a_write_lists_the_table_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mdt: bool) -> None:
    base = _table(tmp_path, mdt)
    listed: list[bool] = []
    inner = FileSystemView._list

    def counting(view: FileSystemView) -> tuple[list[tuple[str, str, int]], set[str]]:
        if view.base_path == base:  # not the metadata table's own listing of its files
            listed.append(view.lists_through_metadata_table)
        return inner(view)

    monkeypatch.setattr(FileSystemView, "_list", counting)
    read_files = []
    monkeypatch.setattr(file_system_view, "load_files_listing",
                        lambda *a: read_files.append(1) or _load_files_listing(*a))
    write_arrow(base, _rows([3, 6, 30], 4), "upsert", _conf(mdt))
    # the load's check and the planning: one read of the files partition; storage is listed for each
    assert listed == ([True] if mdt else [False, False])
    assert len(read_files) == int(mdt)


_load_files_listing = file_system_view.load_files_listing


@pytest.mark.parametrize("mdt", [True, False], ids=["metadata table", "storage"])
def test_a_completed_instant_in_between_lists_again(tmp_path: Path, mdt: bool) -> None:
    base = _table(tmp_path, mdt)
    table = HoodieTable.load(base)
    before = {(f.file_id, f.base_file, tuple(f.log_files)) for f in table.write_view(mdt).existing_files()}
    write_arrow(base, _rows([7, 40], 5), "upsert", _conf(mdt))  # another writer completes meanwhile
    table.reload_timeline()
    after = {(f.file_id, f.base_file, tuple(f.log_files)) for f in table.write_view(mdt).existing_files()}
    fresh = {(f.file_id, f.base_file, tuple(f.log_files))
             for f in HoodieTable.load(base).file_system_view(through_metadata_table=mdt).existing_files()}
    assert after == fresh != before
    # nothing completed: the next view shares a metadata-table listing (not a storage one), and sees the same
    table.reload_timeline()
    again = table.write_view(mdt)
    assert (again._listed is not None) == mdt
    assert {(f.file_id, f.base_file, tuple(f.log_files)) for f in again.existing_files()} == fresh


def test_the_metadata_table_plans_the_files_storage_holds(tmp_path: Path) -> None:
    base = _table(tmp_path, True)
    table = HoodieTable.load(base)
    through = table.file_system_view(through_metadata_table=True)
    assert through.lists_through_metadata_table
    listed = sorted(through.existing_files(), key=lambda f: (f.partition_path, f.file_id))
    stored = sorted(table.file_system_view(through_metadata_table=False).existing_files(),
                    key=lambda f: (f.partition_path, f.file_id))
    assert any(f.log_files for f in stored) and any(not f.log_files for f in stored)
    # same slices, same base and log files, same sizes: bucketing picks the same small files
    assert listed == stored
    for f in stored:
        folder = Path(base)
        assert f.base_size == ((folder / f.base_file).stat().st_size if f.base_file else 0)
        assert f.log_size == sum((folder / lf).stat().st_size for lf in f.log_files)
