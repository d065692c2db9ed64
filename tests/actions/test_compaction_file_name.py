"""A compaction reads every column but ``_hoodie_file_name`` and names the new file in it:
each row of a compacted base file carries that file's own name, also when a later write
added a column (old rows read it as null)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable

CFG = {"hoodie.table.name": "t", "hoodie.datasource.write.table.type": "MERGE_ON_READ",
       "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
       "hoodie.datasource.write.precombine.field": "ts", "hoodie.parquet.small.file.limit": "0"}


def test_compacted_rows_name_their_new_file_and_keep_an_added_column(tmp_path) -> None:
    base = str(tmp_path / "t")
    write_arrow(base, pa.table({"id": [f"k{i}" for i in range(6)], "p": ["a"] * 6, "ts": [1] * 6,
                                "v": list(range(6))}), "insert", CFG)
    write_arrow(base, pa.table({"id": ["k1", "k3"], "p": ["a", "a"], "ts": [2, 2], "v": [10, 30],
                                "extra": ["x1", "x3"]}), "upsert", CFG)
    c.schedule_compaction(HoodieTable.load(base), HoodieConfig({}), force=True)
    res = c.execute_pending_compactions(HoodieTable.load(base), LocalExecutor())
    assert res["state"] == "completed" and res["records_written"] == 6
    newest = max((f for f in os.listdir(os.path.join(base, "a")) if f.endswith(".parquet")),
                 key=lambda f: f.rsplit("_", 1)[1])
    table = pq.read_table(os.path.join(base, "a", newest))
    assert set(table.column("_hoodie_file_name").to_pylist()) == {newest}
    rows = {r["id"]: (r["v"], r["extra"]) for r in table.select(["id", "v", "extra"]).to_pylist()}
    assert rows == {"k0": (0, None), "k1": (10, "x1"), "k2": (2, None), "k3": (30, "x3"), "k4": (4, None),
                    "k5": (5, None)}
