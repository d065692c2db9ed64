"""A COPY_ON_WRITE merge in which every incoming record of the file group loses to the stored
row (an older ordering value) writes no new row, but still rewrites the file under the new
instant. Found on a Hudi-written conformance table (cow/v9_timebasedkeygen_nonhivestyle,
a key stored in two file groups): the rewritten file must be the one its rows, as plain
strings, make -- no value of the new instant in the commit-time dictionary."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from airflow_hoodie.actions.write import write_arrow
from tests.table.file_group.test_attack_merge_dictionaries import CFG, _as_strings_digest, _digest, _latest_file, _rows


def test_a_merge_whose_records_all_lose_writes_no_unused_commit_time(tmp_path: Path) -> None:
    base = tmp_path / "t"
    cfg = {**CFG, "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}
    write_arrow(str(base), _rows(list(range(6)), 5), "insert", cfg)
    write_arrow(str(base), _rows([0, 1], 6), "upsert", cfg)
    write_arrow(str(base), _rows([2, 3], 1), "upsert", cfg)  # older ordering values: both lose
    path = _latest_file(base)
    rows = pq.read_table(path)
    assert rows.num_rows == 6 and set(rows.column("ts").to_pylist()) == {5, 6}
    assert path.stem.rsplit("_", 1)[1] not in set(rows.column("_hoodie_commit_time").to_pylist())
    assert _digest(path) == _as_strings_digest(path, tmp_path / "ref")
