"""``hoodie.populate.meta.fields=false`` on a new version 6 table (issue 35): it was ignored
(stored true, meta columns written) while the 1.x path honoured it. Now it is stored and
honoured the same way: a COPY_ON_WRITE table keeps its keys in the key fields, with null
meta columns, read by our reader and hudi-rs; a MERGE_ON_READ one is refused untouched."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows

CFG = {"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
       "hoodie.populate.meta.fields": "false", "hoodie.metadata.enable": "false"}


def _rows(ids, ts, v):
    return pa.table({"id": list(ids), "ts": [ts] * len(ids), "v": [f"{v}{i}" for i in ids]})


def test_a_version_6_copy_on_write_table_without_meta_fields(tmp_path: Path):
    base = tmp_path / "t"
    write_arrow(str(base), _rows([1, 2], 1, "a"), "upsert", CFG, table_name="t")
    write_arrow(str(base), _rows([2, 3], 2, "b"), "upsert", CFG)
    table = HoodieTable.load(str(base))
    assert table.config.table_version == 6
    assert table.config.populate_meta_fields is False
    assert "hoodie.populate.meta.fields=false" in (base / ".hoodie" / "hoodie.properties").read_text()
    for f in base.rglob("*.parquet"):
        if ".hoodie" not in str(f):
            keys = pq.read_table(f, columns=["_hoodie_record_key"]).column(0)
            assert keys.null_count == len(keys)  # meta columns present but empty, as Hudi writes them
    got = {r["id"]: r["v"] for r in read_table(str(base)).to_pylist()}
    assert got == {1: "a1", 2: "b2", 3: "b3"}
    assert sorted((r["id"], r["v"]) for r in hudi_rs_rows(str(base))) == [(1, "a1"), (2, "b2"), (3, "b3")]


def test_a_version_6_merge_on_read_table_without_meta_fields_is_refused_untouched(tmp_path: Path):
    base = tmp_path / "t"
    with pytest.raises(HoodieNotSupportedError, match="MERGE_ON_READ with hoodie.populate.meta.fields=false"):
        write_arrow(str(base), _rows([1], 1, "a"), "upsert", {**CFG, "hoodie.table.type": "MERGE_ON_READ"},
                    table_name="t")
    assert not (base / ".hoodie" / "hoodie.properties").exists()
