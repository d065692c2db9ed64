"""Upsert and delete into tables with struct, list and map columns through the in-process
write path (the key join carries only keys; nested columns ride along by row)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows, normalize_table

STRUCT = pa.struct([("x", pa.int64()), ("tags", pa.list_(pa.string()))])


def _rows(ids, ts, tag):
    return pa.table({
        "id": ids, "ts": [ts] * len(ids), "p": ["a"] * len(ids),
        "s": pa.array([{"x": i * ts, "tags": [tag, str(i)]} for i in ids], STRUCT),
        "l": pa.array([[i, ts] for i in ids], pa.list_(pa.int64())),
    })


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_nested_columns_upsert_and_delete_like_hudi_rs_reads_them(tmp_path, table_type):
    base = str(tmp_path / "t")
    c = {"hoodie.table.type": table_type, "hoodie.datasource.write.recordkey.field": "id",
         "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p"}
    write_arrow(base, _rows([1, 2, 3], 1, "a"), "upsert", c, table_name="t")
    write_arrow(base, _rows([2, 4], 2, "b"), "upsert", c)
    write_arrow(base, _rows([3], 3, "c"), "delete", c)
    got = {r["id"]: (r["s"], r["l"]) for r in read_table(base).to_pylist()}
    assert got == {1: ({"x": 1, "tags": ["a", "1"]}, [1, 1]), 2: ({"x": 4, "tags": ["b", "2"]}, [2, 2]),
                   4: ({"x": 8, "tags": ["b", "4"]}, [4, 2])}
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
