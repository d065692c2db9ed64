"""F4 (issue 35): every change of the metadata table happens under the data table's lock.

Under OCC a write that lost the conflict check rolled its instant back after leaving the
lock: the rollback's metadata-table delta commit, the rollback of the write's own delta
commit and the metadata table's services (compaction, clean, archival) all ran unlocked,
beside other writers doing the same. In a 3-writer run that failed writes spuriously
(``Instant file ...clean.inflight already exists in .../.hoodie/metadata/.hoodie/timeline``).

The check sits on the timeline writer, the one place an instant of any table is written: an
instant file of a metadata table written while this task does not hold the table lock (the
lock file exists and carries the token of a provider this task holds) fails the test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from airflow_hoodie.actions.transaction import transaction_manager as tm_module
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.errors import HoodieWriteConflictError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter
from tests.actions.test_write import conf
from tests.actions.transaction.test_occ_writes import OCC, RunsMeanwhile, rows
from tests.actions.write_model import to_arrow
from tests.actions.table_versions import table_version  # noqa: F401  (the fixture the module runs under)

pytestmark = pytest.mark.usefixtures("table_version")

_STEPS = ("create_requested", "transition_to_inflight", "complete", "delete_instant_files",
          "revert_to_requested", "revert_completed_to_inflight")


def _held_by_us(base: Path) -> bool:
    """The table's lock file exists and names a lock this task holds right now."""
    lock = base / ".hoodie" / "lock"
    try:
        owner = json.loads(lock.read_text())
    except (OSError, ValueError):
        return False
    tokens = {getattr(p, "_token", None) for p in tm_module._HELD.get()}
    return owner.get("pid") == os.getpid() and owner.get("token") in tokens


@pytest.fixture
def metadata_changes(monkeypatch):
    """Record every metadata-table instant step with whether the table lock was held."""
    seen: list[tuple[str, str, bool]] = []

    def guard(name):
        original = getattr(TimelineWriter, name)

        def step(self, *args, **kwargs):
            if "/.hoodie/metadata" in self.base_path:
                base = Path(self.base_path.split("/.hoodie/metadata")[0])
                seen.append((name, str(args[0]) if args else "", _held_by_us(base)))
            return original(self, *args, **kwargs)

        monkeypatch.setattr(TimelineWriter, name, step)

    for name in _STEPS:
        guard(name)
    return seen


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_write_that_loses_the_conflict_check_changes_the_metadata_table_only_under_the_lock(
        tmp_path, table_type, metadata_changes):
    base = tmp_path / "t"
    # the metadata table's services run at every delta commit: the aborted write's rollback
    # triggers its compaction, clean and archival too
    c = conf(table_type, **OCC, **{"hoodie.metadata.enable": "true",
                                   "hoodie.metadata.compact.max.delta.commits": "1"})
    write_arrow(str(base), to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")
    other = lambda: write_arrow(str(base), to_arrow(rows(range(0, 5), 2, "other")), "upsert", c)  # noqa: E731
    metadata_changes.clear()
    with pytest.raises(HoodieWriteConflictError):
        write_arrow(str(base), to_arrow(rows(range(3, 8), 3, "mine")), "upsert", c, executor=RunsMeanwhile(other))
    table = HoodieTable.load(str(base))
    assert table.timeline.filter(actions="rollback").completed().instants, "the conflicting write was rolled back"
    assert metadata_changes, "the writes and the rollback changed the metadata table"
    unlocked = [(step, instant) for step, instant, held in metadata_changes if not held]
    assert unlocked == []


def test_a_write_failing_before_its_commit_rolls_back_under_the_lock(tmp_path, metadata_changes):
    """Not only the conflict: any failure between start and commit aborts the write, and the
    abort's metadata-table rollback is a metadata-table change too."""
    base = tmp_path / "t"
    c = conf("MERGE_ON_READ", **OCC, **{"hoodie.metadata.enable": "true"})
    write_arrow(str(base), to_arrow(rows(range(10), 1, "a")), "upsert", c, table_name="t")

    def fail():
        raise RuntimeError("the executor died")

    metadata_changes.clear()
    with pytest.raises(RuntimeError, match="executor died"):
        write_arrow(str(base), to_arrow(rows(range(3, 8), 3, "mine")), "upsert", c, executor=_Failing(fail))
    assert metadata_changes, "the abort's rollback changed the metadata table"
    assert [(s, i) for s, i, held in metadata_changes if not held] == []


class _Failing(RunsMeanwhile):
    def map(self, fn, items):
        out = super().map(fn, items)
        if self.raised is not None:
            raise self.raised
        return out


def test_table_services_change_the_metadata_table_only_under_the_lock(tmp_path, metadata_changes):
    """Every metadata-table change, not only an abort's: a compaction (plan and execution), a
    clean, an archival and a rollback of the latest write, each beside writers under OCC."""
    from airflow_hoodie.actions import clean as cl
    from airflow_hoodie.actions import compaction as cp
    from airflow_hoodie.actions.archive import run_archive
    from airflow_hoodie.actions.executor import LocalExecutor
    from airflow_hoodie.actions.rollback import rollback_latest_or
    from airflow_hoodie.config import HoodieConfig

    base = str(tmp_path / "t")
    settings = conf("MERGE_ON_READ", **OCC, **{
        "hoodie.metadata.enable": "true", "hoodie.metadata.compact.max.delta.commits": "1",
        "hoodie.cleaner.commits.retained": "1", "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
        "hoodie.parquet.small.file.limit": "0"})
    for ts in range(1, 6):
        write_arrow(base, to_arrow(rows(range(10), ts, "a")), "upsert", settings, table_name="t")
    cfg = HoodieConfig(settings)
    metadata_changes.clear()
    assert cp.schedule_compaction(HoodieTable.load(base), cfg, force=True).instant is not None
    cp.execute_pending_compactions(HoodieTable.load(base), LocalExecutor(), cfg)
    cl.run_clean(HoodieTable.load(base), cfg, LocalExecutor())
    run_archive(HoodieTable.load(base), cfg)
    write_arrow(base, to_arrow(rows(range(10), 9, "a")), "upsert", settings)
    rollback_latest_or(HoodieTable.load(base), None, cfg)
    assert metadata_changes, "the services changed the metadata table"
    assert [(s, i) for s, i, held in metadata_changes if not held] == []
