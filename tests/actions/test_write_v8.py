"""Hudi 1.0 (table version 8) where it differs from 1.1 (version 9): the table config keeps the
ordering field as ``hoodie.table.precombine.field`` (9: ``hoodie.table.ordering.fields``),
has no ``hoodie.table.format``, and names the payload of its merge mode in
``hoodie.compaction.payload.class`` (9 keeps only ``hoodie.table.legacy.payload.class``).
The timeline, logs and services are those of version 9, tested by the modules that run on
versions 6 and 9 (tests/actions/table_versions.py); here a version 8 table is written through
the same model check, and its ``hoodie.properties`` compared with the one Hudi 1.0 wrote in the
conformance set."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.properties import load_java_properties
from airflow_hoodie.table.read import read_table
from tests.actions.write_model import TableModel, actual, random_batch, to_arrow
from tests.table.normalize import hudi_rs_rows, normalize_table

V8 = {"hoodie.write.table.version": "8", "hoodie.time.generator.max_expected_clock_skew_ms": "0"}
#: Hudi's merge strategy ids of the two built-in merge modes (HoodieRecordMerger)
EVENT_TIME_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY = "ce9acb64-bde0-424c-9b91-f6ebba25356d"


def _conf(table_type: str, **extra: str) -> dict[str, str]:
    return {"hoodie.table.type": table_type, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.index.type": "SIMPLE", "hoodie.copyonwrite.record.size.estimate": "64",
            "hoodie.parquet.max.file.size": str(64 * 40), "hoodie.parquet.small.file.limit": str(64 * 20),
            **V8, **extra}


def _props(base: Path) -> dict[str, str]:
    return load_java_properties((base / ".hoodie" / "hoodie.properties").read_text("latin-1"))


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_version_8_table_matches_the_model_and_keeps_hudi_1_0s_table_config(tmp_path, table_type, conformance_next):
    base = tmp_path / "t"
    rng = random.Random(8)
    model = TableModel(True)
    for step in range(4):
        op = "delete" if step == 2 else "upsert"
        batch = random_batch(rng, 40, 30, step * 10, ["a", "b"], {})
        write_arrow(str(base), to_arrow(batch), op, _conf(table_type), table_name="t")
        model.apply(op, batch)
        assert actual(read_table(str(base))) == model.expected(), f"step {step}"
    assert normalize_table(read_table(str(base))) == hudi_rs_rows(str(base))

    props = _props(base)
    assert props["hoodie.table.version"] == props["hoodie.table.initial.version"] == "8"
    assert props["hoodie.table.precombine.field"] == "ts"
    assert {"hoodie.table.ordering.fields", "hoodie.table.format", "hoodie.table.legacy.payload.class"}.isdisjoint(props)
    assert (props["hoodie.record.merge.mode"], props["hoodie.record.merge.strategy.id"],
            props["hoodie.compaction.payload.class"]) == (
        "EVENT_TIME_ORDERING", EVENT_TIME_STRATEGY, "org.apache.hudi.common.model.DefaultHoodieRecordPayload")
    assert (props["hoodie.timeline.layout.version"], props["hoodie.timeline.path"],
            props["hoodie.timeline.history.path"]) == ("2", "timeline", "history")
    # every table-level key Hudi 1.0 wrote for its version 8 table is here too (less the ones
    # that table has for its own schema: no meta fields, a keygen type and partition fields)
    hudi_1_0 = _props(conformance_next / "tables" / "cow" / "v8_simplekeygen_hivestyle_no_metafields")
    own = {"hoodie.populate.meta.fields", "hoodie.table.partition.fields", "hoodie.table.keygenerator.type"}
    assert sorted(set(hudi_1_0) - set(props) - own) == []

    table = HoodieTable.load(str(base))
    assert table.format.version == 8 and not table.timeline.pending().instants
    done = [i for i in table.timeline.completed() if i.action in ("commit", "deltacommit")]
    names = {p.name for p in (base / ".hoodie" / "timeline").iterdir()}
    assert len(done) == 4 and all(f"{i.timestamp}_{i.completion_time}.{i.action}" in names for i in done)


def test_a_version_8_commit_time_table_lets_the_latest_write_win(tmp_path):
    base = tmp_path / "t"
    c = _conf("MERGE_ON_READ", **{"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"})
    write_arrow(str(base), to_arrow([{"id": 1, "ts": 5, "p": "a", "v": "first"}]), "upsert", c, table_name="t")
    write_arrow(str(base), to_arrow([{"id": 1, "ts": 1, "p": "a", "v": "latest"}]), "upsert", c)
    props = _props(base)
    assert (props["hoodie.record.merge.mode"], props["hoodie.record.merge.strategy.id"],
            props["hoodie.compaction.payload.class"]) == (
        "COMMIT_TIME_ORDERING", COMMIT_TIME_STRATEGY, "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload")
    assert actual(read_table(str(base))) == [(1, "a", 1, "latest")]
    assert normalize_table(read_table(str(base))) == hudi_rs_rows(str(base))
