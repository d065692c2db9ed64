"""Listing a table's files through its metadata table's ``files`` partition."""

from __future__ import annotations

import shutil

import pytest

from airflow_hoodie.table.file_group.file_system_view import FileSystemView
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata_table.files_listing import (
    files_partition_ready,
    load_files_listing,
)
from airflow_hoodie.table.read import read_table
from tests.conftest import conformance_next_dir
from tests.table.normalize import hudi_rs_rows, normalize_table
from tests.table.table_files import storage_listing

WITH_MDT = sorted(p.parent.name + "/" + p.name for p in (conformance_next_dir() / "tables").glob("*/*")
                  if (p / ".hoodie" / "metadata" / "files").is_dir()) or ["none"]


def _slices(table: HoodieTable, through_mdt: bool) -> list[tuple]:
    view = FileSystemView(table.storage, table.base_path, table.timeline, table.config, through_mdt)
    assert view.lists_through_metadata_table is through_mdt
    return sorted((s.partition_path, s.file_id, s.base_instant, s.base_file.file_name if s.base_file else None,
                   tuple(lf.file_name for lf in s.log_files)) for s in view.latest_merged_file_slices())


@pytest.mark.parametrize("name", WITH_MDT)
def test_metadata_listing_equals_storage_listing(conformance_next, name):
    base = conformance_next / "tables" / name
    table = HoodieTable.load(str(base))
    assert files_partition_ready(table.config)
    listing = load_files_listing(table.storage, table.base_path, table.timeline)
    assert listing.files == storage_listing(base)
    assert _slices(table, True) == _slices(table, False)


@pytest.mark.parametrize("name", WITH_MDT)
def test_reads_through_the_metadata_table_equal_hudi_rs(conformance_next, name):
    base = str(conformance_next / "tables" / name)
    ours = normalize_table(read_table(base))
    assert ours == normalize_table(read_table(base, metadata_enable=False))
    assert ours == hudi_rs_rows(base)


def test_blocks_of_a_data_instant_that_did_not_complete_are_ignored(conformance_next, tmp_path):
    """The metadata table is written before the data instant completes: files of a data
    write that failed after that point are listed in a block that must not count."""
    base = tmp_path / "t"
    shutil.copytree(conformance_next / "tables" / "cow/v9_txns_simple_meta", base)
    timeline = base / ".hoodie" / "timeline"
    last = sorted(p for p in timeline.iterdir() if p.name.endswith(".commit") and "_" in p.name)[-1]
    requested = last.name.split("_")[0]
    last.unlink()  # the data write now looks inflight; its metadata-table block is still there
    table = HoodieTable.load(str(base))
    listing = load_files_listing(table.storage, table.base_path, table.timeline)
    written = {n for files in listing.files.values() for n in files if requested in n}
    assert written == set()
    assert any(requested in n for files in storage_listing(base).values() for n in files)
    assert _slices(table, True) == _slices(table, False)


def test_tables_without_a_files_partition_list_storage(conformance_next):
    base = conformance_next / "tables" / "cow/v9_txns_nonpart_nometa"
    table = HoodieTable.load(str(base))
    view = FileSystemView(table.storage, table.base_path, table.timeline, table.config, True)
    assert not view.lists_through_metadata_table
    assert view.latest_merged_file_slices()
