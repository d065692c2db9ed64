"""Avro <-> Arrow conversion with Hudi's schema naming."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct

import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieNotSupportedError, HoodieSchemaError
from airflow_hoodie.table.schema.avro_convert import (
    arrow_schema_to_avro,
    arrow_to_avro_records,
    avro_records_to_arrow,
    avro_to_arrow_schema,
    conform_table,
    min_bytes_for_precision,
    strip_logical_types,
    table_record_name,
)

NONPART_LOG = "tables/mor/v6_nonpartitioned/.d206069c-22c8-4532-b9ea-3cf4282342c4-0_20250117083125837.log.1_0-33-43"


def _schema_of_log(path) -> dict:
    data = path.read_bytes()
    i = data.index(b'{"type"')
    (n,) = struct.unpack(">i", data[i - 4 : i])
    return json.loads(data[i : i + n])


def test_hudi_written_schema_round_trips_exactly(conformance):
    """The schema real Hudi put in a log block is reproduced key for key from Arrow."""
    hudi = _schema_of_log(conformance / NONPART_LOG)
    arrow = avro_to_arrow_schema(hudi)
    ours = arrow_schema_to_avro(arrow, *table_record_name("v6_nonpartitioned"))
    assert json.dumps(ours) == json.dumps(hudi)
    assert arrow.field("decimalField").type == pa.decimal128(10, 5)
    assert arrow.field("timestampField").type == pa.timestamp("us", tz="UTC")
    assert arrow.field("dateField").type == pa.date32()
    assert pa.types.is_map(arrow.field("mapField").type)


def test_naming_conventions():
    schema = pa.schema(
        [
            pa.field("_hoodie_commit_time", pa.string()),
            pa.field("id", pa.int64(), nullable=False),
            pa.field("amount", pa.decimal128(20, 2)),
            pa.field("s", pa.struct([pa.field("inner", pa.struct([pa.field("x", pa.int16())]))])),
            pa.field("arr", pa.list_(pa.field("element", pa.struct([pa.field("a", pa.string())])))),
        ]
    )
    avro = arrow_schema_to_avro(schema, "t_record", "hoodie.t")
    f = {x["name"]: x for x in avro["fields"]}
    assert avro["name"] == "t_record" and avro["namespace"] == "hoodie.t"
    assert f["_hoodie_commit_time"] == {
        "name": "_hoodie_commit_time", "type": ["null", "string"], "doc": "", "default": None
    }
    assert f["id"] == {"name": "id", "type": "long"}  # required: no union, no default
    dec = f["amount"]["type"][1]
    assert dec["name"] == "fixed" and dec["namespace"] == "hoodie.t.t_record.amount"
    assert dec["size"] == min_bytes_for_precision(20) == 9
    rec = f["s"]["type"][1]
    assert (rec["name"], rec["namespace"]) == ("s", "hoodie.t.t_record")
    inner = rec["fields"][0]["type"][1]
    assert (inner["name"], inner["namespace"]) == ("inner", "hoodie.t.t_record.s")
    assert inner["fields"][0]["type"] == ["null", "int"]
    items = f["arr"]["type"][1]["items"]
    assert items[0] == "null" and items[1]["name"] == "arr"


def test_logical_types_map_to_arrow():
    avro = {
        "type": "record", "name": "r", "fields": [
            {"name": "tm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "tu", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
            {"name": "lt", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
            {"name": "d", "type": {"type": "int", "logicalType": "date"}},
            {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "db", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}},
            {"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}},
            {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 3}},
            {"name": "fx2", "type": "F"},
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
            {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
        ]
    }
    s = avro_to_arrow_schema(json.dumps(avro))
    assert s.field("tm").type == pa.timestamp("ms", tz="UTC")
    assert s.field("tu").type == pa.timestamp("us", tz="UTC") and s.field("tu").nullable
    assert not s.field("tm").nullable
    assert s.field("lt").type == pa.timestamp("us")
    assert s.field("d").type == pa.date32()
    assert s.field("u").type == pa.string()
    assert s.field("db").type == pa.decimal128(5, 2)
    assert s.field("big").type == pa.decimal256(40, 2)
    assert s.field("fx").type == s.field("fx2").type == pa.binary(3)
    assert s.field("e").type == pa.string()
    assert s.field("t").type == pa.time32("ms")
    stripped = strip_logical_types(avro)
    assert stripped["fields"][0]["type"] == "long"
    assert stripped["fields"][5]["type"]["logicalType"] == "decimal"  # decimals stay


def test_record_round_trip_all_types():
    schema = pa.schema(
        [
            pa.field("k", pa.string(), nullable=False),
            pa.field("i", pa.int32()),
            pa.field("l", pa.int64()),
            pa.field("f", pa.float32()),
            pa.field("b", pa.bool_()),
            pa.field("bin", pa.binary()),
            pa.field("dec", pa.decimal128(10, 3)),
            pa.field("d", pa.date32()),
            pa.field("ts", pa.timestamp("us", tz="UTC")),
            pa.field("m", pa.map_(pa.string(), pa.int64())),
            pa.field("st", pa.struct([pa.field("ts2", pa.timestamp("us", tz="UTC")),
                                      pa.field("mm", pa.map_(pa.string(), pa.string()))])),
            pa.field("lst", pa.list_(pa.field("element", pa.date32()))),
        ]
    )
    rows = [
        {"k": "a", "i": 1, "l": 2**40, "f": 1.5, "b": True, "bin": b"\x00\x01",
         "dec": decimal.Decimal("-12.345"), "d": dt.date(2024, 2, 29),
         "ts": dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc), "m": [("x", 1), ("y", 2)],
         "st": {"ts2": dt.datetime(1969, 12, 31, tzinfo=dt.timezone.utc), "mm": [("q", "r")]},
         "lst": [dt.date(2000, 1, 1), None]},
        {"k": "b", "i": None, "l": None, "f": None, "b": None, "bin": None, "dec": None, "d": None,
         "ts": None, "m": None, "st": None, "lst": None},
    ]
    table = pa.Table.from_pylist(rows, schema=schema)
    avro = arrow_schema_to_avro(schema, "t_record", "hoodie.t")
    recs = arrow_to_avro_records(table, avro)
    assert recs[0]["m"] == {"x": 1, "y": 2}  # Avro maps are dicts
    assert isinstance(recs[0]["ts"], int)  # logical types travel as ints
    import io

    import fastavro

    parsed = fastavro.parse_schema(strip_logical_types(avro))
    decoded = []
    for r in recs:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        buf.seek(0)
        decoded.append(fastavro.schemaless_reader(buf, parsed, None))
    back = avro_records_to_arrow(decoded, avro)
    assert back.equals(conform_table(table, avro_to_arrow_schema(avro)))


def test_conform_table_fills_and_rejects():
    target = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.string())])
    out = conform_table(pa.table({"a": pa.array([1, 2], pa.int32())}), target)
    assert out.schema == target and out.column("b").null_count == 2
    with pytest.raises(HoodieSchemaError, match="required"):
        conform_table(pa.table({"b": ["x"]}), pa.schema([pa.field("a", pa.int64(), nullable=False)]))
    with pytest.raises(HoodieSchemaError, match="cannot be converted"):
        conform_table(pa.table({"a": ["not a number"]}), target)


def test_unsupported_schemas_raise_clearly():
    with pytest.raises(HoodieSchemaError, match="string keys"):
        arrow_schema_to_avro(pa.schema([pa.field("m", pa.map_(pa.int32(), pa.int32()))]), "r")
    with pytest.raises(HoodieNotSupportedError, match="non-null branches"):
        avro_to_arrow_schema({"type": "record", "name": "r",
                              "fields": [{"name": "x", "type": ["null", "int", "string"]}]})
    with pytest.raises(HoodieSchemaError, match="not valid JSON"):
        avro_to_arrow_schema("{nope")
    with pytest.raises(HoodieSchemaError, match="unknown named type"):
        avro_to_arrow_schema({"type": "record", "name": "r", "fields": [{"name": "x", "type": "Missing"}]})


def test_records_with_logical_objects_convert_too():
    avro = {"type": "record", "name": "r", "fields": [
        {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": None},
        {"name": "d", "type": {"type": "int", "logicalType": "date"}}]}
    rows = [{"ts": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), "d": dt.date(2024, 1, 2)}]
    t = avro_records_to_arrow(rows, avro)
    assert t.to_pylist() == rows
    # and the ints we produce encode under the unstripped schema as well
    import io

    import fastavro

    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(avro), arrow_to_avro_records(t, avro)[0])
    buf.seek(0)
    assert fastavro.schemaless_reader(buf, fastavro.parse_schema(avro), None) == rows[0]
