"""The LSM-tree history of Hudi 1.x tables (``.hoodie/timeline/history``).

No table in the corpus was archived by Hudi 1.x, so these tests archive the oldest
commits of a real Hudi 1.1 table the way Hudi's LSMTimelineWriter lays them out (one
``HoodieLSMTimelineInstant`` row per completed instant, with the completed file's bytes as
``metadata`` and the requested file's bytes as ``plan``; a manifest naming the snapshot's
files; ``_version_``) and check that reads still see every row the unarchived table has.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.cli import main
from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.table.normalize import normalize_table

TABLE = "cow/v9_txns_simple_meta"
LSM_SCHEMA = pa.schema([
    ("instantTime", pa.string()), ("completionTime", pa.string()), ("action", pa.string()),
    ("metadata", pa.binary()), ("plan", pa.binary()), pa.field("version", pa.int32(), nullable=False),
])


def archive_into_lsm(base: Path, count: int, layer_file_extra: bool = True) -> list[str]:
    """Move the ``count`` oldest completed commits into the history; their requested times."""
    timeline = base / ".hoodie" / "timeline"
    history = timeline / "history"
    history.mkdir()
    done = sorted(p for p in timeline.iterdir() if p.is_file() and "_" in p.name.split(".")[0])[:count]
    rows = []
    for completed in done:
        requested_time, completion_time = completed.name.split(".")[0].split("_")
        action = completed.name.split(".")[1]
        requested = timeline / f"{requested_time}.{action}.requested"
        rows.append({"instantTime": requested_time, "completionTime": completion_time, "action": action,
                     "metadata": completed.read_bytes(), "plan": requested.read_bytes(), "version": 1})
        for f in timeline.glob(f"{requested_time}*"):
            f.unlink()
    name = f"{rows[0]['instantTime']}_{rows[-1]['instantTime']}_0.parquet"
    pq.write_table(pa.Table.from_pylist(rows, LSM_SCHEMA), history / name)
    if layer_file_extra:  # a file compacted away: on storage, not in the manifest, must be ignored
        stale = dict(rows[0], instantTime="20000101000000000", completionTime="20000101000000001")
        pq.write_table(pa.Table.from_pylist([stale], LSM_SCHEMA), history / "20000101000000000_20000101000000000_0.parquet")
    manifest = {"files": [{"fileName": name, "fileLen": (history / name).stat().st_size}]}
    (history / "manifest_1").write_text(json.dumps(manifest, indent=2))
    (history / "_version_").write_text("1")
    return [r["instantTime"] for r in rows]


@pytest.fixture
def archived_v9(conformance_next: Path, tmp_path: Path) -> tuple[Path, list[str], dict]:
    base = tmp_path / "t"
    shutil.copytree(conformance_next / "tables" / TABLE, base)
    for p in base.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    expected = json.loads((conformance_next / "expected" / f"{TABLE}.json").read_text())
    return base, archive_into_lsm(base, 3), expected


def test_history_lists_archived_instants_with_completion_times(archived_v9):
    base, archived, _ = archived_v9
    table = HoodieTable.load(str(base))
    history = table.archived_timeline()
    assert history.timestamps == archived  # the stale file outside the manifest is ignored
    assert all(i.completion_time and i.completion_time > i.timestamp for i in history.instants)
    meta = history.metadata(archived[0])
    assert meta["partitionToWriteStats"] and meta["operationType"]
    assert not set(archived) & set(table.timeline.timestamps)


def test_reads_of_a_table_with_lsm_history_equal_the_unarchived_table(archived_v9):
    base, archived, expected = archived_v9
    assert normalize_table(read_table(str(base))) == expected["snapshot"]
    case = expected["incremental_after_first"]
    assert case["start_exclusive"] == archived[0]
    rows = normalize_table(read_table(str(base), query_type="incremental", start=case["start_exclusive"], end=case["end"]))
    # rows committed by archived instants that completed after the start are part of the window
    assert {r["_hoodie_commit_time"] for r in rows} & set(archived[1:])
    assert rows == case["rows"]


def test_version_file_missing_falls_back_to_the_latest_manifest(archived_v9):
    base, archived, _ = archived_v9
    history = base / ".hoodie" / "timeline" / "history"
    (history / "_version_").unlink()
    (history / "manifest_0").write_text(json.dumps({"files": []}))
    (history / "manifest_2.tmp").write_text("{half written")
    assert HoodieTable.load(str(base)).archived_timeline().timestamps == archived


def test_corrupt_manifest_is_a_clear_error(archived_v9):
    base, _, _ = archived_v9
    (base / ".hoodie" / "timeline" / "history" / "manifest_1").write_text("{not json")
    with pytest.raises(HoodieCorruptedDataError, match="manifest_1"):
        HoodieTable.load(str(base)).archived_timeline()


def test_cli_shows_archived_instants_of_a_v9_table(archived_v9):
    base, archived, _ = archived_v9
    out, err = io.StringIO(), io.StringIO()
    assert main(["timeline", str(base), "--json"], out=out, err=err) == 0, err.getvalue()
    rows = json.loads(out.getvalue())["instants"]
    old = [r for r in rows if r["timeline"] == "archived"]
    assert [r["timestamp"] for r in old] == archived and all(r["completion_time"] for r in old)
    assert all(r["completion_time"] for r in rows if r["timeline"] == "active" and r["state"] == "COMPLETED")
    out = io.StringIO()
    assert main(["show", str(base), archived[1], "--json"], out=out, err=err) == 0
    shown = json.loads(out.getvalue())
    assert shown["file_state"] == "ARCHIVED" and shown["content"]["partitionToWriteStats"]
