"""LogWriter: appending to the latest log version, rolling over, storage without append."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieIOError
from airflow_hoodie.table.log.data_block import avro_data_block
from airflow_hoodie.table.log.delete_block import DeleteRecord, delete_block
from airflow_hoodie.table.log.log_block import rollback_command_block, serialize_block
from airflow_hoodie.table.log.log_reader import read_log_blocks, scan_log_files
from airflow_hoodie.table.log.log_writer import LogWriter, latest_log_file
from airflow_hoodie.table.schema.avro_convert import (
    arrow_schema_to_avro,
    table_record_name,
)
from airflow_hoodie.table.storage.storage import Storage

STORAGE = Storage.local()
FID, BASE = "abc-0", "20240101000000000"


class NoAppendStorage(Storage):
    """Local storage pretending to be an object store (no appends)."""

    @property
    def supports_append(self) -> bool:  # type: ignore[override]
        return False

    def open_append(self, path):  # pragma: no cover - must never be called
        raise AssertionError("append used on storage without append")


def _block(instant: str, n: int = 2):
    t = pa.table({"_hoodie_record_key": [f"k{i}" for i in range(n)], "v": pa.array(range(n), pa.int64())})
    return avro_data_block(t, arrow_schema_to_avro(t.schema, *table_record_name("t")), instant)


def _names(d) -> list[str]:
    return sorted(os.listdir(d))


def test_first_append_creates_version_1_and_sets_offsets(tmp_path):
    blocks = [_block("001"), rollback_command_block("002", "000")]
    with LogWriter(STORAGE, str(tmp_path), FID, BASE, "1-2-3") as w:
        [res] = w.append(blocks)
    assert _names(tmp_path) == [f".{FID}_{BASE}.log.1_1-2-3"]
    assert res.offset == 0 and res.size == os.path.getsize(res.log_path) and res.version == 1
    assert blocks[0].offset == 0 and blocks[1].offset == blocks[0].size
    on_disk = list(read_log_blocks(STORAGE, res.log_path))
    assert [(b.offset, b.size) for b in on_disk] == [(b.offset, b.size) for b in blocks]
    assert b"".join(serialize_block(b) for b in blocks) == open(res.log_path, "rb").read()


def test_appends_to_latest_existing_version_keeping_its_token(tmp_path):
    with LogWriter(STORAGE, str(tmp_path), FID, BASE, "0-0-0") as w:
        [r1] = w.append([_block("001")])
    with LogWriter(STORAGE, str(tmp_path), FID, BASE, "5-5-5") as w:
        [r2] = w.append([_block("002")])
        [r3] = w.append([delete_block([DeleteRecord("k0", "", 1)], "002")])
    assert _names(tmp_path) == [f".{FID}_{BASE}.log.1_0-0-0"]
    assert r2.log_path == r1.log_path and r2.offset == r1.size and r3.offset == r2.offset + r2.size
    res = scan_log_files(STORAGE, [r1.log_path], "009", {"001", "002"})
    assert [b.instant_time for b in res.blocks] == ["001", "002", "002"]
    # other file groups / base instants in the directory are ignored
    assert latest_log_file(STORAGE, str(tmp_path), "other-0", BASE)[0] == 0
    assert latest_log_file(STORAGE, str(tmp_path), FID, "20250101000000000")[0] == 0


def test_rolls_over_past_max_size(tmp_path):
    w = LogWriter(STORAGE, str(tmp_path), FID, BASE, "0-0-0", max_file_size=300)
    r1 = w.append([_block("001")])[0]
    assert r1.size <= 300 and r1.version == 1
    r2 = w.append([_block("002"), _block("002")])[0]  # still v1: a call never splits
    assert r2.log_path == r1.log_path and r2.offset == r1.size
    r3 = w.append([_block("003")])[0]  # v1 grew past 300 -> new version
    w.close()
    assert r3.version == 2 and r3.offset == 0
    assert _names(tmp_path) == [f".{FID}_{BASE}.log.1_0-0-0", f".{FID}_{BASE}.log.2_0-0-0"]
    # a new writer finds v2 (below the limit) and appends there
    with LogWriter(STORAGE, str(tmp_path), FID, BASE, "7-7-7", max_file_size=300) as w2:
        r4 = w2.append([_block("004")])[0]
    assert r4.log_path == r3.log_path and r4.offset == r3.size


def test_full_existing_file_starts_next_version_with_own_token(tmp_path):
    with LogWriter(STORAGE, str(tmp_path), FID, BASE, "0-0-0") as w:
        w.append([_block("001", 50)])
    with LogWriter(STORAGE, str(tmp_path), FID, BASE, "3-1-4", max_file_size=100) as w:
        r = w.append([_block("002")])[0]
    assert r.file_name == f".{FID}_{BASE}.log.2_3-1-4" and r.offset == 0


def test_storage_without_append_always_writes_new_version(tmp_path):
    st = NoAppendStorage(STORAGE.fs)
    with LogWriter(st, str(tmp_path), FID, BASE, "0-0-1") as w:
        a = w.append([_block("001")])[0]
        b = w.append([_block("002")])[0]  # same open stream: same new file
    with LogWriter(st, str(tmp_path), FID, BASE, "0-0-2") as w:
        c = w.append([_block("003")])[0]
    assert a.log_path == b.log_path and a.version == 1
    assert c.version == 2 and c.file_name.endswith("_0-0-2")
    paths = [str(tmp_path / n) for n in _names(tmp_path)]
    res = scan_log_files(STORAGE, paths, "009", {"001", "002", "003"})
    assert [x.instant_time for x in res.blocks] == ["001", "002", "003"]


def test_closed_writer_refuses_and_empty_append_is_noop(tmp_path):
    w = LogWriter(STORAGE, str(tmp_path), FID, BASE, "0-0-0")
    assert w.append([]) == [] and _names(tmp_path) == []
    w.close()
    with pytest.raises(HoodieIOError, match="closed"):
        w.append([_block("001")])


def test_next_log_path_predicts_the_target_without_creating_it(tmp_path):
    w = LogWriter(STORAGE, str(tmp_path), FID, BASE, "0-0-0", max_file_size=300)
    first = w.next_log_path()
    assert _names(tmp_path) == [] and first.endswith(".log.1_0-0-0")
    assert w.append_block(_block("001")).log_path == first
    assert w.next_log_path() == first
    w.append([_block("002"), _block("002")])  # grows past 300 -> rolls over
    nxt = w.next_log_path()
    assert nxt.endswith(".log.2_0-0-0")
    assert w.append_block(_block("003")).log_path == nxt
    w.close()
