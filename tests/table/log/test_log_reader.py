"""Log file reading: Hudi's corrupt-block detection and resync, the merged scan's block
selection, and every log file of the conformance corpus."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.log.data_block import avro_data_block
from airflow_hoodie.table.log.delete_block import DeleteRecord, delete_block
from airflow_hoodie.table.log.log_block import (
    MAGIC,
    BlockType,
    rollback_command_block,
    serialize_block,
)
from airflow_hoodie.table.log.log_reader import (
    describe_log_file,
    read_log_blocks,
    read_log_blocks_from_bytes,
    scan_log_files,
)
from airflow_hoodie.table.schema.avro_convert import (
    arrow_schema_to_avro,
    table_record_name,
)
from airflow_hoodie.table.storage.storage import Storage

STORAGE = Storage.local()


def _data(keys: list[str], instant: str) -> bytes:
    t = pa.table({"_hoodie_record_key": keys, "v": pa.array(range(len(keys)), pa.int64())})
    return serialize_block(avro_data_block(t, arrow_schema_to_avro(t.schema, *table_record_name("t")), instant))


def _three_blocks() -> tuple[bytes, list[int]]:
    parts = [_data(["a"], "001"), _data(["b", "c"], "002"), _data(["d"], "003")]
    offsets = [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    return b"".join(parts), offsets


def _kinds(blocks) -> list[tuple[str, int]]:
    return [(b.type_name, b.offset) for b in blocks]


def _write(tmp_path: Path, data: bytes, name: str = ".f1-0_000.log.1_0-0-0") -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


# ------------------------------------------------------------------ corruption handling


def test_clean_file_reads_all_blocks(tmp_path):
    data, offs = _three_blocks()
    blocks = list(read_log_blocks(STORAGE, _write(tmp_path, data)))
    assert _kinds(blocks) == [("AVRO_DATA", offs[0]), ("AVRO_DATA", offs[1]), ("AVRO_DATA", offs[2])]
    assert [b.size for b in blocks] == [offs[1], offs[2] - offs[1], len(data) - offs[2]]
    assert [b.instant_time for b in reversed(blocks)] == [
        b.instant_time for b in read_log_blocks(STORAGE, _write(tmp_path, data), reverse=True)]


def test_flipped_block_size_becomes_corrupt_block_and_resyncs():
    data, offs = _three_blocks()
    bad = bytearray(data)
    bad[offs[1] + 6 : offs[1] + 14] = struct.pack(">q", 10**9)  # size runs past EOF
    blocks = read_log_blocks_from_bytes(bytes(bad))
    assert _kinds(blocks) == [("AVRO_DATA", offs[0]), ("CORRUPT", offs[1]), ("AVRO_DATA", offs[2])]
    corrupt = blocks[1]
    assert corrupt.corrupt and corrupt.size == offs[2] - offs[1]
    assert corrupt.content == bytes(bad[offs[1] + 6 : offs[2]])  # skipped bytes after the magic


def test_reverse_pointer_mismatch_is_corrupt():
    data, offs = _three_blocks()
    bad = bytearray(data)
    end = offs[2]
    bad[end - 8 : end] = struct.pack(">q", 12345)
    blocks = read_log_blocks_from_bytes(bytes(bad))
    assert _kinds(blocks) == [("AVRO_DATA", offs[0]), ("CORRUPT", offs[1]), ("AVRO_DATA", offs[2])]


def test_truncated_mid_block_yields_trailing_corrupt_block():
    data, offs = _three_blocks()
    cut = data[: offs[2] + 40]
    blocks = read_log_blocks_from_bytes(cut)
    assert _kinds(blocks) == [("AVRO_DATA", offs[0]), ("AVRO_DATA", offs[1]), ("CORRUPT", offs[2])]
    assert blocks[2].size == 40 and len(blocks[2].content) == 34
    # truncated inside the size field, and right after the magic
    assert _kinds(read_log_blocks_from_bytes(data[: offs[2] + 10]))[-1] == ("CORRUPT", offs[2])
    assert _kinds(read_log_blocks_from_bytes(data[: offs[2] + 6]))[-1] == ("CORRUPT", offs[2])


def test_garbage_between_blocks_marks_preceding_block_corrupt_like_hudi():
    data, offs = _three_blocks()
    garbage = b"\x00garbage-bytes\xff" * 3
    bad = data[: offs[2]] + garbage + data[offs[2] :]
    blocks = read_log_blocks_from_bytes(bad)
    # Hudi: the block before the garbage has no magic after it -> corrupt up to next magic
    assert _kinds(blocks) == [("AVRO_DATA", 0), ("CORRUPT", offs[1]), ("AVRO_DATA", offs[2] + len(garbage))]
    assert blocks[1].size == offs[2] - offs[1] + len(garbage)
    assert blocks[2].instant_time == "003"


def test_garbage_containing_partial_magic_and_tiny_tail():
    data, offs = _three_blocks()
    bad = data[: offs[1]] + b"#HUD" + data[offs[1] :] + b"#HU"  # <6 trailing bytes ignored
    blocks = read_log_blocks_from_bytes(bad)
    assert [b.type_name for b in blocks] == ["CORRUPT", "AVRO_DATA", "AVRO_DATA"]
    assert blocks[1].instant_time == "002"


def test_file_not_starting_with_magic_is_an_error(tmp_path):
    data, _ = _three_blocks()
    path = _write(tmp_path, b"XXXXXXXX" + data)
    with pytest.raises(HoodieCorruptedDataError, match="no '#HUDI#' magic at byte 0"):
        list(read_log_blocks(STORAGE, path))
    lenient = list(read_log_blocks(STORAGE, path, lenient_start=True))
    assert [b.type_name for b in lenient] == ["CORRUPT", "AVRO_DATA", "AVRO_DATA", "AVRO_DATA"]
    assert lenient[0].size == 8


def test_empty_and_magic_only_files():
    assert read_log_blocks_from_bytes(b"") == []
    blocks = read_log_blocks_from_bytes(MAGIC)
    assert [b.type_name for b in blocks] == ["CORRUPT"]


def test_flipped_content_byte_is_caught_at_decode(tmp_path):
    """Framing intact, content damaged: blocks still iterate, decoding raises clearly."""
    data, offs = _three_blocks()
    first = read_log_blocks_from_bytes(data)[0]
    content_start = offs[1] - 8 - 4 - len(first.content)  # before footer map + reverse ptr
    bad = bytearray(data)
    bad[content_start + 8 : content_start + 12] = struct.pack(">i", 10**6)  # record length
    path = _write(tmp_path, bytes(bad))
    blocks = list(read_log_blocks(STORAGE, path))
    assert [b.type_name for b in blocks] == ["AVRO_DATA"] * 3
    from airflow_hoodie.table.log.data_block import decode_avro_data_block

    with pytest.raises(HoodieCorruptedDataError, match="runs past the block content"):
        decode_avro_data_block(blocks[0])
    with pytest.raises(HoodieCorruptedDataError, match=r"\.log\.1_0-0-0"):
        scan_log_files(STORAGE, [path], "009", {"001"})
    entries = describe_log_file(STORAGE, path, with_records=True)
    assert "runs past" in entries[0]["error"] and entries[1]["records"]


# ------------------------------------------------------------------ merged scan


def _log(tmp_path: Path, name: str, *blocks) -> str:
    return _write(tmp_path, b"".join(b if isinstance(b, bytes) else serialize_block(b) for b in blocks), name)


def test_scan_filters_uncommitted_future_and_rolled_back(tmp_path):
    f1 = _log(tmp_path, ".f-0_000.log.1_0-0-0",
              _data(["a"], "001"), _data(["x"], "002"),  # 002 fails and is rolled back
              rollback_command_block("003", "002"),
              serialize_block(delete_block([DeleteRecord("a", "", 1)], "004")),
              _data(["p"], "005"),  # 005 is still inflight
              _data(["z"], "009"))  # after the requested point in time
    f2 = _log(tmp_path, ".f-0_000.log.2_0-0-0", _data(["b"], "006"), _data(["q"], "007"))
    res = scan_log_files(STORAGE, [f1, f2], "008", {"001", "002", "004", "006", "009"},
                         inflight_instants={"005"})
    assert [(b.instant_time, b.block_type) for b in res.blocks] == [
        ("001", BlockType.AVRO_DATA), ("004", BlockType.DELETE), ("006", BlockType.AVRO_DATA)]
    assert res.rollback_blocks == 1 and res.rolled_back_blocks == 1
    assert res.skipped_blocks == 3  # 005 inflight, 009 > latest, 007 not committed
    assert res.deletes == [DeleteRecord("a", "", 1)]
    assert [t.column("_hoodie_record_key").to_pylist() for t in res.data_blocks] == [["a"], ["b"]]
    assert res.instants == ["001", "004", "006"]


def test_scan_timeline_start_treats_archived_instants_as_committed(tmp_path):
    f1 = _log(tmp_path, ".f-0_000.log.1_0-0-0", _data(["a"], "001"), _data(["b"], "050"))
    res = scan_log_files(STORAGE, [f1], None, {"050"}, timeline_start="010")
    assert [b.instant_time for b in res.blocks] == ["001", "050"]
    res = scan_log_files(STORAGE, [f1], None, {"050"})
    assert [b.instant_time for b in res.blocks] == ["050"]


def test_rollback_drops_earlier_corrupt_blocks_and_all_blocks_of_target(tmp_path):
    good = _data(["a"], "001")
    broken = bytearray(_data(["bad"], "002"))
    broken[6:14] = struct.pack(">q", 10**9)
    retry1, retry2 = _data(["r1"], "003"), _data(["r2"], "003")
    f1 = _log(tmp_path, ".f-0_000.log.1_0-0-0", good, retry1, bytes(broken))
    f2 = _log(tmp_path, ".f-0_000.log.2_0-0-0", retry2, rollback_command_block("004", "003"),
              _data(["c"], "005"))
    res = scan_log_files(STORAGE, [f1, f2], "009", {"001", "003", "005"})
    assert [b.instant_time for b in res.blocks] == ["001", "005"]
    assert res.corrupt_blocks == 1 and res.rolled_back_blocks == 3
    # without the rollback, the corrupt block is just skipped
    res = scan_log_files(STORAGE, [f1], "009", {"001", "003"})
    assert [b.instant_time for b in res.blocks] == ["001", "003"]
    assert res.corrupt_blocks == 1


def test_scan_without_decode(tmp_path):
    f1 = _log(tmp_path, ".f-0_000.log.1_0-0-0", _data(["a"], "001"))
    res = scan_log_files(STORAGE, [f1], "001", {"001"}, decode=False)
    assert res.blocks[0].table is None and res.blocks[0].block.is_data


# ------------------------------------------------------------------ conformance corpus


def _all_logs(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob(".*.log.*") if p.is_file())


def test_every_conformance_log_file_reads(conformance):
    logs = _all_logs(conformance)
    assert len(logs) >= 7
    for path in logs:
        entries = describe_log_file(STORAGE, str(path), with_records=True)
        assert entries, path
        for e in entries:
            assert not e["corrupt"] and "error" not in e, (path, e)
            if e["type"] in ("AVRO_DATA", "PARQUET_DATA"):
                assert e["record_count"] == len(e["records"]) >= 1
                assert "SCHEMA" in e["headers"] and "INSTANT_TIME" in e["headers"]
            assert sum(x["size"] for x in entries) == path.stat().st_size


def _norm(v):
    if isinstance(v, bytes):
        return {"hex": v.hex()}
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dt.datetime):
        return v.astimezone(dt.timezone.utc).isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return [_norm(x) for x in v]
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


@pytest.mark.parametrize(
    "table,latest_keys",
    [
        ("v6_nonpartitioned", {"1"}),
        ("v6_simplekeygen_nonhivestyle", {"1"}),
        ("v6_trips_8i1u", {"9909a8b1-2d15-4d3d-8ec9-efc48c536a00"}),
        ("v6_nonpartitioned_rollback", {"2"}),
    ],
)
def test_conformance_log_records_match_expected_snapshot(conformance, table, latest_keys):
    """The records the scanner keeps are exactly the snapshot rows last written to logs."""
    expected = json.loads((conformance / "expected/mor" / f"{table}.json").read_text())
    valid = set(expected["completed_write_instants"])
    root = conformance / "tables/mor" / table
    by_group: dict[str, list[Path]] = {}
    for p in _all_logs(root):
        by_group.setdefault(str(p.parent) + p.name.split("_")[0], []).append(p)
    rows = []
    for paths in by_group.values():
        paths.sort(key=lambda p: int(p.name.split(".log.")[1].split("_")[0]))
        res = scan_log_files(STORAGE, [str(p) for p in paths], max(valid), valid)
        for t in res.data_blocks:
            rows.extend(t.to_pylist())
    snapshot = {r["_hoodie_record_key"]: r for r in expected["snapshot"]}
    assert {r["_hoodie_record_key"] for r in rows} == latest_keys
    for r in rows:
        exp = snapshot[r["_hoodie_record_key"]]
        got = {k: _norm(v) for k, v in r.items() if k in exp}
        assert got == exp


def test_conformance_rollback_block_cancels_its_target(conformance):
    """If the rolled-back instant were committed, the rollback block still removes it."""
    root = conformance / "tables/mor/v6_nonpartitioned_rollback"
    paths = sorted(_all_logs(root), key=lambda p: int(p.name.split(".log.")[1].split("_")[0]))
    everything = {"20250126040823628", "20250126040826878", "20250126060846931"}
    res = scan_log_files(STORAGE, [str(p) for p in paths], "20250126060846931", everything)
    assert res.rollback_blocks == 1 and res.rolled_back_blocks == 1
    assert [b.instant_time for b in res.blocks] == ["20250126060846931"]
    # the rollback block alone, from the standalone corpus file
    rb = conformance / "logs/valid_log_rollback/.0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1"
    [block] = list(read_log_blocks(STORAGE, str(rb)))
    assert block.is_rollback and block.target_instant_time == "20250126040826878"


def test_describe_log_file_fields(tmp_path):
    data, offs = _three_blocks()
    bad = bytearray(data)
    bad[offs[1] + 6 : offs[1] + 14] = struct.pack(">q", 10**9)
    path = _write(tmp_path, bytes(bad) + serialize_block(delete_block([DeleteRecord("a", "p", 3)], "004")))
    entries = describe_log_file(STORAGE, path, with_records=True)
    assert [e["type"] for e in entries] == ["AVRO_DATA", "CORRUPT", "AVRO_DATA", "DELETE"]
    assert entries[0]["offset"] == 0 and entries[0]["version"] == 1
    assert entries[0]["headers"]["INSTANT_TIME"] == "001" and entries[0]["record_count"] == 1
    assert entries[1]["corrupt"] and entries[1]["record_count"] is None and "records" not in entries[1]
    assert entries[3]["records"] == [{"record_key": "a", "partition_path": "p", "ordering_value": 3}]
    assert [e.get("records") for e in describe_log_file(STORAGE, path)] == [None] * 4


def test_random_damage_never_escapes_as_a_raw_exception():
    """Flipped bytes and truncation anywhere: blocks become CORRUPT or decoding raises a
    HoodieError with a message — never a KeyError/UnicodeDecodeError from deep inside."""
    import random

    from airflow_hoodie.errors import HoodieError
    from airflow_hoodie.table.log.data_block import (
        decode_data_block,
        parquet_data_block,
    )
    from airflow_hoodie.table.log.delete_block import decode_delete_block

    t = pa.table({
        "_hoodie_record_key": ["a", "bb", "ccc"],
        "s": pa.array([{"x": 1, "m": [("k", 1.5)]}, None, {"x": None, "m": None}],
                      pa.struct([("x", pa.int32()), ("m", pa.map_(pa.string(), pa.float64()))])),
        "d": pa.array([decimal.Decimal("1.23"), None, decimal.Decimal("-9.99")], pa.decimal128(6, 2)),
        "l": pa.array([[1, 2], [], None], pa.list_(pa.int64())),
    })
    schema = arrow_schema_to_avro(t.schema, *table_record_name("f"))
    clean = b"".join(serialize_block(b) for b in [
        avro_data_block(t, schema, "1"),
        delete_block([DeleteRecord("a", "p", 5), DeleteRecord("b", None, dt.date(2020, 1, 1))], "2"),
        rollback_command_block("3", "0"),
        parquet_data_block(t, schema, "4"),
    ])
    rnd = random.Random(7)
    for _ in range(1500):
        data = bytearray(clean)
        for _ in range(rnd.randint(1, 4)):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        if rnd.random() < 0.2:
            data = data[: rnd.randrange(len(data))]
        try:
            for block in read_log_blocks_from_bytes(bytes(data)):
                if block.corrupt:
                    continue
                if block.is_data:
                    decode_data_block(block)
                elif block.is_delete:
                    decode_delete_block(block)
        except HoodieError:
            pass


def test_inner_block_errors_name_the_file_offset(tmp_path):
    data, offs = _three_blocks()
    bad = bytearray(data)
    bad[offs[2] + 18 : offs[2] + 22] = struct.pack(">i", 42)  # block type of the 3rd block
    path = _write(tmp_path, bytes(bad))
    with pytest.raises(HoodieCorruptedDataError, match=f"invalid block type 42 in block at byte {offs[2]}"):
        list(read_log_blocks(STORAGE, path))


def test_partial_update_blocks_are_refused_unless_rolled_back(tmp_path):
    """Hudi 1.x partial-update blocks (header IS_PARTIAL=true) hold only the changed columns:
    read as whole records they would null the rest, so they are refused by name."""
    from airflow_hoodie.errors import HoodieNotSupportedError
    from airflow_hoodie.table.log.log_block import HeaderKey

    t = pa.table({"_hoodie_record_key": ["a"], "v": pa.array([1], pa.int64())})
    partial = avro_data_block(t, arrow_schema_to_avro(t.schema, *table_record_name("t")), "002")
    partial.headers[HeaderKey.IS_PARTIAL] = "true"
    f1 = _log(tmp_path, ".f-0_000.log.1_0-0-0", _data(["a"], "001"), serialize_block(partial))
    with pytest.raises(HoodieNotSupportedError, match="partial updates"):
        scan_log_files(STORAGE, [f1], None, {"001", "002"})
    f2 = _log(tmp_path, ".g-0_000.log.1_0-0-0", _data(["a"], "001"), serialize_block(partial),
              rollback_command_block("003", "002"))
    assert [b.instant_time for b in scan_log_files(STORAGE, [f2], None, {"001", "002"}).blocks] == ["001"]
