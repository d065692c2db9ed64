"""Archival of Hudi 1.x tables (versions 8 and 9) into the LSM timeline.

Copies of real Hudi 1.x tables from the conformance-next corpus take an archival with small
``hoodie.keep.min/max.commits``; the archived instants leave ``.hoodie/timeline`` for
``.hoodie/timeline/history``, byte for byte, and the table still reads as Hudi wrote it (the
corpus's expected reads; hudi-rs). Plus Hudi 1.x's selection rules (TimelineArchiverV2)
where they differ from 0.14's.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil

import pytest

import airflow_hoodie.table.table_format as table_format
from airflow_hoodie.actions import archive as ar
from airflow_hoodie.actions.archive import archive_metadata_table, metadata_table_settings, run_archive
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.timeline.lsm_timeline import read_records, snapshot_files

from tests.table.normalize import hudi_rs_rows, read_rows

SMALL = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.cleaner.commits.retained": "1"}
NO_MDT_TABLES = ["cow/v9_txns_nonpart_nometa", "mor/v9_txns_nonpart_nometa", "mor/v9_txns_complex_nometa"]


@pytest.fixture
def writable_v9(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the table layer writes versions 8 and 9 itself (issue 22)."""
    monkeypatch.setattr(table_format, "WRITABLE_TABLE_VERSIONS", (6, 8, 9))


def _copy(conformance_next: pathlib.Path, name: str, tmp_path: pathlib.Path) -> pathlib.Path:
    dst = tmp_path / name.replace("/", "_")
    shutil.copytree(conformance_next / "tables" / name, dst)
    return dst


def _expected(conformance_next: pathlib.Path, name: str) -> dict:
    return json.loads((conformance_next / "expected" / f"{name}.json").read_text())


def _timeline_files(path: pathlib.Path, meta: str = ".hoodie") -> dict[str, bytes]:
    folder = path / meta / "timeline"
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def _assert_reads_as_expected(path: pathlib.Path, expected: dict) -> None:
    assert read_rows(path) == expected["snapshot"]
    assert hudi_rs_rows(str(path)) == expected["snapshot"]
    if "read_optimized" in expected:
        assert read_rows(path, query_type="read_optimized") == expected["read_optimized"]
        assert hudi_rs_rows(str(path), "read_optimized") == expected["read_optimized"]
    if "as_of_first" in expected:  # files older than the active timeline count as committed
        case = expected["as_of_first"]
        assert read_rows(path, as_of=case["as_of"]) == case["rows"]
        assert hudi_rs_rows(str(path), as_of=case["as_of"]) == case["rows"]
    if "incremental_after_first" in expected:  # from the archived completion times
        case = expected["incremental_after_first"]
        assert read_rows(path, query_type="incremental", start=case["start_exclusive"], end=case["end"]) == case["rows"]


@pytest.mark.parametrize("name", NO_MDT_TABLES)
def test_archival_moves_old_instants_into_the_lsm_timeline(
        conformance_next: pathlib.Path, tmp_path: pathlib.Path, writable_v9: None, name: str) -> None:
    pytest.importorskip("hudi")
    path = _copy(conformance_next, name, tmp_path)
    before = _timeline_files(path)
    properties = (path / ".hoodie" / "hoodie.properties").read_bytes()

    result = run_archive(HoodieTable.load(str(path)), HoodieConfig({**SMALL, "hoodie.metadata.enable": "false"}))

    archived = result["archived_instants"]
    assert len(archived) >= 5
    after = _timeline_files(path)
    gone = sorted(set(before) - set(after))
    assert gone and all(n.split("_")[0].split(".")[0] in archived for n in gone)
    assert not any(n.split("_")[0].split(".")[0] in archived for n in after)  # every state went
    # what stays: the newest commits, at least hoodie.keep.min.commits of them
    assert sum(1 for n in after if "_" in n) >= 2

    history = path / ".hoodie" / "timeline" / "history"
    assert (history / "_version_").read_bytes() == b"1"
    [level0] = snapshot_files(HoodieTable.load(str(path)).storage, str(history))
    assert level0 == f"{archived[0]}_{archived[-1]}_0.parquet"
    records = read_records(HoodieTable.load(str(path)).storage, str(history))
    assert [r.instant_time for r in records] == archived
    completed = {n.split("_")[0]: n for n in gone if "_" in n}
    for rec in records:
        done = completed[rec.instant_time]
        assert rec.completion_time == done.split("_")[1].split(".")[0]
        assert rec.action == done.split(".")[1]
        assert rec.metadata == (before[done] or None)  # the completed file's bytes
        if rec.action == Action.COMMIT and f"{rec.instant_time}.compaction.requested" in before:
            assert rec.plan == before[f"{rec.instant_time}.compaction.requested"]
        elif rec.action in (Action.COMMIT, Action.DELTA_COMMIT):
            assert rec.plan is None

    assert (path / ".hoodie" / "hoodie.properties").read_bytes() == properties  # version unchanged
    archived_timeline = HoodieTable.load(str(path)).archived_timeline()
    assert archived_timeline.timestamps == archived
    _assert_reads_as_expected(path, _expected(conformance_next, name))


def test_a_mor_compaction_is_archived_with_its_plan(
        conformance_next: pathlib.Path, tmp_path: pathlib.Path, writable_v9: None) -> None:
    path = _copy(conformance_next, "mor/v9_txns_nonpart_nometa", tmp_path)
    before = _timeline_files(path)
    run_archive(HoodieTable.load(str(path)), HoodieConfig({**SMALL, "hoodie.metadata.enable": "false"}))
    records = {r.instant_time: r for r in read_records(HoodieTable.load(str(path)).storage,
                                                       str(path / ".hoodie" / "timeline" / "history"))}
    [compaction] = [n.split(".")[0] for n in before if n.endswith(".compaction.requested")]
    assert compaction in records
    assert records[compaction].action == "commit"
    assert records[compaction].plan == before[f"{compaction}.compaction.requested"]


def test_a_second_archival_adds_a_level0_file_and_the_layer_compacts(
        conformance_next: pathlib.Path, tmp_path: pathlib.Path, writable_v9: None) -> None:
    path = _copy(conformance_next, "cow/v9_txns_nonpart_nometa", tmp_path)
    history = path / ".hoodie" / "timeline" / "history"
    base = {"hoodie.cleaner.commits.retained": "1", "hoodie.metadata.enable": "false",
            "hoodie.timeline.compaction.batch.size": "2"}
    first = run_archive(HoodieTable.load(str(path)),
                        HoodieConfig({**base, "hoodie.keep.min.commits": "7", "hoodie.keep.max.commits": "8"}))
    assert first["compacted_files"] == []
    second = run_archive(HoodieTable.load(str(path)),
                         HoodieConfig({**base, "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3"}))
    archived = first["archived_instants"] + second["archived_instants"]
    assert second["compacted_files"] == [f"{archived[0]}_{archived[-1]}_1.parquet"]
    storage = HoodieTable.load(str(path)).storage
    assert snapshot_files(storage, str(history)) == [f"{archived[0]}_{archived[-1]}_1.parquet"]
    assert (history / "_version_").read_bytes() == b"3"
    assert [r.instant_time for r in read_records(storage, str(history))] == archived
    _assert_reads_as_expected(path, _expected(conformance_next, "cow/v9_txns_nonpart_nometa"))


def test_nothing_is_archived_before_the_metadata_table_compacts(
        conformance_next: pathlib.Path, tmp_path: pathlib.Path, writable_v9: None) -> None:
    """Hudi 1.x keeps every commit completed after the metadata table's latest compaction;
    this table's metadata table never compacted."""
    path = _copy(conformance_next, "cow/v9_timebasedkeygen_nonhivestyle", tmp_path)
    before = _timeline_files(path)
    result = run_archive(HoodieTable.load(str(path)), HoodieConfig({**SMALL, "hoodie.metadata.enable": "true"}))
    assert result["instant"] is None
    assert _timeline_files(path) == before
    assert not (path / ".hoodie" / "timeline" / "history").exists()


def test_the_metadata_table_of_a_v9_table_archives_into_its_own_lsm_timeline(
        conformance_next: pathlib.Path, tmp_path: pathlib.Path) -> None:
    pytest.importorskip("hudi")
    name = "cow/v9_timebasedkeygen_nonhivestyle"
    path = _copy(conformance_next, name, tmp_path)
    meta = ".hoodie/metadata/.hoodie"
    before = _timeline_files(path, meta)
    data, mdt = HoodieTable.load(str(path)), HoodieTable.load(str(path / ".hoodie" / "metadata"))
    config = HoodieConfig({**SMALL, "hoodie.metadata.compact.max.delta.commits": "2"})

    result = archive_metadata_table(data, mdt, metadata_table_settings(config))

    # only what precedes the data table's first commit: the metadata table's own bootstrap
    assert result["archived_instants"] == [f"0000000000000000{i}" for i in range(4)]
    gone = set(before) - set(_timeline_files(path, meta))
    assert {n.split("_")[0].split(".")[0] for n in gone} == set(result["archived_instants"])
    history = path / ".hoodie" / "metadata" / ".hoodie" / "timeline" / "history"
    records = read_records(mdt.storage, str(history))
    assert [(r.instant_time, r.action) for r in records] == [(t, "deltacommit") for t in result["archived_instants"]]
    assert not (path / ".hoodie" / "timeline" / "history").exists()  # the data table's own is untouched
    expected = _expected(conformance_next, name)
    _assert_reads_as_expected(path, expected)


@pytest.mark.parametrize("name", NO_MDT_TABLES)
def test_time_travel_into_the_archived_range_reads_as_hudi_rs(
        conformance_next: pathlib.Path, tmp_path: pathlib.Path, writable_v9: None, name: str) -> None:
    """An ``as_of`` before the active timeline reads the files of the archived commits up to
    it (Hudi's view takes files older than the active timeline as committed)."""
    pytest.importorskip("hudi")
    path = _copy(conformance_next, name, tmp_path)
    run_archive(HoodieTable.load(str(path)), HoodieConfig({**SMALL, "hoodie.metadata.enable": "false"}))
    case = _expected(conformance_next, name)["as_of_first"]
    assert HoodieTable.load(str(path)).timeline.is_before_timeline_starts(case["as_of"])
    assert read_rows(path, as_of=case["as_of"]) == case["rows"]
    assert read_rows(path, as_of=case["as_of"], query_type="read_optimized") == hudi_rs_rows(
        str(path), "read_optimized", as_of=case["as_of"])
    assert read_rows(path, as_of="20000101000000000") == hudi_rs_rows(str(path), as_of="20000101000000000") == []


# ----------------------------------------------------------- Hudi 1.x's selection rules
def _done(t: str, action: str, completion: str) -> Instant:
    return Instant(t, action, State.COMPLETED, completion_time=completion)


SETTINGS = ar.ArchiveSettings(min_commits=2, max_commits=3, batch=10, beyond_savepoint=False,
                              cleaner_commits_retained=1)


def test_cleans_and_rollbacks_go_only_with_the_commits_around_them() -> None:
    """0.14 archives cleans by their own keep.min/max counts; 1.x only those requested before
    the newest commit it archives."""
    instants = [
        _done("100", Action.COMMIT, "101"), _done("110", Action.CLEAN, "111"), _done("120", Action.COMMIT, "121"),
        _done("130", Action.CLEAN, "131"), _done("140", Action.COMMIT, "141"), _done("150", Action.CLEAN, "151"),
        _done("160", Action.ROLLBACK, "161"), _done("170", Action.COMMIT, "171"), _done("180", Action.CLEAN, "181"),
        _done("190", Action.CLEAN, "191"),
    ]
    ctx = ar.ArchiveContext()
    v2 = [i.timestamp for i in ar.instants_to_archive(instants, SETTINGS, ctx, ar.RULES_1_X)]
    assert v2 == ["100", "110", "120"]  # 2 of 4 commits go, and the clean between them
    v1 = [i.timestamp for i in ar.instants_to_archive(instants, SETTINGS, ctx, ar.RULES_0_14)]
    assert v1 == ["100", "110", "120", "130", "150"]  # 5 cleans > 3: all but the newest 2 go


def test_no_commit_archived_means_no_clean_archived_in_1x() -> None:
    instants = [_done(str(100 + 10 * i), Action.CLEAN, str(101 + 10 * i)) for i in range(6)]
    instants.append(_done("200", Action.COMMIT, "201"))
    assert ar.instants_to_archive(instants, SETTINGS, ar.ArchiveContext(), ar.RULES_1_X) == []
    assert len(ar.instants_to_archive(instants, SETTINGS, ar.ArchiveContext(), ar.RULES_0_14)) == 4


def test_the_metadata_table_fence_goes_by_completion_time_in_1x() -> None:
    """The metadata table compacted at 150. Commit 130 completed at 160, after it: 1.x keeps
    it and everything requested after it; 0.14 compares requested times and archives it."""
    instants = [_done("100", Action.COMMIT, "101"), _done("110", Action.COMMIT, "111"),
                _done("130", Action.COMMIT, "160"), _done("140", Action.COMMIT, "141"),
                _done("170", Action.COMMIT, "171"), _done("180", Action.COMMIT, "181"),
                _done("190", Action.COMMIT, "191")]
    ctx = ar.ArchiveContext(has_metadata_table=True, metadata_latest_compaction="150")
    assert [i.timestamp for i in ar.instants_to_archive(instants, SETTINGS, ctx, ar.RULES_1_X)] == ["100", "110"]
    assert [i.timestamp for i in ar.instants_to_archive(instants, SETTINGS, ctx, ar.RULES_0_14)] == [
        "100", "110", "130", "140"]
    no_compaction = ar.ArchiveContext(has_metadata_table=True, metadata_latest_compaction=None)
    assert ar.instants_to_archive(instants, SETTINGS, no_compaction, ar.RULES_1_X) == []


def test_layout_picks_the_rules() -> None:
    assert ar.rules_for_layout(1) is ar.RULES_0_14
    assert ar.rules_for_layout(2) is ar.RULES_1_X


def test_clustering_files_belong_to_their_replacecommit() -> None:
    done = _done("100", Action.REPLACE_COMMIT, "105")
    files = [Instant("100", Action.CLUSTERING, State.REQUESTED), Instant("100", Action.CLUSTERING, State.INFLIGHT),
             done, Instant("100", Action.COMMIT, State.REQUESTED)]
    assert ar.state_files_of([done], files) == files[:3]


def test_lsm_record_plans_follow_hudis_conversion() -> None:
    content = {
        "100.clean.requested": b"clean-plan", "100_101.clean": b"clean-meta",
        "200.clustering.requested": b"cluster-plan", "200.clustering.inflight": b"",
        "200_201.replacecommit": b"replace-meta",
        "300.replacecommit.requested": b"req", "300.replacecommit.inflight": b"inflight-meta",
        "300_301.replacecommit": b"",
        "400.compaction.requested": b"compaction-plan", "400.compaction.inflight": b"", "400_401.commit": b"c",
        "500.deltacommit.requested": b"", "500.deltacommit.inflight": b"x", "500_501.deltacommit": b"d",
    }
    files = [Instant.parse(n) for n in content]
    chosen = [f for f in files if f.is_completed]
    records = {r.instant_time: r for r in ar.lsm_records(chosen, files, lambda f: content[f.file_name])}
    assert (records["100"].action, records["100"].metadata, records["100"].plan) == ("clean", b"clean-meta",
                                                                                     b"clean-plan")
    assert (records["200"].action, records["200"].plan) == ("replacecommit", b"cluster-plan")  # empty inflight
    assert (records["300"].metadata, records["300"].plan) == (None, b"inflight-meta")  # inflight wins; empty -> null
    assert (records["400"].action, records["400"].plan) == ("commit", b"compaction-plan")
    assert (records["500"].plan, records["500"].completion_time) == (None, "501")


class _Crash(Exception):
    pass


@pytest.mark.parametrize(("point", "nth"), [("archive.after_write", 1), ("archive.delete", 5), ("archive.delete", 25)])
def test_an_archival_killed_midway_is_finished_by_the_retry(
        conformance_next: pathlib.Path, tmp_path: pathlib.Path, writable_v9: None,
        monkeypatch: pytest.MonkeyPatch, point: str, nth: int) -> None:
    """Killed after the LSM snapshot was published, before or while deleting the active
    files (completed ones last, oldest first): the retry deletes the rest, and an instant
    written twice reads once."""
    name = "cow/v9_txns_nonpart_nometa"
    clean = _copy(conformance_next, name, tmp_path / "clean")
    config = HoodieConfig({**SMALL, "hoodie.metadata.enable": "false"})
    run_archive(HoodieTable.load(str(clean)), config)
    path = _copy(conformance_next, name, tmp_path / "crashed")
    hits = {"n": 0}

    def crash_point(where: str) -> None:
        if where == point:
            hits["n"] += 1
            if hits["n"] == nth:
                raise _Crash(where)

    monkeypatch.setattr(ar, "crash_point", crash_point)
    with pytest.raises(_Crash):
        run_archive(HoodieTable.load(str(path)), config)
    monkeypatch.setattr(ar, "crash_point", lambda where: None)
    run_archive(HoodieTable.load(str(path)), config)

    assert sorted(_timeline_files(path)) == sorted(_timeline_files(clean))
    storage = HoodieTable.load(str(path)).storage
    history = str(path / ".hoodie" / "timeline" / "history")
    assert read_records(storage, history) == read_records(storage, str(clean / ".hoodie" / "timeline" / "history"))
    assert read_rows(path) == _expected(conformance_next, name)["snapshot"]


def test_a_clean_that_kept_a_savepoints_files_holds_replacecommits_back_in_1x() -> None:
    """The latest clean retained from 160 but kept files for savepoint 115, and replacecommit
    120 lies between: 1.x keeps replacecommits from the savepoint on (the savepoint may be
    deleted later, and 120's replaced files were never cleaned); 0.14 from 160 on."""
    instants = [_done("100", Action.COMMIT, "101"), _done("120", Action.REPLACE_COMMIT, "121"),
                _done("130", Action.COMMIT, "131"), _done("140", Action.COMMIT, "141"),
                _done("150", Action.COMMIT, "151"), _done("155", Action.CLEAN, "156"),
                _done("160", Action.REPLACE_COMMIT, "161"), _done("170", Action.COMMIT, "171"),
                _done("180", Action.COMMIT, "181"), _done("190", Action.COMMIT, "191")]
    ctx = ar.ArchiveContext(latest_clean="155", latest_clean_earliest_retain="160", latest_clean_savepoints=("115",))
    settings = ar.ArchiveSettings(min_commits=2, max_commits=3, batch=10, beyond_savepoint=False,
                                  cleaner_commits_retained=1)
    assert [i.timestamp for i in ar.instants_to_archive(instants, settings, ctx, ar.RULES_1_X)] == ["100"]
    assert [i.timestamp for i in ar.instants_to_archive(instants, settings, ctx, ar.RULES_0_14)] == [
        "100", "120", "130", "140", "150"]
    unguarded = ar.ArchiveContext(latest_clean="155", latest_clean_earliest_retain="160")
    assert [i.timestamp for i in ar.instants_to_archive(instants, settings, unguarded, ar.RULES_1_X)] == [
        "100", "120", "130", "140", "150"]
    file_versions = dataclasses.replace(settings, cleaner_policy="KEEP_LATEST_FILE_VERSIONS")
    assert "120" in [i.timestamp for i in ar.instants_to_archive(instants, file_versions, ctx, ar.RULES_1_X)]
