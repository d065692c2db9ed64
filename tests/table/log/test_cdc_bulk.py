"""The column-by-column CDC block encoder (cdc_bulk) writes the very bytes of the per-record
reference path (cdc_block.cdc_data_block over fastavro), in every supplemental logging mode, with
nulls, unicode, logical types and empty segments; it declines schemas it cannot encode, and the
block then still comes out of the reference path."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from airflow_hoodie.table.log.cdc_block import (
    DELETE,
    INSERT,
    LOGGING_MODES,
    UPDATE,
    CdcSegment,
    cdc_data_block,
    cdc_segments_block,
    segment_changes,
)
from airflow_hoodie.table.log.cdc_bulk import cdc_records_content
from airflow_hoodie.table.log.log_block import serialize_block

INSTANT = "20240102030405678"

SCHEMA = {"type": "record", "name": "rec", "namespace": "hoodie.t", "fields": [
    {"name": "id", "type": "long"},
    {"name": "name", "type": ["null", "string"], "default": None},
    {"name": "price", "type": ["null", "double"], "default": None},
    {"name": "qty", "type": ["null", "int"], "default": None},
    {"name": "flag", "type": ["null", "boolean"], "default": None},
    {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": None},
    {"name": "p", "type": "string"},
]}


def rows(ids: list[int], seed: int) -> pa.Table:
    n = len(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([None if (i + seed) % 4 == 0 else f"nåme-{i}-{'x' * (i % 70)}" for i in ids]),
        "price": pa.array([None if (i + seed) % 5 == 0 else i * 1.5 + seed for i in ids]),
        "qty": pa.array([None if i % 3 == 0 else -i * 1000003 for i in ids], pa.int32()),
        "flag": pa.array([None if i % 7 == 0 else bool(i % 2) for i in ids]),
        "ts": pa.array([None if i % 6 == 0 else dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i * 37 + seed)
                        for i in ids], pa.timestamp("us")),
        "p": pa.array([f"2024/01/{i % 28 + 1:02d}" for i in ids]),
        "_hoodie_record_key": pa.array([f"id:{i}" for i in ids]),
    }).slice(0, n)


def segments(mode: str) -> list[CdcSegment]:
    """Updates, deletes and inserts with the images ``mode`` logs (as cdc_write builds them)."""
    before, after = rows(list(range(0, 300)), 1), rows(list(range(0, 300)), 2)
    deleted, inserted = rows(list(range(300, 340)), 1), rows(list(range(1000, 1500)), 3)
    both, with_before = mode == "DATA_BEFORE_AFTER", mode != "OP_KEY_ONLY"
    keys = lambda t: t.column("_hoodie_record_key").combine_chunks()  # noqa: E731
    return [CdcSegment(UPDATE, keys(after), before if with_before else None, after if both else None),
            CdcSegment(DELETE, keys(deleted), deleted if with_before else None),
            CdcSegment(INSERT, keys(inserted), None, inserted if both else None),
            CdcSegment(UPDATE, pa.array([], pa.string()))]


@pytest.mark.parametrize("mode", LOGGING_MODES)
def test_bulk_block_is_byte_identical_to_the_per_record_block(mode):
    segs = segments(mode)
    assert cdc_records_content(INSTANT, SCHEMA, mode, segs, b"") is not None, "the bulk path is taken"
    reference = serialize_block(cdc_data_block(INSTANT, SCHEMA, mode, segment_changes(segs, SCHEMA)))
    assert serialize_block(cdc_segments_block(INSTANT, SCHEMA, mode, segs)) == reference


def test_a_schema_the_bulk_encoder_declines_falls_back_to_the_reference_bytes():
    schema = {**SCHEMA, "fields": [*SCHEMA["fields"], {"name": "amount", "type": {
        "type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}}]}
    t = rows([1, 2, 3], 0).append_column("amount", pa.array([decimal.Decimal("1.25")] * 3, pa.decimal128(10, 2)))
    segs = [CdcSegment(UPDATE, t.column("_hoodie_record_key").combine_chunks(), t, t)]
    assert cdc_records_content(INSTANT, schema, "DATA_BEFORE_AFTER", segs, b"") is None
    reference = serialize_block(cdc_data_block(INSTANT, schema, "DATA_BEFORE_AFTER", segment_changes(segs, schema)))
    assert serialize_block(cdc_segments_block(INSTANT, schema, "DATA_BEFORE_AFTER", segs)) == reference
