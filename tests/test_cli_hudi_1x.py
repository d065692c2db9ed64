"""The console script on tables written by Hudi 1.0 (version 8) and 1.1 (version 9)."""

from __future__ import annotations

import io
import json

import pytest

from airflow_hoodie.cli import main

V8_COW = "tables/cow/v8_simplekeygen_hivestyle_no_metafields"
V9_MOR = "tables/mor/v9_txns_simple_meta"


def run(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_timeline_of_a_v9_table_has_completion_times_and_clustering(conformance_next):
    code, out, err = run("timeline", conformance_next / V9_MOR, "--json")
    assert code == 0, err
    rows = {r["timestamp"]: r for r in json.loads(out)["instants"]}
    assert rows["20260307162618152"]["action"] == "commit"  # a completed compaction
    assert rows["20260307162618152"]["completion_time"] == "20260307162619230"
    assert rows["20260307162619269"]["action"] == "replacecommit"  # a completed clustering
    code, out, _ = run("timeline", conformance_next / V9_MOR)
    assert "completion_time" in out.splitlines()[1] and "20260307162619230" in out


@pytest.mark.parametrize("name", [V8_COW, V9_MOR])
def test_slices_read_and_show_on_hudi_1x_tables(conformance_next, name):
    path = conformance_next / name
    expected = json.loads((conformance_next / "expected" / f"{name.split('/', 1)[1]}.json").read_text())
    code, out, err = run("slices", path, "--json")
    assert code == 0, err
    slices = json.loads(out)
    assert slices and all(s["base_file"] or s["log_files"] for s in slices)
    code, out, err = run("read", path, "--format", "jsonl")
    assert code == 0, err
    assert len(out.splitlines()) == len(expected["snapshot"])
    code, out, _ = run("timeline", path, "--json")
    last = [r for r in json.loads(out)["instants"] if r["state"] == "COMPLETED"][-1]["timestamp"]
    code, out, err = run("show", path, last, "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["instant"] == last and shown["content"]  # Avro metadata decoded
