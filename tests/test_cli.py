"""The airflow-hoodie console script against the conformance corpus."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from airflow_hoodie.cli import main

ROLLBACK_TABLE = "tables/mor/v6_nonpartitioned_rollback"
TRIPS = "tables/mor/v6_trips_8i1u"
COW_HIVE = "tables/cow/v6_complexkeygen_hivestyle"
ROLLBACK_LOG = "logs/valid_log_rollback/.0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.2_1-0-1"
DATA_LOG = "logs/valid_log_avro_data/.ff32ab89-5ad0-4968-83b4-89a34c95d32f-0_20250316025816068.log.1_0-54-122"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_timeline_table_and_json(conformance):
    code, out, err = run("timeline", conformance / ROLLBACK_TABLE)
    assert code == 0, err
    assert "20250126040936578  rollback" in out and "COMPLETED" in out
    code, out, _ = run("timeline", conformance / ROLLBACK_TABLE, "--json")
    doc = json.loads(out)
    assert doc["table_type"] == "MERGE_ON_READ"
    instants = [(i["timestamp"], i["action"], i["state"]) for i in doc["instants"] if i["timeline"] == "active"]
    assert instants == [
        ("20250126040823628", "deltacommit", "COMPLETED"),
        ("20250126040936578", "rollback", "COMPLETED"),
        ("20250126060846931", "deltacommit", "COMPLETED"),
    ]


def test_slices(conformance):
    code, out, _ = run("slices", conformance / ROLLBACK_TABLE, "--json")
    assert code == 0
    (s,) = json.loads(out)
    assert s["file_id"] == "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0"
    assert s["base_file"].endswith("_20250126040823628.parquet")
    assert len(s["log_files"]) == 3
    code, out, _ = run("slices", conformance / COW_HIVE, "--partition", "byteField=10/shortField=300", "--json")
    rows = json.loads(out)
    assert [r["partition"] for r in rows] == ["byteField=10/shortField=300"]
    code, out, _ = run("slices", conformance / COW_HIVE, "--as-of", "20240418173213674", "--json")
    assert {r["base_instant"] for r in json.loads(out)} == {"20240418173213674"}
    code, out, _ = run("slices", conformance / COW_HIVE)
    assert "byteField=20/shortField=100" in out


def test_log_rollback_block(conformance):
    code, out, _ = run("log", conformance / ROLLBACK_LOG, "--json")
    assert code == 0
    (block,) = json.loads(out)["blocks"]
    assert block["type"] == "COMMAND" and block["corrupt"] is False
    assert block["headers"]["TARGET_INSTANT_TIME"] == "20250126040826878"
    code, out, _ = run("log", conformance / ROLLBACK_LOG)
    assert "COMMAND" in out and "TARGET_INSTANT_TIME=20250126040826878" in out


def test_log_records(conformance):
    code, out, _ = run("log", conformance / DATA_LOG, "--records")
    assert code == 0
    assert "AVRO_DATA" in out and "334e26e9-8355-45cc-97c6-c31daf0df330" in out
    code, out, _ = run("log", conformance / DATA_LOG, "--records", "--json")
    (block,) = json.loads(out)["blocks"]
    assert block["record_count"] == 1 and block["records"][0]["rider"] == "rider-A"


def test_log_missing_file(tmp_path):
    code, out, err = run("log", tmp_path / ".nope.log.1_0-0-0")
    assert code == 2 and "does not exist" in err and "Traceback" not in err


def test_show_avro_and_json_instants(conformance):
    code, out, _ = run("show", conformance / ROLLBACK_TABLE, "20250126040936578")
    assert code == 0
    doc = json.loads(out)
    assert doc["action"] == "rollback"
    assert doc["content"]["commitsRollback"] == ["20250126040826878"]
    code, out, _ = run("show", conformance / ROLLBACK_TABLE, "20250126060846931")
    doc = json.loads(out)
    assert doc["action"] == "deltacommit" and "partitionToWriteStats" in doc["content"]
    code, out, _ = run("show", conformance / ROLLBACK_TABLE, "20250126040936578", "--state", "requested")
    doc = json.loads(out)
    assert doc["file_state"] == "REQUESTED" and doc["content"]  # the rollback plan
    code, out, _ = run("show", conformance / ROLLBACK_TABLE, "20250126040936578.rollback.requested")
    assert json.loads(out)["file_state"] == "REQUESTED"


def test_show_unknown_instant(conformance):
    code, _, err = run("show", conformance / ROLLBACK_TABLE, "20990101000000000")
    assert code == 2 and "not on the active timeline" in err


def test_read_formats(conformance):
    code, out, _ = run("read", conformance / TRIPS, "--format", "jsonl")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 8 and "_hoodie_record_key" in rows[0]
    code, out, _ = run("read", conformance / TRIPS, "--columns", "uuid,fare", "--limit", "3")
    assert out.splitlines()[0].split() == ["uuid", "fare"]
    assert "(3 of 8 rows)" in out
    code, out, _ = run("read", conformance / TRIPS, "--json", "--filter", "city=chennai", "--columns", "uuid")
    assert [json.loads(line) for line in out.splitlines()] == [
        {"uuid": "3eeb61f7-c2b0-4636-99bd-5d7a5a1d2c04"},
        {"uuid": "c8abbe79-8d89-47ea-b4ce-4d224bae5bfa"},
    ] or len(out.splitlines()) == 2


def test_read_query_types(conformance):
    path = conformance / "tables/mor/v6_nonpartitioned"
    code, out, _ = run("read", path, "--query-type", "incremental", "--start", "20250117083125837", "--format", "jsonl")
    assert code == 0 and len(out.splitlines()) == 2
    code, out, _ = run("read", path, "--as-of", "20250117083125837", "--format", "jsonl")
    assert len(out.splitlines()) == 3
    code, out, _ = run("read", path, "--query-type", "read_optimized", "--format", "jsonl", "--columns", "id,isActive")
    assert {json.loads(line)["id"]: json.loads(line)["isActive"] for line in out.splitlines()}[1] is True
    code, out, _ = run("read", path, "--filter", "id in 1|2", "--format", "jsonl")
    assert len(out.splitlines()) == 2


def test_read_bad_filter_and_missing_table(conformance, tmp_path):
    code, _, err = run("read", conformance / TRIPS, "--filter", "city~x")
    assert code == 2 and "COLUMN OP VALUE" in err
    code, _, err = run("read", tmp_path)
    assert code == 2 and "hoodie.properties" in err and "Traceback" not in err
    code, _, err = run("read", conformance / TRIPS, "--filter", "nope=1")
    assert code == 2 and "not in the table schema" in err


def test_console_script_subprocess(conformance):
    proc = subprocess.run(
        [sys.executable, "-m", "airflow_hoodie.cli", "timeline", str(conformance / TRIPS), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["instants"]) >= 2
    proc = subprocess.run(
        [sys.executable, "-m", "airflow_hoodie.cli", "read", "/definitely/not/a/table"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and proc.stderr.strip() and "Traceback" not in proc.stderr


def test_usage_error_exit_code():
    with pytest.raises(SystemExit) as exc:
        main(["bogus"])
    assert exc.value.code == 2


@pytest.fixture
def archived_table(conformance, tmp_path):
    """A copy of a COW table whose first commit was moved to the archived timeline."""
    import shutil

    from airflow_hoodie.actions.archive import archive_entry, write_archive_entries
    from airflow_hoodie.table.hoodie_table import HoodieTable
    from airflow_hoodie.table.timeline.instant import Instant

    dst = tmp_path / "t"
    shutil.copytree(conformance / "tables/cow/v6_simplekeygen_nonhivestyle", dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    table = HoodieTable.load(str(dst))
    first = "20240418172802262"
    files = sorted((dst / ".hoodie").glob(f"{first}.*"))
    entries = []
    for f in files:
        inst = Instant.parse(f.name)
        entries.append(archive_entry(inst, f.read_bytes()))
    write_archive_entries(table, entries, batch=10)
    for f in files:
        f.unlink()
    return dst


def test_timeline_and_show_archived_instants(archived_table):
    code, out, err = run("timeline", archived_table, "--json")
    assert code == 0, err
    by_ts = {(i["timestamp"], i["timeline"]) for i in json.loads(out)["instants"]}
    assert ("20240418172802262", "archived") in by_ts and ("20240418172804498", "active") in by_ts
    code, out, err = run("show", archived_table, "20240418172802262")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["file_state"] == "ARCHIVED" and doc["content"]


def test_read_with_archived_commits(archived_table, conformance):
    from airflow_hoodie.table import read_table
    from tests.table.normalize import hudi_rs_rows, normalize_table

    expected = json.loads((conformance / "expected/cow/v6_simplekeygen_nonhivestyle.json").read_text())
    assert normalize_table(read_table(str(archived_table))) == expected["snapshot"]
    # an incremental window starting before the active timeline falls back to a full scan
    inc = normalize_table(read_table(str(archived_table), query_type="incremental", start="20240101000000000"))
    assert inc == expected["snapshot"]
    assert normalize_table(read_table(str(archived_table))) == hudi_rs_rows(str(archived_table))


def test_log_reports_corrupt_block(conformance, tmp_path):
    data = (conformance / DATA_LOG).read_bytes()
    bad = tmp_path / ".ff32ab89-5ad0-4968-83b4-89a34c95d32f-0_20250316025816068.log.1_0-54-122"
    # a valid block, then the same block cut short: the second one is corrupt
    bad.write_bytes(data + data[: len(data) // 2])
    code, out, err = run("log", bad, "--json")
    assert code == 0, err
    blocks = json.loads(out)["blocks"]
    assert [b["corrupt"] for b in blocks] == [False, True]
    code, out, _ = run("log", bad)
    assert "CORRUPT" in out
