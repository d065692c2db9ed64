"""A data block decoded with a projection returns exactly the named columns of the full
decode, in schema order, with every row, on the compiled path and the per-record path
alike. A compaction decodes its log blocks without ``_hoodie_file_name`` this way; a
projected snapshot read decodes only the columns it returns and merges by."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.table.log import avro_batch_decoder
from airflow_hoodie.table.log.data_block import avro_data_block, decode_data_block, parquet_data_block
from airflow_hoodie.table.schema.avro_convert import arrow_schema_to_avro

TABLE = pa.table({
    "_hoodie_record_key": pa.array(["k1", "k2", "k3"]),
    "_hoodie_file_name": pa.array(["f1", "f1", "f2"]),
    "s": pa.array(["a", None, "ü"]),
    "i": pa.array([1, None, -3], pa.int32()),
    "st": pa.array([{"x": 1}, None, {"x": None}], pa.struct([("x", pa.int64())])),
})
PROJECTIONS = [["i", "_hoodie_record_key"], ["st", "absent"], ["absent"], []]


def _blocks():
    schema = arrow_schema_to_avro(TABLE.schema, "rec", "ns")
    return {"avro": avro_data_block(TABLE, schema, "20240101000000000"),
            "parquet": parquet_data_block(TABLE, schema, "20240101000000000")}


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "per_record"])
@pytest.mark.parametrize("kind", ["avro", "parquet"])
def test_projected_decode_is_the_full_decode_narrowed(kind: str, compiled: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    if not compiled:
        monkeypatch.setattr(avro_batch_decoder, "supports", lambda schema: False)
    block = _blocks()[kind]
    full = decode_data_block(block)
    assert full.column_names == TABLE.column_names
    for columns in PROJECTIONS:
        got = decode_data_block(block, columns)
        assert got.num_rows == 3
        assert got.column_names == [c for c in TABLE.column_names if c in columns]
        assert got.equals(full.select(got.column_names))
