"""Log block framing and content codecs, checked against blocks real Hudi wrote."""

from __future__ import annotations

import datetime as dt
import decimal
import struct

import pyarrow as pa
import pytest

from airflow_hoodie.errors import (
    HoodieCorruptedDataError,
    HoodieNotSupportedError,
    HoodieSchemaError,
)
from airflow_hoodie.table.log.data_block import (
    avro_data_block,
    decode_avro_data_block,
    decode_data_block,
    decode_parquet_data_block,
    parquet_data_block,
)
from airflow_hoodie.table.log.delete_block import (
    DeleteRecord,
    decode_delete_block,
    delete_block,
)
from airflow_hoodie.table.log.log_block import (
    MAGIC,
    BlockType,
    HeaderKey,
    LogBlock,
    decode_metadata,
    encode_metadata,
    header_names,
    parse_block_body,
    rollback_command_block,
    serialize_block,
)
from airflow_hoodie.table.schema.avro_convert import (
    arrow_schema_to_avro,
    table_record_name,
)

AVRO_LOG = "logs/valid_log_avro_data/.ff32ab89-5ad0-4968-83b4-89a34c95d32f-0_20250316025816068.log.1_0-54-122"
ROLLBACK_LOG = "logs/valid_log_rollback/.0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1"


def _table() -> pa.Table:
    return pa.table(
        {
            "_hoodie_record_key": ["k1", "k2", "k3"],
            "ts": pa.array([1, 2, None], pa.int64()),
            "amount": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("-3.25")], pa.decimal128(8, 2)),
            "day": pa.array([dt.date(2024, 1, 1), dt.date(1960, 5, 5), None], pa.date32()),
            "at": pa.array([0, -1, 1_700_000_000_000_000], pa.timestamp("us", tz="UTC")),
        }
    )


def _schema(t: pa.Table) -> dict:
    return arrow_schema_to_avro(t.schema, *table_record_name("tbl"))


def test_metadata_map_encoding_is_javas():
    data = encode_metadata({HeaderKey.INSTANT_TIME: "001", HeaderKey.COMMAND_BLOCK_TYPE: "0"})
    assert data == struct.pack(">iii3sii1s", 2, 0, 3, b"001", 3, 1, b"0")
    assert decode_metadata(data, 0) == ({HeaderKey.INSTANT_TIME: "001", HeaderKey.COMMAND_BLOCK_TYPE: "0"}, len(data))
    # unknown ordinals (newer Hudi) survive as ints
    assert decode_metadata(encode_metadata({9: "x"}), 0)[0] == {9: "x"}


def test_hudi_avro_block_reparses_and_reserializes_byte_identically(conformance):
    data = (conformance / AVRO_LOG).read_bytes()
    block = parse_block_body(data, 0)
    assert block.block_type == BlockType.AVRO_DATA and block.version == 1
    assert block.size == len(data) and block.instant_time == "20250316025828811"
    assert serialize_block(block) == data
    table = decode_avro_data_block(block)
    assert table.num_rows == 1
    row = table.to_pylist()[0]
    assert row["_hoodie_record_key"] == "334e26e9-8355-45cc-97c6-c31daf0df330"
    assert row["rider"] == "rider-A" and row["fare"] == 29.1 and row["ts"] == 1695159649088
    assert table.column_names[:5] == [
        "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
        "_hoodie_partition_path", "_hoodie_file_name",
    ]


def test_hudi_rollback_block(conformance):
    data = (conformance / ROLLBACK_LOG).read_bytes()
    block = parse_block_body(data, 0)
    assert block.is_rollback
    assert header_names(block.headers) == {
        "INSTANT_TIME": "20250126040936578",
        "COMMAND_BLOCK_TYPE": "0",
        "TARGET_INSTANT_TIME": "20250126040826878",
    }
    assert serialize_block(block) == data
    ours = rollback_command_block("20250126040936578", "20250126040826878")
    assert len(serialize_block(ours)) == len(data)  # same bytes up to header order
    assert parse_block_body(serialize_block(ours), 0).headers == block.headers


def test_framing_layout_of_a_block_we_write():
    block = rollback_command_block("002", "001")
    data = serialize_block(block)
    assert data[:6] == MAGIC
    (size,) = struct.unpack(">q", data[6:14])
    assert size == len(data) - 14
    assert struct.unpack(">ii", data[14:22]) == (1, int(BlockType.COMMAND))
    (rp,) = struct.unpack(">q", data[-8:])
    assert rp == size + 6 == len(data) - 8
    again = parse_block_body(data, 0)
    assert serialize_block(again) == data
    assert (again.block_type, again.headers, again.footers, again.content) == (
        block.block_type, block.headers, block.footers, block.content)


def test_avro_data_block_round_trip_bytes_and_records():
    t = _table()
    block = avro_data_block(t, _schema(t), "20240101000000000")
    data = serialize_block(block)
    parsed = parse_block_body(data, 0)
    assert serialize_block(parsed) == data
    assert struct.unpack(">ii", parsed.content[:8]) == (3, 3)  # content version 3, 3 records
    out = decode_avro_data_block(parsed)
    assert out.equals(t)


def test_parquet_data_block_round_trip_and_hudi_block(conformance):
    t = _table()
    block = parquet_data_block(t, _schema(t), "002")
    parsed = parse_block_body(serialize_block(block), 0)
    assert parsed.content[:4] == b"PAR1"
    assert decode_parquet_data_block(parsed).equals(t)
    hudi = (conformance / "tables/mor/v6_nonpartitioned/.d206069c-22c8-4532-b9ea-3cf4282342c4-0_20250117083125837.log.1_0-33-43").read_bytes()
    hb = parse_block_body(hudi, 0)
    assert hb.block_type == BlockType.PARQUET_DATA
    table = decode_data_block(hb)
    assert table.num_rows == 1 and table.column("name").to_pylist() == ["Alice"]
    # the same records through an Avro block of the same schema
    again = decode_avro_data_block(parse_block_body(serialize_block(avro_data_block(table, hb.schema, "1")), 0))
    assert again.equals(table)


def test_delete_block_v3_round_trip_with_wrappers():
    keys = [
        DeleteRecord("k1", "p1", 7),
        DeleteRecord("k2", "p1", None),
        DeleteRecord("k3", "", "ord"),
        DeleteRecord("k4", "p2", 1.5),
        DeleteRecord("k5", "p2", dt.date(2024, 5, 1)),
        DeleteRecord("k6", "p2", dt.datetime(2024, 5, 1, 1, 2, 3, 4, tzinfo=dt.timezone.utc)),
        DeleteRecord("k7", "p2", True),
        DeleteRecord("k8", "p2", b"\x01"),
    ]
    block = delete_block(keys, "003")
    parsed = parse_block_body(serialize_block(block), 0)
    assert parsed.block_type == BlockType.DELETE and parsed.instant_time == "003"
    version, length = struct.unpack(">ii", parsed.content[:8])
    assert version == 3 and length == len(parsed.content) - 8
    # no ordering value is Hudi's natural order: written as IntWrapper{0}, read back as 0
    assert decode_delete_block(parsed) == [DeleteRecord(k.record_key, k.partition_path, 0)
                                           if k.ordering_value is None else k for k in keys]


def test_delete_block_ordering_type_selects_int_wrapper():
    block = delete_block([DeleteRecord("k", "p", 5)], "1", ordering_type=pa.int32())
    # union index 2 (IntWrapper) zig-zag encoded as 4 after the two string unions
    assert decode_delete_block(block) == [DeleteRecord("k", "p", 5)]
    long_block = delete_block([DeleteRecord("k", "p", 5)], "1")
    assert block.content != long_block.content


def test_malformed_blocks_raise_corrupted_errors():
    t = _table()
    good = avro_data_block(t, _schema(t), "1")
    bad_count = LogBlock(BlockType.AVRO_DATA, good.headers, {}, struct.pack(">ii", 3, 99) + good.content[8:])
    with pytest.raises(HoodieCorruptedDataError, match="declared record count"):
        decode_avro_data_block(bad_count)
    garbage = LogBlock(BlockType.AVRO_DATA, good.headers, {}, good.content[:12] + b"\xff" * (len(good.content) - 12))
    with pytest.raises(HoodieCorruptedDataError):
        decode_avro_data_block(garbage)
    no_schema = LogBlock(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "1"}, {}, good.content)
    with pytest.raises(HoodieCorruptedDataError, match="no SCHEMA header"):
        decode_avro_data_block(no_schema)
    with pytest.raises(HoodieCorruptedDataError, match="not a readable parquet"):
        decode_parquet_data_block(LogBlock(BlockType.PARQUET_DATA, good.headers, {}, b"PAR1nope"))
    with pytest.raises(HoodieCorruptedDataError, match="truncated"):
        decode_delete_block(LogBlock(BlockType.DELETE, {}, {}, b"\x00\x00"))
    with pytest.raises(HoodieNotSupportedError, match="content version 2"):
        decode_delete_block(LogBlock(BlockType.DELETE, {}, {}, struct.pack(">ii", 2, 1) + b"x"))
    # framing valid, but the block type ordinal is unknown
    data = bytearray(serialize_block(rollback_command_block("2", "1")))
    data[18:22] = struct.pack(">i", 42)
    with pytest.raises(HoodieCorruptedDataError, match="invalid block type 42"):
        parse_block_body(bytes(data), 0)
    # header count running past the block
    data = bytearray(serialize_block(rollback_command_block("2", "1")))
    data[22:26] = struct.pack(">i", 50)
    with pytest.raises(HoodieCorruptedDataError):
        parse_block_body(bytes(data), 0)


def test_records_not_matching_schema_raise_schema_error():
    t = _table()
    with pytest.raises(HoodieSchemaError):
        avro_data_block(t.drop_columns(["_hoodie_record_key"]), _schema(t).copy() | {
            "fields": [{"name": "_hoodie_record_key", "type": "string"}]}, "1")
    with pytest.raises(HoodieSchemaError):
        delete_block([DeleteRecord("k", "p", object())], "1")


def test_parse_block_body_rejects_short_or_foreign_bytes():
    data = serialize_block(rollback_command_block("2", "1"))
    with pytest.raises(HoodieCorruptedDataError, match="declares"):
        parse_block_body(data[:-3], 0)
    with pytest.raises(HoodieCorruptedDataError, match="magic"):
        parse_block_body(b"PAR1" + data, 0)
    with pytest.raises(HoodieCorruptedDataError):
        parse_block_body(MAGIC + b"\x00", 0)
    block = parse_block_body(b"xx" + data, 2, file_offset=1000)
    assert block.offset == 1000 and block.size == len(data)
