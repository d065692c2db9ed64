"""The storage facade: URIs, the timeline's create-if-absent step, errors that name the file."""

from __future__ import annotations

import threading

import pytest

from airflow_hoodie.errors import HoodieIOError
from airflow_hoodie.table.storage.storage import Storage


def test_uris_map_to_the_filesystem_and_back(tmp_path):
    storage, path = Storage.for_uri(f"file://{tmp_path}/t/")
    assert storage.is_local and path == f"{tmp_path}/t"
    assert storage.uri(path) == path
    with pytest.raises(HoodieIOError, match="Unsupported URI scheme 'ftp'"):
        Storage.for_uri("ftp://host/t")


def test_create_if_absent_lets_exactly_one_racer_win(tmp_path):
    storage = Storage.local()
    target = str(tmp_path / ".hoodie" / "001.commit.requested")
    wins: list[bool] = []
    barrier = threading.Barrier(8)

    def racer(i: int) -> None:
        barrier.wait()
        wins.append(storage.create_if_absent(target, f"writer {i}".encode()))

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert sorted(wins) == [False] * 7 + [True]
    assert storage.read_bytes(target).startswith(b"writer ")
    assert [s.name for s in storage.list_dir(str(tmp_path / ".hoodie"))] == ["001.commit.requested"]


def test_missing_files_raise_hoodie_io_errors_that_name_them(tmp_path):
    storage = Storage.local()
    missing = str(tmp_path / "nope.parquet")
    with pytest.raises(HoodieIOError, match="nope.parquet' does not exist"):
        storage.read_bytes(missing)
    assert storage.delete(missing) is False
    with pytest.raises(HoodieIOError, match="does not exist"):
        storage.delete(missing, missing_ok=False)
    assert storage.info(missing) is None and not storage.exists(missing)


def test_walk_files_lists_nested_files_only(tmp_path):
    storage = Storage.local()
    storage.write_bytes(str(tmp_path / "a" / "b" / "f1"), b"1")
    storage.write_bytes(str(tmp_path / "a" / "f2"), b"22")
    found = sorted((s.name, s.size) for s in storage.walk_files(str(tmp_path / "a")))
    assert found == [("f1", 1), ("f2", 2)]
