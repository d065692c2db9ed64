"""A metadata table we build (HFile writer + files partition) is read by hudi-rs and by us."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.actions.metadata_table.files_bootstrap import (
    initialize_files_partition,
)
from airflow_hoodie.table.metadata_table.files_listing import load_files_listing
from airflow_hoodie.table.metadata_table.hfile_reader import HFile
from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile
from airflow_hoodie.table.read import read_table
from tests.table.normalize import normalize_table
from tests.table.table_files import storage_listing

# tables made without a metadata table, given one built from a listing here
CONF = {"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.metadata.enable": "false"}


def _hudi_rs(base: str, metadata: bool) -> list[dict]:
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(base).with_hudi_option("hoodie.metadata.enable", str(metadata).lower()).build()
    batches = list(table.read(HudiReadOptions()))
    return normalize_table(pa.Table.from_batches(batches) if batches else None)


def _table(tmp_path: Path) -> Path:
    base = tmp_path / "t"
    write_arrow(str(base), pa.table({"id": [1, 2, 3], "ts": [1, 1, 1], "p": ["a", "b", "c"], "v": ["x", "y", "z"]}),
                "upsert", CONF, table_name="t")
    write_arrow(str(base), pa.table({"id": [2, 4], "ts": [2, 2], "p": ["b", "c"], "v": ["y2", "w"]}), "upsert", CONF)
    return base


def test_hfile_writer_round_trips_through_the_reader():
    records = [(f"k{i:05d}".encode(), bytes([i % 256]) * (i % 50)) for i in range(2000)]
    hfile = HFile(write_hfile(records, '{"type": "string"}', block_size=4096), "ours")
    assert list(hfile.records()) == records and hfile.trailer.entry_count == 2000
    assert hfile.schema_json == '{"type": "string"}'


def test_our_metadata_table_lists_the_table_for_us_and_for_hudi_rs(tmp_path):
    base = _table(tmp_path)
    table = HoodieTable.load(str(base))
    initialize_files_partition(table, storage_listing(base))
    table = HoodieTable.load(str(base))
    assert load_files_listing(table.storage, table.base_path, table.timeline).files == storage_listing(base)
    rows = normalize_table(read_table(str(base), metadata_enable=False))
    assert normalize_table(read_table(str(base))) == rows
    assert _hudi_rs(str(base), metadata=True) == rows  # hudi-rs lists version 6 tables by storage


def test_hudi_rs_really_lists_through_our_hfile(conformance_next, tmp_path):
    """hudi-rs lists through the metadata table of version 8+ tables only, so our HFile
    replaces the files partition of a Hudi 1.1 table; it leaves out region=eu, and hudi-rs
    then reads no row of region=eu: it parsed our trailer, index, cells and records."""
    import shutil

    from airflow_hoodie.table.metadata_table.metadata_record import (
        files_partition_records,
        metadata_record_schema_json,
    )
    from airflow_hoodie.table.storage.storage import Storage
    from airflow_hoodie.table.timeline.timeline import Timeline

    base = tmp_path / "v9"
    shutil.copytree(conformance_next / "tables" / "cow/v9_txns_simple_meta", base)
    for p in base.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    listing = storage_listing(base)
    everything = _hudi_rs(str(base), metadata=True)
    del listing["region=eu"]
    files = base / ".hoodie" / "metadata" / "files"
    for f in files.iterdir():
        if f.name != ".hoodie_partition_metadata":
            f.unlink()
    last = [i for i in Timeline.load(Storage.local(), str(base / ".hoodie" / "metadata")).instants if i.is_completed][-1]
    (files / f"files-0000-0_0-0-0_{last.timestamp}.hfile").write_bytes(
        write_hfile(files_partition_records(listing, {p: False for p in listing}), metadata_record_schema_json()))
    rows = _hudi_rs(str(base), metadata=True)
    assert rows == [r for r in everything if r["_hoodie_partition_path"] != "region=eu"]
    assert len(rows) < len(everything)


def test_a_metadata_table_missing_committed_files_is_refused(tmp_path):
    """Our reader checks the listing against the timeline: a files partition without the
    newest files of a commit would read older data, so the read stops and says why."""
    import pytest

    from airflow_hoodie.errors import HoodieCorruptedDataError

    base = _table(tmp_path)
    listing = storage_listing(base)
    del listing["c"]
    initialize_files_partition(HoodieTable.load(str(base)), listing)
    with pytest.raises(HoodieCorruptedDataError, match="is missing"):
        read_table(str(base))
    assert len(read_table(str(base), metadata_enable=False)) == 4
