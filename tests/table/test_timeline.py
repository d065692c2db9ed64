"""Active timeline loading, filters and atomic state transitions."""

from __future__ import annotations

import json

import pytest

from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.table.instant import Action, Instant, State
from airflow_hoodie.table.storage import Storage
from airflow_hoodie.table.timeline import Timeline, TimelineWriter


def _table(conformance, kind, name):
    storage, path = Storage.for_uri(str(conformance / "tables" / kind / name))
    return storage, path


def test_conformance_rollback_timeline(conformance):
    storage, path = _table(conformance, "mor", "v6_nonpartitioned_rollback")
    tl = Timeline.load(storage, path)
    assert [str(i) for i in tl] == [
        "[20250126040823628__deltacommit__COMPLETED]",
        "[20250126040936578__rollback__COMPLETED]",
        "[20250126060846931__deltacommit__COMPLETED]",
    ]
    assert tl.commits_timeline().completed().timestamps == ["20250126040823628", "20250126060846931"]
    assert tl.rollbacks().timestamps == ["20250126040936578"]
    assert len(tl.all_instants) == 9
    assert not tl.pending()
    expected = json.loads((conformance / "expected/mor/v6_nonpartitioned_rollback.json").read_text())
    assert tl.write_timeline().completed().timestamps == expected["completed_write_instants"]
    details = json.loads(tl.read_details("20250126060846931"))
    assert "partitionToWriteStats" in details


def test_conformance_every_table_matches_expected(conformance):
    for kind in ("cow", "mor"):
        for tdir in sorted((conformance / "tables" / kind).iterdir()):
            storage, path = Storage.for_uri(str(tdir))
            tl = Timeline.load(storage, path)
            exp = json.loads((conformance / "expected" / kind / f"{tdir.name}.json").read_text())
            if "completed_write_instants" in exp:
                assert tl.write_timeline().completed().timestamps == exp["completed_write_instants"], tdir


def test_conformance_replacecommit(conformance):
    storage, path = _table(conformance, "cow", "v6_simplekeygen_nonhivestyle_overwritetable")
    tl = Timeline.load(storage, path)
    last = tl.last()
    assert last == Instant("20240707001303088", Action.REPLACE_COMMIT, State.COMPLETED)
    assert tl.filter(actions=Action.REPLACE_COMMIT).timestamps == ["20240707001303088"]
    assert tl.first().timestamp == "20240707001301554"
    assert len(tl.read_plan(last)) == 2522
    assert tl.as_of("20240707001302376").timestamps == ["20240707001301554", "20240707001302376"]
    assert tl.between("20240707001301554", None).timestamps == ["20240707001302376", "20240707001303088"]
    assert tl.is_before_timeline_starts("20240101000000000")
    assert tl.contains_or_before_timeline_starts("20240707001302376")
    assert not tl.contains_or_before_timeline_starts("20240707001302377")


def test_writer_transitions(tmp_path):
    storage, base = Storage.for_uri(str(tmp_path / "t"))
    w = TimelineWriter(storage, base)
    ts = "20250101000000000"
    inst = Instant(ts, Action.COMMIT, State.REQUESTED)
    w.create_requested(inst)
    with pytest.raises(HoodieTimelineError, match="already exists"):
        w.create_requested(inst)
    tl = Timeline.load(storage, base)
    assert tl.get(ts) == inst and tl.pending().timestamps == [ts]
    with pytest.raises(HoodieTimelineError, match="inflight first"):
        w.complete(inst, b"{}")
    w.transition_to_inflight(inst, b"x")
    assert Timeline.load(storage, base).get(ts).is_inflight
    w.complete(inst, b'{"a": 1}')
    with pytest.raises(HoodieTimelineError, match="already exists"):
        w.complete(inst, b"{}")
    tl = tl.reload()
    assert tl.get(ts) == Instant(ts, Action.COMMIT, State.COMPLETED)
    assert tl.read_details(ts) == b'{"a": 1}'
    assert tl.read_details(ts, State.INFLIGHT) == b"x"
    assert sorted(p.name for p in (tmp_path / "t/.hoodie").iterdir()) == [
        f"{ts}.commit", f"{ts}.commit.requested", f"{ts}.inflight"]
    # rollback-style delete: completed first
    assert w.delete_instant_files(ts, Action.COMMIT) == [f"{ts}.commit", f"{ts}.inflight", f"{ts}.commit.requested"]
    assert len(Timeline.load(storage, base)) == 0


def test_compaction_lifecycle(tmp_path):
    storage, base = Storage.for_uri(str(tmp_path / "t"))
    w = TimelineWriter(storage, base)
    ts = "20250101000000001"
    c = Instant(ts, Action.COMPACTION, State.REQUESTED)
    w.create_requested(c, b"plan")
    w.transition_to_inflight(c)
    tl = Timeline.load(storage, base)
    assert tl.pending_compactions().timestamps == [ts]
    assert tl.completed_and_compaction().timestamps == [ts]
    w.revert_to_requested(c)
    assert Timeline.load(storage, base).get(ts).is_requested
    w.transition_to_inflight(c)
    w.complete(c, b"{}")
    tl = Timeline.load(storage, base)
    assert tl.get(ts) == Instant(ts, Action.COMMIT, State.COMPLETED)
    assert tl.is_compaction(ts)
    assert tl.read_plan(ts) == b"plan"
    assert not tl.pending_compactions()
    assert w.delete_instant_files(ts, Action.COMMIT, completed_first=False) == [
        f"{ts}.compaction.requested", f"{ts}.compaction.inflight", f"{ts}.commit"]


def test_savepoint_has_no_requested(tmp_path):
    storage, base = Storage.for_uri(str(tmp_path / "t"))
    w = TimelineWriter(storage, base)
    sp = Instant("20250101000000002", Action.SAVEPOINT, State.INFLIGHT)
    w.transition_to_inflight(sp)
    w.complete(sp, b"m")
    assert Timeline.load(storage, base).savepoints().completed().timestamps == [sp.timestamp]


def test_junk_files_in_meta_folder_are_ignored(tmp_path):
    meta = tmp_path / "t" / ".hoodie"
    meta.mkdir(parents=True)
    for n in ["hoodie.properties", "20250101000000000.commit", "garbage.commit", "20250101000000000.commit.crc",
              "20250101000000003.deltacommit.requested.1234.tmp"]:
        (meta / n).write_text("")
    (meta / ".temp").mkdir()
    storage, base = Storage.for_uri(str(tmp_path / "t"))
    assert Timeline.load(storage, base).timestamps == ["20250101000000000"]


def test_racing_writers_one_wins(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    storage, base = Storage.for_uri(str(tmp_path / "t"))
    w = TimelineWriter(storage, base)
    inst = Instant("20250101000000000", Action.DELTA_COMMIT, State.REQUESTED)
    w.create_requested(inst)
    w.transition_to_inflight(inst)

    def attempt(i):
        try:
            w.complete(inst, f'{{"writer": {i}}}'.encode() * 1000)
            return True
        except HoodieTimelineError:
            return False

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(attempt, range(16)))
    assert results.count(True) == 1
    content = Timeline.load(storage, base).read_details("20250101000000000")
    assert len(content) == len(b'{"writer": 0}') * 1000 or len(content) == len(b'{"writer": 10}') * 1000
    leftovers = [p.name for p in (tmp_path / "t/.hoodie").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_conformance_rollback_details_decode(conformance):
    from airflow_hoodie.table import avro_codec

    storage, path = _table(conformance, "mor", "v6_nonpartitioned_rollback")
    tl = Timeline.load(storage, path)
    meta = avro_codec.deserialize(tl.read_details("20250126040936578"))
    assert meta["commitsRollback"] == ["20250126040826878"]
    plan = avro_codec.deserialize(tl.read_plan("20250126040936578"))
    assert plan["instantToRollback"] == {"commitTime": "20250126040826878", "action": "deltacommit"}
    # the rolled-back instant left no instant files behind
    assert tl.get("20250126040826878") is None


def test_completed_commits_match_hudi_rs(conformance):
    hudi = pytest.importorskip("hudi")
    for kind in ("cow", "mor"):
        for tdir in sorted((conformance / "tables" / kind).iterdir()):
            storage, path = Storage.for_uri(str(tdir))
            ours = Timeline.load(storage, path).completed()
            rs = hudi.HudiTableBuilder.from_base_uri(str(tdir)).build().get_timeline()
            for action, getter in [(Action.COMMIT, rs.get_completed_commits),
                                   (Action.DELTA_COMMIT, rs.get_completed_deltacommits),
                                   (Action.REPLACE_COMMIT, rs.get_completed_replacecommits)]:
                assert ours.filter(actions=action).timestamps == [i.timestamp for i in getter()], (tdir, action)
