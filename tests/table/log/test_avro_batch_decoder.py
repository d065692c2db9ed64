"""The compiled Avro block decoder must return exactly what the per-record path returns."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.log import avro_batch_decoder
from airflow_hoodie.table.log.data_block import (
    avro_data_block,
    decode_avro_data_block,
    decode_avro_records,
)
from airflow_hoodie.table.log.log_block import LogBlock
from airflow_hoodie.table.log.log_reader import read_log_blocks_from_bytes
from airflow_hoodie.table.schema.avro_convert import (
    arrow_schema_to_avro,
    avro_records_to_arrow,
)


def _reference(block: LogBlock) -> pa.Table:
    return avro_records_to_arrow(decode_avro_records(block), block.schema)


def _rich_table() -> pa.Table:
    return pa.table({
        "_hoodie_record_key": pa.array(["k1", "k2", "k3"]),
        "s": pa.array(["a", None, "ü"]),
        "i": pa.array([1, None, -3], pa.int32()),
        "l": pa.array([2**40, 2, None], pa.int64()),
        "f": pa.array([1.5, None, float("inf")], pa.float32()),
        "d": pa.array([0.1, -0.0, None], pa.float64()),
        "b": pa.array([True, False, None]),
        "bin": pa.array([b"\x00\x01", None, b""]),
        "dec": pa.array([decimal.Decimal("1.23"), None, decimal.Decimal("-4.56")], pa.decimal128(10, 2)),
        "dt": pa.array([dt.date(2024, 1, 1), None, dt.date(1969, 12, 31)]),
        "ts": pa.array([1, None, -3], pa.timestamp("us", tz="UTC")),
        "st": pa.array([{"x": 1, "y": "a"}, None, {"x": None, "y": "b"}],
                       pa.struct([("x", pa.int64()), ("y", pa.string())])),
        "li": pa.array([[1, 2], None, []], pa.list_(pa.int64())),
    })


def test_every_supported_type_decodes_like_the_per_record_path():
    table = _rich_table()
    block = avro_data_block(table, arrow_schema_to_avro(table.schema, "rec", "ns"), "20240101000000000")
    assert avro_batch_decoder.supports(block.schema)
    got = decode_avro_data_block(block)
    assert got.equals(_reference(block))
    assert got.column("dec").to_pylist() == [decimal.Decimal("1.23"), None, decimal.Decimal("-4.56")]


@pytest.mark.parametrize("field_type", [
    {"type": "map", "values": "long"},
    ["null", "int", "string"],
    {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "local-timestamp-micros"},
])
def test_schemas_the_compiled_reader_cannot_decode_exactly_are_left_to_the_reference(field_type):
    schema = {"type": "record", "name": "r", "fields": [{"name": "x", "type": field_type}]}
    assert not avro_batch_decoder.supports(json.dumps(schema))


def test_a_map_column_still_decodes_through_the_reference_path():
    table = pa.table({"m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64()))})
    block = avro_data_block(table, arrow_schema_to_avro(table.schema, "rec", "ns"), "20240101000000000")
    assert not avro_batch_decoder.supports(block.schema)
    assert decode_avro_data_block(block).column("m").to_pylist() == [[("k", 1)], None]


def test_a_length_prefix_that_lies_is_corrupt_data_not_rows():
    table = _rich_table()
    block = avro_data_block(table, arrow_schema_to_avro(table.schema, "rec", "ns"), "20240101000000000")
    content = bytearray(block.content)
    (first_len,) = struct.unpack_from(">i", content, 8)
    struct.pack_into(">i", content, 8, first_len + 1)
    with pytest.raises(ValueError):
        avro_batch_decoder.decode(block.schema, bytes(content))
    bad = LogBlock(block.block_type, block.headers, block.footers, bytes(content))
    with pytest.raises(HoodieCorruptedDataError):
        decode_avro_data_block(bad)


def test_real_hudi_log_blocks_decode_identically(conformance: Path):
    logs = sorted(p for p in conformance.rglob("*") if p.is_file() and ".log." in p.name)
    decoded = 0
    for path in logs:
        for block in read_log_blocks_from_bytes(path.read_bytes(), str(path)):
            if block.is_data and block.block_type.name == "AVRO_DATA" and block.schema:
                assert decode_avro_data_block(block).equals(_reference(block)), path
                decoded += 1
    assert decoded > 0


def test_a_process_forked_after_decoding_still_decodes(tmp_path):
    """Polars' thread pool does not survive fork(); a forked child must not hang."""
    import multiprocessing

    table = _rich_table()
    block = avro_data_block(table, arrow_schema_to_avro(table.schema, "rec", "ns"), "20240101000000000")
    expected = decode_avro_data_block(block)  # uses the compiled reader in this process
    out = tmp_path / "rows.json"

    def child() -> None:
        out.write_text(json.dumps(decode_avro_data_block(block).column("l").to_pylist()))

    proc = multiprocessing.get_context("fork").Process(target=child)
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    assert json.loads(out.read_text()) == expected.column("l").to_pylist()
