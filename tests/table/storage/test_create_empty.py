"""Empty files (markers, empty requested/inflight instants) are created with O_EXCL alone:
still exactly one winner, and nothing left beside the file."""

from __future__ import annotations

import threading

from airflow_hoodie.table.storage.storage import Storage


def test_empty_create_lets_exactly_one_racer_win_and_leaves_no_temp_file(tmp_path):
    storage = Storage.local()
    target = str(tmp_path / ".hoodie" / ".temp" / "001" / "p" / "f.parquet.marker.CREATE")
    wins: list[bool] = []
    barrier = threading.Barrier(8)

    def racer() -> None:
        barrier.wait()
        wins.append(storage.create_if_absent(target, b""))

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert sorted(wins) == [False] * 7 + [True]
    assert storage.read_bytes(target) == b""
    assert [s.name for s in storage.list_dir(str(tmp_path / ".hoodie" / ".temp" / "001" / "p"))] == [
        "f.parquet.marker.CREATE"]


def test_empty_create_does_not_touch_an_existing_file(tmp_path):
    storage = Storage.local()
    target = str(tmp_path / "001.commit.requested")
    assert storage.create_if_absent(target, b"plan")
    assert not storage.create_if_absent(target, b"")
    assert storage.read_bytes(target) == b"plan"
