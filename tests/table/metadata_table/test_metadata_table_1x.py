"""The metadata table of a Hudi 1.x table (versions 8, 9), by Hudi 1.x's rules: built where a
table has none with the properties, initialization instants and empty delete-block logs a
real v9 metadata table has; delta commits log to files named with their own instant; its
services take fresh instant times; and hudi-rs, which lists a v9 table through it, agrees."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.metadata_table.metadata_record import metadata_record_schema
from airflow_hoodie.table.log.log_reader import read_log_blocks_from_bytes
from airflow_hoodie.table.read import read_table
from tests.table.normalize import hudi_rs_rows, normalize_table
from tests.table.table_files import copy_conformance_table

FAST = {"hoodie.time.generator.max_expected_clock_skew_ms": "0", "hoodie.datasource.write.recordkey.field": "txn_id"}
#: keys whose values name one table, not the format
_TABLE_SPECIFIC = {"hoodie.table.name", "hoodie.table.checksum"}


def _props(path: Path) -> dict[str, str]:
    text = path.read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def _rows(base: Path) -> pa.Table:
    t = read_table(str(base))
    return t.drop_columns([c for c in t.column_names if c.startswith("_hoodie_")])


def test_metadata_table_built_on_a_v9_table_is_laid_out_as_hudi_1x_builds_it(conformance_next, tmp_path):
    base = copy_conformance_table(conformance_next, "mor/v9_txns_nonpart_nometa", tmp_path)
    real = conformance_next / "tables" / "mor" / "v9_nonpartitioned_rollback" / ".hoodie" / "metadata"
    write_arrow(str(base), _rows(base).slice(0, 2), "upsert", FAST)
    mdt = base / ".hoodie" / "metadata"
    ours, theirs = _props(mdt / ".hoodie" / "hoodie.properties"), _props(real / ".hoodie" / "hoodie.properties")
    assert {k: v for k, v in ours.items() if k not in _TABLE_SPECIFIC} == \
        {k: v for k, v in theirs.items() if k not in _TABLE_SPECIFIC}
    assert ours["hoodie.table.name"] == _props(base / ".hoodie" / "hoodie.properties")["hoodie.table.name"] + "_metadata"
    timeline = sorted(p.name for p in (mdt / ".hoodie" / "timeline").iterdir() if p.is_file())
    assert "00000000000000000.deltacommit.requested" in timeline
    assert any(n.startswith("00000000000000000_") and n.endswith(".deltacommit") for n in timeline)
    assert not [p for p in (mdt / ".hoodie").iterdir() if p.is_file() and p.name[:1].isdigit()]
    files = sorted(p.name for p in (mdt / "files").iterdir())
    # the initialization's empty delete block, byte for byte as Hudi 1.x writes it
    empty = ".files-0000-0_00000000000000000.log.1_0-0-0"
    assert (mdt / "files" / empty).read_bytes() == (real / "files" / empty).read_bytes()
    # our delta commit logs to a file named with its own instant, in the 1.x record schema
    data_commit = [n for n in timeline if n.endswith(".deltacommit") and not n.startswith("0000")][0].split("_")[0]
    (log_name,) = [n for n in files if n.startswith(f".files-0000-0_{data_commit}.log.1_")]
    (block,) = read_log_blocks_from_bytes((mdt / "files" / log_name).read_bytes())
    fields = [f["name"] for f in metadata_record_schema(9)["fields"]]
    assert "SecondaryIndexMetadata" in fields and block.schema is not None and '"SecondaryIndexMetadata"' in block.schema
    # hudi-rs lists the v9 table through this metadata table
    assert normalize_table(read_table(str(base))) == hudi_rs_rows(str(base))


def test_metadata_table_services_on_a_v9_table_take_fresh_instant_times(conformance_next, tmp_path):
    base = copy_conformance_table(conformance_next, "cow/v9_txns_nonpart_nometa", tmp_path)
    rows = _rows(base)
    cfg = {**FAST, "hoodie.metadata.compact.max.delta.commits": "2"}
    for i in range(4):
        write_arrow(str(base), rows.slice(i, 1), "upsert", cfg)
    timeline = sorted(p.name for p in (base / ".hoodie" / "metadata" / ".hoodie" / "timeline").iterdir() if p.is_file())
    compactions = [n.split(".")[0] for n in timeline if n.endswith(".compaction.requested")]
    assert compactions, timeline
    for ts in compactions:
        assert not ts.endswith("001") and len(ts) == 17  # a fresh time, not Hudi 0.x's <delta commit>001
        assert any(n.startswith(f"{ts}_") and n.endswith(".commit") for n in timeline)
    assert normalize_table(read_table(str(base))) == hudi_rs_rows(str(base))
