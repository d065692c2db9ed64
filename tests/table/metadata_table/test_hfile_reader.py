"""The HFile reader on the metadata-table files Hudi 0.14 and 1.1 wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.metadata_table.hfile_reader import HFile

V9 = "tables/cow/v9_txns_simple_meta/.hoodie/metadata/files"


def _hfiles(conformance_next: Path) -> list[Path]:
    return sorted(conformance_next.glob("tables/*/*/.hoodie/metadata/files/*.hfile"))


def test_every_metadata_hfile_reads_completely(conformance_next):
    files = _hfiles(conformance_next)
    assert len(files) >= 6
    for path in files:
        hfile = HFile(path.read_bytes(), str(path))
        assert hfile.trailer.major_version == 3 and hfile.trailer.codec == "GZ"
        records = list(hfile.records())
        assert len(records) == hfile.trailer.entry_count
        keys = [k for k, _ in records]
        assert keys == sorted(keys) and b"__all_partitions__" in keys  # HFiles are sorted by key
        assert json.loads(hfile.schema_json)["name"] == "HoodieMetadataRecord"
        assert keys[-1] in hfile.file_info[b"hfile.LASTKEY"]  # the last cell's key, as HBase records it


def test_compacted_base_file_holds_each_partition(conformance_next):
    path = next(p for p in sorted((conformance_next / V9).glob("*.hfile")) if not p.name.endswith("00000000000000000.hfile"))
    keys = [k for k, _ in HFile(path.read_bytes(), str(path)).records()]
    assert keys == [b"__all_partitions__", b"region=apac", b"region=eu", b"region=us"]


def test_damaged_hfiles_are_clear_errors(conformance_next):
    path = _hfiles(conformance_next)[0]
    data = path.read_bytes()
    with pytest.raises(HoodieCorruptedDataError, match="too small"):
        HFile(data[:100], "short")
    with pytest.raises(HoodieCorruptedDataError, match="trailer magic"):
        HFile(data[:-1], "cut")
    first = HFile(data, "ok").trailer.first_data_block_offset
    broken = bytearray(data)
    broken[first + 40:first + 60] = b"\x00" * 20  # inside the compressed payload of the first data block
    with pytest.raises(HoodieCorruptedDataError, match="does not inflate|impossible|cells|runs past"):
        list(HFile(bytes(broken), "garbled").records())


def test_cells_filter_and_truncated_cells_are_clear_errors():
    from airflow_hoodie.table.metadata_table.hfile_reader import MAX_MEMSTORE_TS_KEY
    from airflow_hoodie.table.metadata_table.hfile_writer import write_hfile

    records = [(f"k{i:03d}".encode(), bytes([i]) * (i % 7)) for i in range(50)]
    hfile = HFile(write_hfile(records, "{}"), "mine")
    _, body, _ = hfile._block(hfile.trailer.first_data_block_offset)
    mvcc = MAX_MEMSTORE_TS_KEY in hfile.file_info
    assert list(hfile._cells(body, mvcc)) == records
    wanted = {b"k007", b"k030", b"nope"}
    assert list(hfile._cells(body, mvcc, wanted)) == [r for r in records if r[0] in wanted]
    for cut in (1, 5, 9, len(body) // 2 + 3):  # inside a memstore timestamp, a value, a header
        with pytest.raises(HoodieCorruptedDataError, match="runs past"):
            list(hfile._cells(body[:-cut], mvcc))
