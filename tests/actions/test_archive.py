import pytest

from airflow_hoodie.actions import archive as ar
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.table.timeline.instant import Action, State

from tests.actions.services_fixtures import inst, ts

S = ar.ArchiveSettings(min_commits=4, max_commits=6, batch=1, beyond_savepoint=False)


def commits(*ns, action=Action.COMMIT):
    return [inst(n, action) for n in ns]


def stamps(instants):
    return [i.timestamp for i in instants]


def test_config_validation_matches_hudi():
    with pytest.raises(HoodieConfigError, match="greater than hoodie.cleaner.commits.retained=10"):
        ar.validate_archive_config(HoodieConfig({ar.MIN_COMMITS: "10", ar.MAX_COMMITS: "30"}))
    with pytest.raises(HoodieConfigError, match="hoodie.keep.max.commits"):
        ar.validate_archive_config(HoodieConfig({ar.MIN_COMMITS: "20", ar.MAX_COMMITS: "20"}))
    ar.validate_archive_config(HoodieConfig({}))  # defaults 20/30/10 are fine
    ar.validate_archive_config(HoodieConfig({ar.MIN_COMMITS: "11"}))


def test_nothing_until_more_than_max():
    assert ar.instants_to_archive(commits(*range(1, 7)), S, ar.ArchiveContext()) == []
    out = ar.instants_to_archive(commits(*range(1, 8)), S, ar.ArchiveContext())
    assert stamps(out) == [ts(1), ts(2), ts(3)]


def test_batch_size_is_no_threshold():
    """Hudi's hoodie.commits.archival.batch sizes archive blocks; it never holds instants back."""
    s = ar.ArchiveSettings(4, 6, 5, False)
    assert stamps(ar.instants_to_archive(commits(*range(1, 8)), s, ar.ArchiveContext())) == [ts(1), ts(2), ts(3)]


def test_pending_compaction_blocks():
    tl = commits(*range(1, 9), action=Action.DELTA_COMMIT) + [inst(2, Action.COMPACTION, State.REQUESTED)]
    tl = [i for i in tl if not (i.timestamp == ts(2) and i.action == Action.DELTA_COMMIT)]
    out = ar.instants_to_archive(tl, S, ar.ArchiveContext())
    # Hudi keeps the greatest completed commit below the oldest pending instant (1)
    assert stamps(out) == []


def test_inflight_write_blocks():
    tl = commits(1, 2, 4, 5, 6, 7, 8, 9) + [inst(3, Action.COMMIT, State.INFLIGHT)]
    assert stamps(ar.instants_to_archive(tl, S, ar.ArchiveContext())) == [ts(1)]


def test_savepoint_blocks_unless_beyond():
    tl = commits(*range(1, 10)) + [inst(2, Action.SAVEPOINT)]
    assert stamps(ar.instants_to_archive(tl, S, ar.ArchiveContext())) == [ts(1)]
    beyond = ar.ArchiveSettings(4, 6, 1, True)
    assert stamps(ar.instants_to_archive(tl, beyond, ar.ArchiveContext())) == [ts(1), ts(3), ts(4), ts(5), ts(6)]


def test_mor_keeps_uncompacted_delta_commits():
    tl = commits(1, 2, 3, action=Action.DELTA_COMMIT) + commits(4) + commits(5, 6, 7, 8, 9, action=Action.DELTA_COMMIT)
    out = ar.instants_to_archive(tl, S, ar.ArchiveContext(is_mor=True))
    assert stamps(out) == [ts(1), ts(2), ts(3), ts(4)]
    # never compacted: the last hoodie.compact.inline.max.delta.commits (5) stay
    never = commits(*range(1, 10), action=Action.DELTA_COMMIT)
    assert stamps(ar.instants_to_archive(never, S, ar.ArchiveContext(is_mor=True))) == [ts(n) for n in (1, 2, 3, 4)]
    few = ar.ArchiveSettings(4, 6, 1, False, max_delta_commits=20)
    assert ar.instants_to_archive(never, few, ar.ArchiveContext(is_mor=True)) == []
    by_time = ar.ArchiveSettings(4, 6, 1, False, compaction_trigger="TIME_ELAPSED", max_delta_commits=20)
    assert len(ar.instants_to_archive(never, by_time, ar.ArchiveContext(is_mor=True))) == 5


def test_clustering_bound_from_latest_clean():
    tl = commits(1) + [inst(2, Action.REPLACE_COMMIT)] + commits(*range(3, 10))
    # no clean yet: the replacecommit's replaced files still exist -> keep it
    assert stamps(ar.instants_to_archive(tl, S, ar.ArchiveContext())) == [ts(1)]
    ctx = ar.ArchiveContext(latest_clean=ts(12), latest_clean_earliest_retain=ts(5))
    assert stamps(ar.instants_to_archive(tl, S, ctx)) == [ts(1), ts(2), ts(3), ts(4), ts(5)]


def test_pending_clustering_bounds_to_previous_commit():
    tl = commits(*range(1, 10)) + [inst(3, Action.REPLACE_COMMIT, State.REQUESTED)]
    tl = [i for i in tl if not (i.timestamp == ts(3) and i.action == Action.COMMIT)]
    assert stamps(ar.instants_to_archive(tl, S, ar.ArchiveContext())) == [ts(1)]


def test_clean_and_rollback_archived_beyond_max():
    tl = commits(1, 2) + [inst(n, Action.CLEAN) for n in range(10, 17)] + [inst(n, Action.ROLLBACK) for n in (20, 21)]
    out = ar.instants_to_archive(tl, S, ar.ArchiveContext())
    assert stamps(out) == [ts(10), ts(11), ts(12)]


def test_state_files_and_deletion_order():
    files = [inst(1, Action.COMPACTION, State.REQUESTED), inst(1, Action.COMPACTION, State.INFLIGHT), inst(1),
             inst(2, Action.COMMIT, State.REQUESTED), inst(2, Action.COMMIT, State.INFLIGHT), inst(2),
             inst(3, Action.COMMIT, State.REQUESTED)]
    chosen = ar.state_files_of([inst(1), inst(2)], files)
    assert len(chosen) == 6
    order = ar.deletion_order(chosen)
    assert [i.state for i in order[:4]] == [State.REQUESTED, State.INFLIGHT, State.REQUESTED, State.INFLIGHT]
    assert all(i.state == State.COMPLETED for i in order[4:])
