"""Hudi 0.14's archival rules, one scenario each, ported from TestHoodieTimelineArchiver.

Each scenario replays the Java test's timeline (same instant times, same configs) through
our selection and asserts what the Java test asserts survives on the active timeline.
"""

from __future__ import annotations

import datetime as dt

from airflow_hoodie.actions import archive as ar
from airflow_hoodie.table.timeline.instant import Action, Instant, State

from tests.actions.services_fixtures import inst, ts

DONE = State.COMPLETED


class Timeline:
    """An active timeline that loses what archival chooses, as the Java tests' table does."""

    def __init__(self, settings: ar.ArchiveSettings, ctx: ar.ArchiveContext | None = None) -> None:
        self.instants: list[Instant] = []
        self.settings = settings
        self.ctx = ctx or ar.ArchiveContext()

    def add(self, t: str, action: str = Action.COMMIT, state: State = DONE) -> None:
        self.instants = [i for i in self.instants if not (i.timestamp == t and i.action == action)]
        self.instants.append(Instant(t, action, state))

    def drop(self, t: str) -> None:
        self.instants = [i for i in self.instants if i.timestamp != t]

    def archive(self) -> list[str]:
        chosen = ar.instants_to_archive(self.instants, self.settings, self.ctx)
        gone = {(i.timestamp, i.action) for i in chosen}
        self.instants = [i for i in self.instants if (i.timestamp, i.action) not in gone]
        return [i.timestamp for i in chosen]

    def completed(self, *actions: str) -> list[str]:
        acts = set(actions) or Action.COMMITS
        return sorted(i.timestamp for i in self.instants if i.action in acts and i.state == DONE)


def settings(min_c: int, max_c: int, **kw) -> ar.ArchiveSettings:
    kw.setdefault("cleaner_commits_retained", 1)  # the Java tests' retainCommits(1)
    return ar.ArchiveSettings(min_c, max_c, 10, False, **kw)


def test_mor_compaction_bound_keeps_max_delta_commits():
    """testArchivalWithMaxDeltaCommitsGuaranteeForCompaction: MOR, keep 4..5, max delta commits 8."""
    tl = Timeline(settings(4, 5, max_delta_commits=8), ar.ArchiveContext(is_mor=True))
    d = [f"0000000{i}" for i in range(1, 10)]
    for i, t in enumerate(d, start=1):
        tl.add(t, Action.DELTA_COMMIT)
        archived = tl.archive()
        if i <= 8:
            assert archived == []  # fewer than 8 delta commits since the (absent) compaction
        else:
            assert archived == ["00000001"]
    tl.add("00000010", Action.COMMIT)  # the compaction
    for i in range(1, 10):
        t = f"0000001{i}"
        tl.add(t, Action.DELTA_COMMIT)
        before = tl.completed()
        archived = tl.archive()
        after = tl.completed()
        if i <= 2:
            assert all(f"0000000{j}" not in after for j in range(1, 8))
            assert len(before) - len(after) == (6 if i == 1 else 0)
            assert {"00000008", "00000009", "00000010"} <= set(after)
        else:
            assert all(f"0000000{j}" not in after for j in range(1, 10))
            if i == 3:
                assert len(before) - len(after) == 2
            elif i < 8:
                assert archived == []
            else:
                assert len(before) - len(after) == 1 and "00000010" not in after
                if i == 9:
                    assert "00000011" not in after
                assert all(f"0000001{j}" in after for j in range(i - 7, i + 1))


def test_compaction_bound_only_for_commit_count_triggers():
    """The bound exists for NUM_COMMITS and NUM_AND_TIME triggers; TIME_ELAPSED has none."""
    for trigger, expect in (("NUM_COMMITS", []), ("NUM_AND_TIME", []), ("TIME_ELAPSED", ["00000001", "00000002"])):
        tl = Timeline(settings(4, 5, max_delta_commits=8, compaction_trigger=trigger), ar.ArchiveContext(is_mor=True))
        for i in range(1, 7):
            tl.add(f"0000000{i}", Action.DELTA_COMMIT)
        assert tl.archive() == expect, trigger


def test_oldest_pending_write_keeps_the_commit_before_it():
    """testGetCommitInstantsToArchiveDuringInflightCommits: keep 3..4; a requested
    replacecommit at 1003, then an inflight commit at 1007 hold archival back."""
    tl = Timeline(settings(3, 4))
    for t in ("1000", "1001", "1002"):
        tl.add(t)
    tl.add("1003", Action.REPLACE_COMMIT, State.REQUESTED)
    for t in ("1004", "1005", "1006"):
        tl.add(t)
    tl.add("1007", Action.COMMIT, State.INFLIGHT)
    for i in range(6):
        tl.add(f"101{i}")
    assert tl.archive() == ["1000", "1001"]
    assert sorted(i.timestamp for i in tl.instants)[0] == "1002" and len(tl.instants) == 12
    tl.drop("1003")  # the test deletes the requested replacecommit
    assert tl.archive() == ["1002", "1004", "1005"]
    write_timeline = sorted(i.timestamp for i in tl.instants)
    assert write_timeline[0] == "1006" and len(write_timeline) == 8


def test_oldest_pending_replacecommit_blocks_everything_after_it():
    """testWithOldestReplaceCommit: keep 2..3, an inflight replacecommit at 1001 first."""
    tl = Timeline(settings(2, 3))
    tl.add("1001", Action.REPLACE_COMMIT, State.INFLIGHT)
    for i in range(2, 10):
        tl.add(f"100{i}")
    assert tl.archive() == []
    assert len(tl.instants) == 9


def test_pending_clustering_keeps_the_commit_before_it():
    """testPendingClusteringAfterArchiveCommit: keep 4..5; clustering at 00000002 stays
    inflight while completed clusterings follow: nothing is archived."""
    tl = Timeline(settings(4, 5))
    tl.add("00000002", Action.REPLACE_COMMIT, State.INFLIGHT)
    for i in range(1, 8):
        if i != 2:
            tl.add(f"0000000{i}", Action.REPLACE_COMMIT)
        assert tl.archive() == []
    assert len(tl.completed()) == 6


def test_replacecommit_waits_for_the_clean_of_its_replaced_files():
    """The clustering bound: with KEEP_LATEST_COMMITS the first replacecommit at or after
    the latest clean plan's earliestInstantToRetain stays; with KEEP_LATEST_FILE_VERSIONS
    (a plan without one) the clean's own time is the lower bound."""
    base = [inst(1), inst(2, Action.REPLACE_COMMIT)] + [inst(n) for n in range(3, 10)] + [inst(6, Action.REPLACE_COMMIT)]
    base = [i for i in base if not (i.timestamp == ts(6) and i.action == Action.COMMIT)]
    s = settings(4, 6)
    no_clean = ar.ArchiveContext()
    assert [i.timestamp for i in ar.instants_to_archive(base, s, no_clean)] == [ts(1)]
    by_commits = ar.ArchiveContext(latest_clean=ts(9), latest_clean_earliest_retain=ts(3))
    assert [i.timestamp for i in ar.instants_to_archive(base, s, by_commits)] == [ts(1), ts(2), ts(3), ts(4), ts(5)]
    by_versions_early = ar.ArchiveContext(latest_clean=ts(2), latest_clean_earliest_retain=None)
    assert [i.timestamp for i in ar.instants_to_archive(base, s, by_versions_early)] == [ts(1)]
    by_versions_late = ar.ArchiveContext(latest_clean=ts(4), latest_clean_earliest_retain=None)
    assert [i.timestamp for i in ar.instants_to_archive(base, s, by_versions_late)] == [ts(1), ts(2), ts(3), ts(4), ts(5)]


def _minutes_ago(now: dt.datetime, minutes: int) -> str:
    t = now - dt.timedelta(minutes=minutes)
    return t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 1000:03d}"


def test_min_and_max_follow_the_cleaner():
    """testArchivalWithAutoAdjustmentBasedOnCleanConfigs: keep 3..4 while the cleaner keeps
    5 commits (or 1 hour); commits 90..5 minutes old, the ones at 30 and 20 inflight: the
    bounds grow to what the cleaner keeps, and only the two oldest commits go."""
    now = dt.datetime(2024, 3, 1, 12, 0, 0)
    for policy in ("KEEP_LATEST_BY_HOURS", "KEEP_LATEST_COMMITS"):
        tl = Timeline(settings(3, 4, cleaner_policy=policy, cleaner_commits_retained=5, cleaner_hours_retained=1))
        ages = [(90, True), (80, True), (70, True), (50, True), (45, True), (40, True),
                (30, False), (20, False), (10, True), (5, True)]
        for minutes, complete in ages:
            tl.add(_minutes_ago(now, minutes), Action.COMMIT, DONE if complete else State.INFLIGHT)
        everything = sorted(i.timestamp for i in tl.instants)
        assert ar.min_and_max_to_keep(tl.instants, tl.settings)[0] > 3, policy
        tl.archive()
        assert sorted(i.timestamp for i in tl.instants) == everything[2:], policy


def test_unparseable_instant_times_keep_the_configured_bounds():
    """Hudi adjusts nothing when the latest commit's time is no date (its ParseException)."""
    s = settings(3, 4, cleaner_commits_retained=1)
    instants = [Instant("1000", Action.COMMIT, DONE), Instant("1001", Action.COMMIT, State.INFLIGHT)] + [
        Instant(f"10{n}", Action.COMMIT, DONE) for n in range(10, 20)]
    assert ar.min_and_max_to_keep(instants, s) == (3, 4)
    dated = [Instant(ts(n), Action.COMMIT, DONE if n != 2 else State.INFLIGHT) for n in range(1, 12)]
    assert ar.min_and_max_to_keep(dated, s) == (11, 12)  # 9 commits after ts(1), plus 2


def test_cleans_and_rollbacks_per_action():
    """testArchiveTableWithCleanCommits (no metadata table): keep 4..5; cleans 2..7 after
    commit 1: once 6 cleans exist the two oldest go, the commit stays."""
    tl = Timeline(settings(4, 5))
    tl.add("00000001")
    for i in range(2, 8):
        tl.add(f"0000000{i}", Action.CLEAN)
        archived = tl.archive()
        assert archived == ([] if i < 7 else ["00000002", "00000003"])
    assert tl.completed(Action.COMMIT) == ["00000001"]
    assert tl.completed(Action.CLEAN) == [f"0000000{i}" for i in range(4, 8)]


def test_metadata_table_compaction_fences_archival():
    """With a metadata table nothing newer than its latest compaction is archived, and
    nothing at all before its first compaction."""
    instants = [inst(n) for n in range(1, 10)]
    s = settings(4, 6)
    assert len(ar.instants_to_archive(instants, s, ar.ArchiveContext())) == 5
    assert ar.instants_to_archive(instants, s, ar.ArchiveContext(has_metadata_table=True)) == []
    fenced = ar.ArchiveContext(has_metadata_table=True, metadata_latest_compaction=ts(3))
    assert [i.timestamp for i in ar.instants_to_archive(instants, s, fenced)] == [ts(1), ts(2)]
