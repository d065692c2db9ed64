"""Archival on timeline layout 2 keeps a delta commit that no completed compaction merged
(issue 35, F3): requested before the latest compaction but completed after it, its log lies in
that compaction's new slice (slices follow completion times); archived, it would be taken for
an instant before the compaction and its records left behind the new base file."""

from __future__ import annotations

from airflow_hoodie.actions import archive as ar
from airflow_hoodie.table.timeline.instant import Action, Instant, State

DONE = State.COMPLETED


def _d(ts: str, completed: str | None) -> Instant:
    if completed is None:
        return Instant(ts, Action.DELTA_COMMIT, State.INFLIGHT)
    return Instant(ts, Action.DELTA_COMMIT, DONE, completion_time=completed)


def _timeline() -> list[Instant]:
    """d1..d6 in order, then d7 requested at 700 that completes only after the compaction at
    750 (a metadata-table delta commit written after the compaction its update ran first),
    then d8, d9 after the compaction."""
    out = [_d(f"00000000000000{i}00", f"00000000000000{i}10") for i in range(1, 7)]
    out.append(_d("00000000000000700", "00000000000000760"))
    out.append(Instant("00000000000000750", Action.COMMIT, DONE, completion_time="00000000000000755"))
    out.append(_d("00000000000000800", "00000000000000810"))
    out.append(_d("00000000000000900", "00000000000000910"))
    return out


def test_the_bound_keeps_a_delta_commit_completed_after_the_compaction():
    ordered = _timeline()
    assert ar.oldest_instant_to_retain_for_compaction(ordered, 10, by_completion=True) == "00000000000000700"
    # by instant time alone (timeline layout 1, where logs name their slice) the compaction is the bound
    assert ar.oldest_instant_to_retain_for_compaction(ordered, 10) == "00000000000000750"
    # once enough delta commits follow, the last max_delta_commits are kept, and d7 still is
    assert ar.oldest_instant_to_retain_for_compaction(ordered, 1, by_completion=True) == "00000000000000700"


def test_archival_of_a_layout_2_mor_timeline_leaves_it_until_a_compaction_merged_it():
    s = ar.ArchiveSettings(2, 3, 10, False, cleaner_commits_retained=1, max_delta_commits=10)
    ctx = ar.ArchiveContext(is_mor=True)
    chosen = [i.timestamp for i in ar.instants_to_archive(_timeline(), s, ctx, ar.RULES_1_X)]
    assert chosen == [f"00000000000000{i}00" for i in range(1, 7)]
    # a later compaction (requested after d7 completed) merged it: now it may go
    later = [*_timeline(), Instant("00000000000000950", Action.COMMIT, DONE, completion_time="00000000000000955")]
    chosen = [i.timestamp for i in ar.instants_to_archive(later, s, ctx, ar.RULES_1_X)]
    assert "00000000000000700" in chosen


def test_a_pending_delta_commit_requested_before_the_compaction_is_kept():
    ordered = [_d("00000000000000100", "00000000000000110"), _d("00000000000000200", None),
               Instant("00000000000000300", Action.COMMIT, DONE, completion_time="00000000000000310")]
    assert ar.oldest_instant_to_retain_for_compaction(ordered, 10, by_completion=True) == "00000000000000200"
