"""The check that every latest file is on storage reads what each completed commit wrote: on
an object store those reads must go out side by side, once per process, with no HEAD per
commit, and the check must still refuse a table whose latest file is gone."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.file_group import written_files
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action, Instant

CONFIG = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
          "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
          "hoodie.table.name": "t", "hoodie.metadata.enable": "false", "hoodie.compact.inline": "false"}


def _batch(i: int) -> pa.Table:
    ids = list(range(i * 10, i * 10 + 10))
    return pa.table({"id": ids, "ts": [i] * 10, "p": [f"p{x % 2}" for x in ids], "v": [1.0] * 10})


def _table(path: str, commits: int) -> str:
    for i in range(commits):
        write_arrow(path, _batch(i), "upsert", CONFIG)
    return path


def _is_commit_file(path: str) -> bool:
    inst = Instant.parse(os.path.basename(path))
    return inst is not None and inst.is_completed and inst.action in Action.COMMITS


class _Recorder:
    """Counts Storage calls and how many reads of commit files were in flight at once (each
    such read is held ``hold_s``, a stand-in for an object store's round trip)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, hold_s: float = 0.0) -> None:
        self.calls: Counter[str] = Counter()
        self.commit_reads = 0
        self.in_flight = self.max_in_flight = 0
        guard = threading.Lock()
        read_bytes, info = Storage.read_bytes, Storage.info

        def counted_read(storage: Storage, path: str) -> bytes:
            if not _is_commit_file(path):
                return read_bytes(storage, path)
            with guard:
                self.commit_reads += 1
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                time.sleep(hold_s)
                return read_bytes(storage, path)
            finally:
                with guard:
                    self.in_flight -= 1

        def counted_info(storage: Storage, path: str):  # noqa: ANN202 - Storage.info's type
            with guard:
                self.calls["info"] += 1
            return info(storage, path)

        monkeypatch.setattr(Storage, "read_bytes", counted_read)
        monkeypatch.setattr(Storage, "info", counted_info)


def _check(path: str) -> None:
    HoodieTable.load(path).file_system_view().check_latest_files_present()


@pytest.fixture(autouse=True)
def _cold_process():
    """Each test starts as a fresh process would: nothing read yet."""
    written_files.forget_all()
    yield
    written_files.forget_all()


def test_commit_files_are_read_side_by_side_once_per_process(tmp_path, monkeypatch):
    path = _table(str(tmp_path / "t"), 6)
    written_files.forget_all()
    rec = _Recorder(monkeypatch, hold_s=0.05)
    _check(path)
    assert rec.commit_reads == 6
    assert rec.max_in_flight > 1, "the commit files were read one after another"
    _check(path)  # a second view, a second listing of the timeline: nothing read again
    assert rec.commit_reads == 6


def test_check_makes_no_storage_call_per_commit(tmp_path, monkeypatch):
    short, long = _table(str(tmp_path / "short"), 2), _table(str(tmp_path / "long"), 8)
    written_files.forget_all()
    rec = _Recorder(monkeypatch)
    _check(short)
    short_info = rec.calls["info"]
    rec.calls.clear()
    _check(long)
    assert rec.calls["info"] == short_info, "a HEAD per commit file"


def test_a_rewritten_commit_file_is_read_again(tmp_path):
    """Rollback or restore can delete a completed instant and a writer reuse its time: the
    cache must not answer for the new file (its listing shows another size or mtime)."""
    path = _table(str(tmp_path / "t"), 3)
    _check(path)
    table = HoodieTable.load(path)
    last = table.timeline.completed_commits().last()
    file = table.timeline.instant_path(last)
    data = open(file, "rb").read()
    # the same name written again (same size), naming a file group whose log was never written
    _, stat = next(iter(table.timeline.commit_metadata(last).iter_write_stats()))
    other = "00000000-dead-beef-0000-000000000000-0"
    assert len(other) == len(stat.file_id)
    fake = data.replace(stat.file_id.encode(), other.encode())
    assert fake != data and len(fake) == len(data)
    os.remove(file)
    with open(file, "wb") as fh:
        fh.write(fake)
    with pytest.raises(HoodieCorruptedDataError, match="is missing"):
        _check(path)


def test_a_missing_latest_file_is_still_refused_by_a_warm_process(tmp_path):
    path = _table(str(tmp_path / "t"), 4)
    _check(path)  # every commit file read and kept
    table = HoodieTable.load(path)
    meta = table.timeline.commit_metadata(table.timeline.completed_commits().last())
    _, stat = next(iter(meta.iter_write_stats()))
    os.remove(os.path.join(path, stat.path))
    with pytest.raises(HoodieCorruptedDataError, match=stat.path.rsplit("/", 1)[-1]):
        write_arrow(path, _batch(9), "upsert", CONFIG)
