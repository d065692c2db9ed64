"""Direct write markers: where they live, how they parse back, and their idempotence."""

from __future__ import annotations

from airflow_hoodie.table.file_group import markers as mk
from airflow_hoodie.table.storage.storage import Storage

TS = "20261124101010123"


def test_markers_are_written_where_hudi_puts_them_and_parse_back(tmp_path):
    storage, base = Storage.for_uri(str(tmp_path))
    path = mk.create_marker(storage, base, TS, "2026/11/24", "fid-0_1-2-3_" + TS + ".parquet", mk.IO_CREATE)
    assert path == f"{base}/.hoodie/.temp/{TS}/2026/11/24/fid-0_1-2-3_{TS}.parquet.marker.CREATE"
    mk.create_marker(storage, base, TS, "", ".fid-1_" + TS + ".log.1_0-1-1", mk.IO_APPEND)
    # a retried task creates the same marker again: no error, still one marker
    mk.create_marker(storage, base, TS, "2026/11/24", "fid-0_1-2-3_" + TS + ".parquet", mk.IO_CREATE)
    found = sorted(mk.list_markers(storage, base, TS), key=lambda m: m.data_path)
    assert [(m.data_path, m.io_type) for m in found] == [
        (f".fid-1_{TS}.log.1_0-1-1", mk.IO_APPEND),
        (f"2026/11/24/fid-0_1-2-3_{TS}.parquet", mk.IO_CREATE),
    ]


def test_foreign_files_in_the_marker_folder_are_not_markers(tmp_path):
    storage, base = Storage.for_uri(str(tmp_path))
    storage.write_bytes(storage.join(mk.marker_dir(storage, base, TS), "MARKERS.type"), b"DIRECT")
    assert mk.list_markers(storage, base, TS) == []
    assert mk.list_markers(storage, base, "20990101000000000") == []


def test_deleting_the_marker_folder_removes_every_marker(tmp_path):
    storage, base = Storage.for_uri(str(tmp_path))
    mk.create_marker(storage, base, TS, "p", "f.parquet", mk.IO_MERGE)
    mk.delete_marker_dir(storage, base, TS)
    assert not storage.exists(mk.marker_dir(storage, base, TS))
    mk.delete_marker_dir(storage, base, TS)  # nothing left: still fine
