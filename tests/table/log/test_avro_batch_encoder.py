"""The bulk Avro encoder of data blocks gives the per-record path's bytes (fastavro, the reference)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from airflow_hoodie.table.log import avro_batch_encoder, data_block
from airflow_hoodie.table.log.data_block import avro_data_block, decode_avro_data_block, encode_avro_records
from airflow_hoodie.table.log.log_block import writer_schema_json
from airflow_hoodie.table.schema.avro_convert import arrow_to_avro_records

_TEXT = ["", "a", "é", "日本", "x" * 70, "y" * 200, "\x00z", "🙂" * 40]


def _reference(records: pa.Table, schema: dict) -> bytes:
    schema_json = writer_schema_json(schema)
    return encode_avro_records(arrow_to_avro_records(records, schema_json), schema_json)


def _bulk(records: pa.Table, schema: dict) -> bytes:
    content = data_block._bulk_avro_content(records, writer_schema_json(schema))
    assert content is not None, "the bulk path must take this schema"
    return content


def _table(n: int, nulls: bool, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    mask = (rng.random(n) < 0.25) if nulls else None
    longs = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    edges = [0, -1, 1, 63, -64, 64, -65, 2**63 - 1, -2**63]  # varint and zig-zag boundaries
    longs[:min(n, len(edges))] = edges[:min(n, len(edges))]
    text = ["".join(_TEXT[j] for j in rng.integers(0, len(_TEXT), rng.integers(0, 4))) for _ in range(n)]
    return pa.table({
        "s": pa.array([None if mask is not None and mask[i] else t for i, t in enumerate(text)], pa.string()),
        "l": pa.array(longs, pa.int64(), mask=mask),
        "i": pa.array(rng.integers(-2**31, 2**31 - 1, n).astype(np.int32), pa.int32(), mask=mask),
        "d": pa.array(rng.normal(size=n) * 1e300, pa.float64(), mask=mask),
        "f": pa.array(rng.normal(size=n).astype(np.float32), pa.float32(), mask=mask),
        "b": pa.array(rng.random(n) < 0.5, pa.bool_(), mask=mask),
        "y": pa.array([None if mask is not None and mask[i] else bytes(rng.integers(0, 256, i % 200, dtype=np.uint8))
                       for i in range(n)], pa.binary()),
        "required_long": pa.array(longs, pa.int64()),
        "required_text": pa.array(text, pa.string()),
    })


def _schema(null_first: bool) -> dict:
    def union(t: str) -> list[str]:
        return ["null", t] if null_first else [t, "null"]
    return {"type": "record", "name": "r", "fields": [
        {"name": "s", "type": union("string")}, {"name": "l", "type": union("long")},
        {"name": "i", "type": union("int")}, {"name": "d", "type": union("double")},
        {"name": "f", "type": union("float")}, {"name": "b", "type": union("boolean")},
        {"name": "y", "type": union("bytes")}, {"name": "required_long", "type": "long"},
        {"name": "required_text", "type": "string"}]}


@pytest.mark.parametrize("n", [0, 1, 300])
@pytest.mark.parametrize("nulls,null_first", [(False, True), (True, True), (False, False), (True, False)])
def test_bulk_content_is_the_per_record_content(n, nulls, null_first):
    table, schema = _table(n, nulls), _schema(null_first)
    assert _bulk(table, schema) == _reference(table, schema)
    # a slice (buffers with an offset) and several chunks
    part = table.slice(min(n, 5), n // 2)
    assert _bulk(part, schema) == _reference(part, schema)
    chunked = pa.concat_tables([table.slice(0, n // 3), table.slice(n // 3)])
    assert _bulk(chunked, schema) == _reference(chunked, schema)


def test_special_floats_encode_bit_for_bit():
    table = pa.table({"d": pa.array([float("nan"), float("inf"), float("-inf"), -0.0, None]),
                      "f": pa.array([float("nan"), -0.0, 1e30, -1e-30, None], pa.float32())})
    schema = {"type": "record", "name": "r", "fields": [{"name": "d", "type": ["null", "double"]},
                                                       {"name": "f", "type": ["null", "float"]}]}
    assert _bulk(table, schema) == _reference(table, schema)


def test_a_block_decodes_to_its_records():
    table, schema = _table(50, True, seed=3), _schema(True)
    block = avro_data_block(table, schema, "20260101000000000")
    assert decode_avro_data_block(block).to_pylist() == table.to_pylist()


@pytest.mark.parametrize("field,column", [
    ({"name": "t", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
     pa.array([1, None], pa.timestamp("us", tz="UTC"))),
    ({"name": "t", "type": ["null", {"type": "record", "name": "n", "fields": [{"name": "a", "type": "int"}]}]},
     pa.array([{"a": 1}, None], pa.struct([("a", pa.int32())]))),
    ({"name": "t", "type": ["null", {"type": "map", "values": "long"}]},
     pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64()))),
    ({"name": "t", "type": "string"}, pa.array(["a", None])),  # a null where the schema has none
])
def test_other_schemas_take_the_per_record_path(field, column):
    """Types the bulk encoder leaves alone: logical types, records, maps, and a null in a
    field that takes none (the reference path says why)."""
    schema = {"type": "record", "name": "r", "fields": [field]}
    table = pa.table({"t": column})
    assert data_block._bulk_avro_content(table, writer_schema_json(schema)) is None
    if field["type"] != "string":
        block = avro_data_block(table, schema, "20260101000000000")
        assert block.content == _reference(table, schema)


def test_plan_needs_every_field_as_a_column():
    schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": "long"}]}
    assert avro_batch_encoder.plan(schema, pa.table({"a": [1]})) is None
    assert avro_batch_encoder.plan(schema, pa.table({"a": [1], "b": [2]})) == [("a", "long", None), ("b", "long", None)]
