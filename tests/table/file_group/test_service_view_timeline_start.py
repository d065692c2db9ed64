"""The table services' view takes the same start of the active timeline as the readers'
(issue 35, F1): the first write or compaction, not the first instant of any action. A clean
left older than an archived compaction commit must not make that commit's base file look
uncommitted to the compaction planner, the cleaner and the compaction's log selection."""

from __future__ import annotations

from airflow_hoodie.table.timeline.instant import Action, Instant, State
from tests.table.file_group.test_file_system_view import (
    T1,
    T2,
    T3,
    T4,
    _commit,
    _mor,
    _touch,
)


def _clean(w, ts: str) -> None:
    clean = Instant(ts, Action.CLEAN, State.REQUESTED)
    w.create_requested(clean)
    w.transition_to_inflight(clean)
    w.complete(clean, b"")


def test_services_see_the_base_file_of_a_commit_archived_after_an_older_clean(tmp_path):
    t, w, p = _mor(tmp_path)
    _clean(w, T1)  # kept by its own count while the commits after it were archived
    _touch(p / f"f1-0_0-1-1_{T2}.parquet")  # written by the archived compaction commit T2
    _touch(p / f".f1-0_{T2}.log.1_0-1-1")
    _commit(w, T3)  # the first write left on the active timeline
    _touch(p / f".f1-0_{T2}.log.2_0-1-1")
    _touch(p / f"f9-0_0-1-1_{T4}.parquet")  # newer than anything completed: a failed write
    v = t.reload_timeline() and t.file_system_view()
    groups = v.service_file_groups()
    (s,) = groups[("p", "f1-0")].slices
    assert s.base_file is not None and s.base_file.file_name == f"f1-0_0-1-1_{T2}.parquet"
    assert [lf.version for lf in s.log_files] == [1, 2]
    (latest,) = [s for s in v.service_latest_slices() if s.file_id == "f1-0"]
    assert latest.base_file is not None  # what a compaction plan names as its data file
    assert groups.get(("p", "f9-0")) is None or all(sl.base_file is None for sl in groups[("p", "f9-0")].slices)
    # the readers' view agreed already
    (read,) = [s for s in v.latest_file_slices() if s.file_id == "f1-0"]
    assert read.base_file is not None
