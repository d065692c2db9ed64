"""A write lists the table once (7755387): the view it checks at load time is the one it plans
on while no instant completed in between. Here something happens to the table in that window
(after the load, before the write's instant exists) and the write's plan -- the files
index_scope hands the index and the bucketing -- must be the one a fresh listing gives."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import pytest

from airflow_hoodie.actions import write as write_mod
from airflow_hoodie.actions.clustering import schedule_clustering
from airflow_hoodie.actions.compaction import schedule_compaction
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieCorruptedDataError, HoodieWriteConflictError
from airflow_hoodie.table.file_group.file_system_view import ExistingFile, FileSystemView
from airflow_hoodie.table.hoodie_table import HoodieTable
from tests.actions.table_versions import table_version, version_settings  # noqa: F401 - the fixture
from tests.table.file_group.test_write_listing import _rows

pytestmark = pytest.mark.usefixtures("table_version")


def _conf(table_type: str, mdt: bool) -> dict[str, str]:
    return {"hoodie.table.name": "t", "hoodie.table.type": table_type,
            "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.parquet.small.file.limit": "0",
            "hoodie.metadata.enable": str(mdt).lower(), **version_settings()}


def _table(base: str, conf: dict[str, str]) -> None:
    write_arrow(base, _rows(list(range(20)), 1), "upsert", conf)
    write_arrow(base, _rows([1, 2, 3, 4], 2), "upsert", conf)


def _planned(base: str, conf: dict[str, str], event: Callable[[str], None], share: bool,
             monkeypatch: pytest.MonkeyPatch) -> list[ExistingFile]:
    """The files the next upsert plans on when ``event`` runs between its load and its start."""
    with monkeypatch.context() as m:
        planned: list[list[ExistingFile]] = []
        scope, opened = write_mod.index_scope, write_mod.open_for_write

        def capture(*a, **k):  # noqa: ANN002, ANN003, ANN202
            planned.append(scope(*a, **k))
            return planned[-1]

        def in_the_window(client, avro):  # noqa: ANN001, ANN202
            event(base)
            time.sleep(0.01)  # the write's instant comes after the event's
            return opened(client, avro)

        m.setattr(write_mod, "index_scope", capture)
        m.setattr(write_mod, "open_for_write", in_the_window)
        if not share:  # as before 7755387: every view lists the table itself
            m.setattr(FileSystemView, "seen_through", lambda self, timeline, config: FileSystemView(
                self.storage, self.base_path, timeline, config, self.use_metadata_table))
        try:
            write_arrow(base, _rows([3, 6, 30], 4), "upsert", conf)
        except HoodieWriteConflictError:  # an update of a group under clustering is refused
            planned.append([])
    return sorted(planned[0], key=lambda f: (f.partition_path, f.file_id)) + [len(planned) > 1]


def _schedule_compaction(base: str) -> None:
    assert schedule_compaction(HoodieTable.load(base), HoodieConfig({}), force=True).instant is not None


def _schedule_clustering(base: str) -> None:
    assert schedule_clustering(HoodieTable.load(base), HoodieConfig({
        "hoodie.clustering.plan.strategy.small.file.limit": str(1 << 30)}))


@pytest.mark.parametrize("table_type, event, mdt", [("MERGE_ON_READ", _schedule_compaction, True),
                                                     ("MERGE_ON_READ", _schedule_compaction, False),
                                                     ("COPY_ON_WRITE", _schedule_clustering, False)],
                         ids=["compaction scheduled, metadata table", "compaction scheduled, storage",
                              "clustering scheduled, storage"])
def test_a_service_scheduled_in_the_window_is_planned_around(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mdt: bool, table_type: str,
        event: Callable[[str], None]) -> None:
    """A scheduled compaction or clustering completes no instant, so the listing is shared;
    the view must still group it by the timeline that holds the new plan."""
    plans = []
    for share in (True, False):
        base = str(tmp_path / str(share))
        _table(base, _conf(table_type, mdt))
        plans.append(_planned(base, _conf(table_type, mdt), event, share, monkeypatch))
    if table_type == "COPY_ON_WRITE":
        assert any(f.in_clustering for f in plans[1][:-1]) and plans[1][-1] is True  # refused
    else:
        assert any(f.lookup_base_file != f.base_file for f in plans[1][:-1])  # keys looked up in the merged slice

    def key(f: ExistingFile | bool) -> tuple | bool:  # instant times differ between the two tables
        if isinstance(f, bool):
            return f
        return (f.partition_path, f.in_clustering, bool(f.base_file), len(f.log_files), f.log_size,
                bool(f.lookup_base_file), len(f.lookup_log_files or []), f.lookup_base_file == f.base_file)
    assert [key(f) for f in plans[0]] == [key(f) for f in plans[1]]


def _delete_latest_base_file(base: str) -> None:
    """A file deleted behind the table: the latest base file of partition "a"."""
    latest = max(Path(base, "a").glob("*.parquet"), key=lambda f: f.stem.rsplit("_", 1)[1])
    latest.unlink()


def _deleted_in_the_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_type: str, mdt: bool,
                           share: bool = True) -> None:
    base = str(tmp_path / "t")
    _table(base, _conf(table_type, mdt))
    with pytest.raises(HoodieCorruptedDataError, match="missing"):
        _planned(base, _conf(table_type, mdt), _delete_latest_base_file, share, monkeypatch)


def test_a_file_deleted_in_the_window_stops_the_write_by_name_through_the_metadata_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the metadata table the planned slices' files are asked of storage again."""
    _deleted_in_the_window(tmp_path, monkeypatch, "MERGE_ON_READ", mdt=True)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_file_deleted_in_the_window_stops_the_write_by_name_on_storage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table_type: str) -> None:
    _deleted_in_the_window(tmp_path, monkeypatch, table_type, mdt=False)
