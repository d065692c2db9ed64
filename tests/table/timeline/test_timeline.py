"""Active timeline loading, filters and atomic state transitions."""

from __future__ import annotations

import json

import pytest

from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.table.timeline.instant import Action, Instant, State
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.timeline import Timeline
from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter


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
    from airflow_hoodie.table.metadata import avro_codec

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


@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_savepoint_shares_time_with_its_commit(tmp_path, monkeypatch, order):
    """T.deltacommit and T.savepoint are two instants; the state files of each collapse."""
    storage, base = Storage.for_uri(str(tmp_path / "t"))
    if order == "reversed":
        orig = Storage.list_dir
        monkeypatch.setattr(Storage, "list_dir", lambda self, *a, **k: list(reversed(orig(self, *a, **k))))
    w = TimelineWriter(storage, base)
    t1, t2, t3 = "20250101000000001", "20250101000000002", "20250101000000003"
    dc = Instant(t1, Action.DELTA_COMMIT, State.REQUESTED)
    w.create_requested(dc)
    w.transition_to_inflight(dc, b"dc-inflight")
    w.complete(dc, b'{"dc": 1}')
    sp = Instant(t1, Action.SAVEPOINT, State.INFLIGHT)
    w.create_inflight(sp, b"sp-inflight")
    w.complete(sp, b"sp")
    comp = Instant(t2, Action.COMPACTION, State.REQUESTED)
    w.create_requested(comp, b"plan")
    w.transition_to_inflight(comp)
    w.complete(comp, b'{"c": 1}')
    sp2 = Instant(t2, Action.SAVEPOINT, State.INFLIGHT)  # savepoint of a compaction, still inflight
    w.create_inflight(sp2)
    lc = Instant(t3, Action.LOG_COMPACTION, State.REQUESTED)
    w.create_requested(lc, b"lplan")
    w.transition_to_inflight(lc)
    w.complete(lc, b'{"lc": 1}')

    tl = Timeline.load(storage, base)
    dc_done = Instant(t1, Action.DELTA_COMMIT, State.COMPLETED)
    sp_done = Instant(t1, Action.SAVEPOINT, State.COMPLETED)
    c_done = Instant(t2, Action.COMMIT, State.COMPLETED)
    sp2_infl = Instant(t2, Action.SAVEPOINT, State.INFLIGHT)
    lc_done = Instant(t3, Action.DELTA_COMMIT, State.COMPLETED)
    assert tl.instants == [dc_done, sp_done, c_done, sp2_infl, lc_done]
    assert len(tl.all_instants) == 12
    assert tl.timestamps == [t1, t2, t3]
    # get(ts) prefers the write; action= picks either
    assert tl.get(t1) == dc_done and tl.get(t2) == c_done and tl.get(t3) == lc_done
    assert tl.get(t1, Action.SAVEPOINT) == sp_done and tl.get(t2, Action.SAVEPOINT) == sp2_infl
    assert tl.get(t1, Action.DELTA_COMMIT) == dc_done and tl.get(t1, Action.COMMIT) is None
    assert tl.get(t2, Action.COMPACTION) == c_done and tl.get(t2, Action.COMMIT) == c_done
    assert tl.get(t3, Action.LOG_COMPACTION) == lc_done
    assert tl.get(t1, Action.LOG_COMPACTION) is None
    assert tl.get_all(t1) == [dc_done, sp_done]
    assert dc_done in tl and sp_done in tl and sp2_infl in tl
    assert Instant(t2, Action.SAVEPOINT, State.COMPLETED) not in tl
    assert tl.is_compaction(t2) and not tl.is_compaction(t1)
    assert tl.original_action(t3) == Action.LOG_COMPACTION
    assert tl.original_action(t1, Action.SAVEPOINT) == Action.SAVEPOINT
    # filters keep each instant whole
    assert tl.write_timeline().instants == [dc_done, c_done, lc_done]
    assert tl.completed_commits().timestamps == [t1, t2, t3]
    assert tl.completed().instants == [dc_done, sp_done, c_done, lc_done]
    assert tl.pending().instants == [sp2_infl]
    assert not tl.pending_compactions() and not tl.write_timeline().pending()
    assert tl.savepoints().instants == [sp_done, sp2_infl]
    assert tl.savepoints().completed().timestamps == [t1]
    assert tl.as_of(t1).instants == [dc_done, sp_done]
    assert tl.after(t1).write_timeline().timestamps == [t2, t3]
    assert len(tl.savepoints().all_instants) == 3  # history follows the instants kept
    assert len(tl.write_timeline().all_instants) == 9
    # contents: a bare time reads the write; the savepoint's files by its instant
    assert tl.read_details(t1) == b'{"dc": 1}'
    assert tl.read_details(t1, State.INFLIGHT) == b"dc-inflight"
    assert tl.read_details(sp_done) == b"sp"
    assert tl.read_details(sp_done, State.INFLIGHT) == b"sp-inflight"
    assert tl.read_plan(t2) == b"plan" and tl.read_plan(t3) == b"lplan"
    assert tl.savepoints().completed().read_details(t1) == b"sp"
