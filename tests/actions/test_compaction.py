from airflow_hoodie.actions import compaction as c
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.timeline.instant import Action, State

from tests.actions.services_fixtures import inst, slice_, ts

MB = 1024 * 1024


def _deltas(*ns):
    return [inst(n, Action.DELTA_COMMIT) for n in ns]


def test_num_commits_trigger_counts_deltas_after_last_compaction():
    cfg = HoodieConfig({})
    timeline = _deltas(1, 2, 3) + [inst(4, Action.COMMIT)] + _deltas(5, 6, 7, 8)
    assert not c.compaction_due(timeline, c.CompactionSettings.from_config(cfg), ts(9)).due
    assert c.compaction_due(timeline + _deltas(9), c.CompactionSettings.from_config(cfg), ts(10)).due


def test_pending_compaction_resets_the_count():
    cfg = HoodieConfig({c.MAX_DELTA_COMMITS: "2"})
    timeline = _deltas(1, 2, 3) + [inst(4, Action.COMPACTION, State.REQUESTED)] + _deltas(5)
    d = c.compaction_due(timeline, c.CompactionSettings.from_config(cfg), ts(6))
    assert d.delta_commits == 1 and not d.due


def test_time_strategies():
    timeline = _deltas(0, 1)
    for strategy, at, due in [
        ("TIME_ELAPSED", 59, False), ("TIME_ELAPSED", 60, True),
        ("NUM_AND_TIME", 120, False), ("NUM_OR_TIME", 120, True), ("NUM_OR_TIME", 30, False),
    ]:
        cfg = HoodieConfig({c.TRIGGER_STRATEGY: strategy})
        assert c.compaction_due(timeline, c.CompactionSettings.from_config(cfg), ts(at)).due is due, (strategy, at)
    cfg = HoodieConfig({c.TRIGGER_STRATEGY: "NUM_AND_TIME", c.MAX_DELTA_COMMITS: "2"})
    assert c.compaction_due(timeline, c.CompactionSettings.from_config(cfg), ts(61)).due


def test_no_deltas_means_not_due():
    assert not c.compaction_due([], c.CompactionSettings.from_config(HoodieConfig({})), ts(5)).due


def test_selection_orders_by_log_size_skips_pending_and_slices_without_logs():
    slices = [
        slice_("p", "a", 1, 10 * MB, (1 * MB,)),
        slice_("p", "b", 1, 10 * MB, (5 * MB, 1 * MB)),
        slice_("p", "c", 1, 10 * MB, ()),
        slice_("p", "d", 1, 10 * MB, (9 * MB,)),
        slice_("p", "e", 1, None, (2 * MB,)),
    ]
    ops = c.select_operations(slices, {("p", "d")}, c.CompactionSettings.from_config(HoodieConfig({})))
    assert [o["fileId"] for o in ops] == ["b", "e", "a"]
    b = ops[0]
    assert b["deltaFilePaths"] == [f.file_name for f in slices[1].log_files]
    assert b["dataFilePath"] == slices[1].base_file.file_name
    assert b["metrics"][c.TOTAL_LOG_FILES_SIZE] == 6 * MB
    assert b["metrics"][c.TOTAL_IO_READ_MB] == 16 and b["metrics"][c.TOTAL_IO_WRITE_MB] == 10
    # no base file: write estimate is the max parquet size (120 MB)
    assert ops[1]["metrics"][c.TOTAL_IO_WRITE_MB] == 120 and ops[1]["dataFilePath"] is None


def test_io_cap_and_log_threshold():
    slices = [slice_("p", f"f{i}", 1, 100 * MB, ((10 - i) * MB,)) for i in range(5)]
    ops = c.select_operations(slices, set(), c.CompactionSettings.from_config(HoodieConfig({c.TARGET_IO_MB: "400"})))
    # each op ~ 100+logs read + 100 write > 200 MB: the second exhausts the budget and is kept
    assert [o["fileId"] for o in ops] == ["f0", "f1"]
    ops = c.select_operations(slices, set(), c.CompactionSettings.from_config(HoodieConfig({c.LOGFILE_SIZE_THRESHOLD: str(8 * MB)})))
    assert [o["fileId"] for o in ops] == ["f0", "f1", "f2"]


def test_bad_strategy_is_a_config_error():
    import pytest
    from airflow_hoodie.errors import HoodieConfigError

    with pytest.raises(HoodieConfigError, match="NUM_OR_TIME"):
        c.compaction_due(_deltas(1), c.CompactionSettings.from_config(HoodieConfig({c.TRIGGER_STRATEGY: "SOMETIMES"})), ts(2))
