"""Delete blocks as Hudi writes them, checked on the bytes against a real Hudi delete block
(``conformance-next/logs/valid_log_delete``: Spark SQL DELETE on a MOR table, Hudi 0.15)."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pyarrow as pa

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.log import log_block as lb
from airflow_hoodie.table.log.delete_block import _DELETE_PARSED
from airflow_hoodie.table.log.log_reader import read_log_blocks_from_bytes


def _delete_records(block: lb.LogBlock) -> list[dict]:
    rec = fastavro.schemaless_reader(io.BytesIO(block.content[8:]), _DELETE_PARSED, None,
                                     return_record_name=True)
    return rec["deleteRecordList"]


def _delete_blocks(paths) -> list[lb.LogBlock]:
    return [b for p in paths for b in read_log_blocks_from_bytes(Path(p).read_bytes(), str(p)) if b.is_delete]


def test_our_hard_deletes_carry_what_hudi_writes(conformance_next, tmp_path):
    (real,) = _delete_blocks(sorted((conformance_next / "logs" / "valid_log_delete").glob(".*.log.*")))
    base = tmp_path / "t"
    conf = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "uuid",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "city",
            "hoodie.datasource.write.hive_style_partitioning": "true"}
    rows = pa.table({"ts": [1695159649087, 1695091554788], "uuid": ["a", "b"], "rider": ["r1", "r2"],
                     "city": ["san_francisco", "san_francisco"]})
    write_arrow(str(base), rows, "upsert", conf, table_name="t")
    write_arrow(str(base), rows.slice(0, 1), "delete", conf)
    (ours,) = _delete_blocks(sorted(base.rglob(".*.log.*")))

    real_recs, our_recs = _delete_records(real), _delete_records(ours)
    # field by field: same record layout, the ordering value of a hard delete is IntWrapper{0}
    assert [sorted(r) for r in our_recs] == [sorted(r) for r in real_recs[:1]]
    assert {(r["orderingVal"][0], r["orderingVal"][1]["value"]) for r in real_recs} == {
        ("org.apache.hudi.avro.model.IntWrapper", 0)}
    assert our_recs == [{"recordKey": "a", "partitionPath": "city=san_francisco",
                         "orderingVal": ("org.apache.hudi.avro.model.IntWrapper", {"value": 0})}]
    # the same headers: the writer schema and the instant, as Hudi's append handle sets them
    assert set(lb.header_names(ours.headers)) == set(lb.header_names(real.headers)) == {"SCHEMA", "INSTANT_TIME"}
    assert real.content[:4] == ours.content[:4]  # content version 3


def test_a_soft_delete_keeps_its_ordering_value_and_type(tmp_path):
    base = tmp_path / "t"
    conf = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.precombine.field": "ts"}
    write_arrow(str(base), pa.table({"id": ["a"], "ts": pa.array([5], pa.int64()), "v": [1]}), "upsert", conf,
                table_name="t")
    soft = pa.table({"id": ["a"], "ts": pa.array([9], pa.int64()), "v": [2], "_hoodie_is_deleted": [True]})
    write_arrow(str(base), soft, "upsert", conf)
    (ours,) = _delete_blocks(sorted(base.rglob(".*.log.*")))
    assert _delete_records(ours)[0]["orderingVal"] == ("org.apache.hudi.avro.model.LongWrapper", {"value": 9})
