"""``_hoodie_file_name`` names the file that holds the row, after every COW merge (Hudi's
merge handle rewrites it for the rows it carries over)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from airflow_hoodie.actions.write import write_arrow
from tests.actions.test_write import conf
from tests.actions.write_model import to_arrow


def test_every_row_names_its_own_file_after_merges(tmp_path):
    base = tmp_path / "t"
    c = conf("COPY_ON_WRITE", **{"hoodie.parquet.small.file.limit": "0"})
    write_arrow(str(base), to_arrow([{"id": i, "ts": 1, "p": "a", "v": f"a{i}"} for i in range(10)]), "upsert", c,
                table_name="t")
    for ts in (2, 3):
        write_arrow(str(base), to_arrow([{"id": i, "ts": ts, "p": "a", "v": f"b{i}"} for i in (ts, ts + 1)]),
                    "upsert", c)
    files = [p for p in base.rglob("*.parquet")]
    assert len(files) >= 3
    for path in files:
        names = set(pq.read_table(path, columns=["_hoodie_file_name"]).column(0).to_pylist())
        assert names == {path.name}, path
