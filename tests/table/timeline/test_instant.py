"""Instant file names exactly as Hudi 0.14 writes them, parsing and ordering."""

from __future__ import annotations

import pytest

from airflow_hoodie.errors import HoodieTimelineError
from airflow_hoodie.table.timeline.instant import (
    Action,
    Instant,
    State,
    new_instant_time,
    normalize_instant_time,
    parse_instant_time,
)

T = "20240418173213674"

NAMES = [
    (Action.COMMIT, State.REQUESTED, f"{T}.commit.requested"),
    (Action.COMMIT, State.INFLIGHT, f"{T}.inflight"),
    (Action.COMMIT, State.COMPLETED, f"{T}.commit"),
    (Action.DELTA_COMMIT, State.REQUESTED, f"{T}.deltacommit.requested"),
    (Action.DELTA_COMMIT, State.INFLIGHT, f"{T}.deltacommit.inflight"),
    (Action.DELTA_COMMIT, State.COMPLETED, f"{T}.deltacommit"),
    (Action.REPLACE_COMMIT, State.REQUESTED, f"{T}.replacecommit.requested"),
    (Action.REPLACE_COMMIT, State.INFLIGHT, f"{T}.replacecommit.inflight"),
    (Action.REPLACE_COMMIT, State.COMPLETED, f"{T}.replacecommit"),
    (Action.CLEAN, State.REQUESTED, f"{T}.clean.requested"),
    (Action.CLEAN, State.INFLIGHT, f"{T}.clean.inflight"),
    (Action.CLEAN, State.COMPLETED, f"{T}.clean"),
    (Action.ROLLBACK, State.REQUESTED, f"{T}.rollback.requested"),
    (Action.ROLLBACK, State.INFLIGHT, f"{T}.rollback.inflight"),
    (Action.ROLLBACK, State.COMPLETED, f"{T}.rollback"),
    (Action.SAVEPOINT, State.INFLIGHT, f"{T}.savepoint.inflight"),
    (Action.SAVEPOINT, State.COMPLETED, f"{T}.savepoint"),
    (Action.COMPACTION, State.REQUESTED, f"{T}.compaction.requested"),
    (Action.COMPACTION, State.INFLIGHT, f"{T}.compaction.inflight"),
    (Action.LOG_COMPACTION, State.REQUESTED, f"{T}.logcompaction.requested"),
    (Action.LOG_COMPACTION, State.INFLIGHT, f"{T}.logcompaction.inflight"),
    (Action.RESTORE, State.REQUESTED, f"{T}.restore.requested"),
    (Action.RESTORE, State.INFLIGHT, f"{T}.restore.inflight"),
    (Action.RESTORE, State.COMPLETED, f"{T}.restore"),
    (Action.INDEXING, State.REQUESTED, f"{T}.indexing.requested"),
    (Action.INDEXING, State.INFLIGHT, f"{T}.indexing.inflight"),
    (Action.INDEXING, State.COMPLETED, f"{T}.indexing"),
]


@pytest.mark.parametrize("action,state,name", NAMES)
def test_file_name_round_trip(action, state, name):
    inst = Instant(T, action, state)
    assert inst.file_name == name
    assert Instant.parse(name) == inst


def test_compaction_completes_as_commit():
    c = Instant(T, Action.COMPACTION, State.INFLIGHT)
    assert c.completed() == Instant(T, Action.COMMIT, State.COMPLETED)
    assert c.completed().file_name == f"{T}.commit"
    assert c.requested().file_name == f"{T}.compaction.requested"
    lc = Instant(T, Action.LOG_COMPACTION, State.REQUESTED)
    assert lc.completed().file_name == f"{T}.deltacommit"


@pytest.mark.parametrize(
    "name",
    ["hoodie.properties", ".temp", "archived", "abc.commit", f"{T}.commit.crc", f"{T}.unknown",
     f"{T}.savepoint.requested", f"{T}.commit.inflight", f"{T}.compaction", f"{T}.commit.requested.tmp",
     f".{T}.commit.crc", f"{T}", "metadata", f"{T}.commit.requested.abcd.tmp"],
)
def test_non_instant_names_are_ignored(name):
    assert Instant.parse(name) is None
    with pytest.raises(HoodieTimelineError, match="not a Hudi instant file name"):
        Instant.from_file_name(name)


def test_invalid_fields_raise():
    with pytest.raises(HoodieTimelineError):
        Instant("2024x", Action.COMMIT)
    with pytest.raises(HoodieTimelineError):
        Instant(T, "bogus")
    with pytest.raises(HoodieTimelineError):
        Instant(T, Action.SAVEPOINT, State.REQUESTED)


def test_states_and_ordering():
    a = Instant("20240101000000000", Action.COMMIT, State.COMPLETED)
    b = Instant("20240101000000001", Action.CLEAN, State.REQUESTED)
    assert a.is_completed and not a.is_pending and b.is_requested and b.is_pending
    assert sorted([b, a]) == [a, b]
    assert Instant(T, Action.COMMIT, State.REQUESTED) < Instant(T, Action.COMMIT, State.INFLIGHT)


def test_instant_times(monkeypatch):
    import airflow_hoodie.table.timeline.instant as instant_mod

    monkeypatch.setattr(instant_mod, "_last_by_table", {})  # restored after the test
    assert parse_instant_time(T).microsecond == 674000
    assert parse_instant_time("20240418173213").second == 13
    assert normalize_instant_time("20240418173213") == "20240418173213999"
    with pytest.raises(HoodieTimelineError):
        parse_instant_time("2024")
    with pytest.raises(HoodieTimelineError):
        parse_instant_time("20241399000000000")
    times = [new_instant_time() for _ in range(50)]
    assert all(len(t) == 17 for t in times)
    assert times == sorted(set(times))
    later = new_instant_time(after="29990101000000000")
    assert later == "29990101000000001"
    assert new_instant_time(utc=True) > later
