"""Archival of a table whose metadata table we keep: Hudi's barrier at the metadata table's
latest compaction keeps every data instant whose log blocks the listing still needs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from airflow_hoodie.actions import archive as ar
from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.actions.metadata_table.files_bootstrap import initialize_files_partition
from airflow_hoodie.table.metadata_table.files_listing import load_files_listing
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.instant import Action
from airflow_hoodie.table.timeline.timeline import Timeline
from tests.table.normalize import normalize_table
from tests.table.table_files import storage_listing

CONF = {"hoodie.table.type": "COPY_ON_WRITE", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.metadata.compact.max.delta.commits": "3",
        ar.MIN_COMMITS: "2", ar.MAX_COMMITS: "3", cl.COMMITS_RETAINED: "1"}


def _write(base: Path, n: int) -> str:
    data = pa.table({"id": [0, n + 1], "ts": [n, n], "p": ["a", "b"], "v": [f"v{n}", "w"]})
    return write_arrow(str(base), data, "upsert", CONF, table_name="t").instant


def _listing_is_storage(base: Path) -> None:
    table = HoodieTable.load(str(base))
    assert load_files_listing(table.storage, table.base_path, table.timeline).files == storage_listing(base)
    by_listing = normalize_table(read_table(str(base), metadata_enable=False))
    assert normalize_table(read_table(str(base), metadata_enable=True)) == by_listing


def _latest_compaction(base: Path) -> str:
    mdt = Timeline.load(Storage.local(), str(base / ".hoodie" / "metadata"))
    return [i.timestamp for i in mdt.instants if i.action == Action.COMMIT and i.is_completed][-1]


def test_archival_stops_at_the_metadata_tables_latest_compaction_and_the_listing_stays_true(tmp_path):
    base = tmp_path / "t"
    written = [_write(base, 0)]
    if not (base / ".hoodie" / "metadata").exists():
        initialize_files_partition(HoodieTable.load(str(base)), storage_listing(base))
    written += [_write(base, n) for n in range(1, 8)]
    fence = _latest_compaction(base)
    table = HoodieTable.load(str(base))
    timeline = table.reload_timeline()
    # without the barrier, archival would take instants whose blocks the listing still reads
    unfenced = ar.instants_to_archive(timeline.instants, ar.ArchiveSettings.from_config(HoodieConfig(CONF)),
                                      ar.ArchiveContext(has_metadata_table=False))
    assert [i.timestamp for i in unfenced if i.timestamp > fence]

    result = ar.run_archive(table, HoodieConfig(CONF))
    archived = result["archived_instants"]
    assert archived and all(ts < fence for ts in archived)
    active = {i.timestamp for i in HoodieTable.load(str(base)).reload_timeline().instants}
    assert {ts for ts in written if ts > fence} <= active
    assert not active & set(archived)
    _listing_is_storage(base)
    # and it goes on: more writes, another compaction, archival again
    written += [_write(base, n) for n in range(8, 12)]
    assert _latest_compaction(base) > fence
    ar.run_archive(HoodieTable.load(str(base)), HoodieConfig(CONF))
    _listing_is_storage(base)


def test_without_the_barrier_archival_would_lose_files_from_the_listing(tmp_path, monkeypatch):
    """Why the barrier: a log block counts only while its data instant is on the active
    timeline, so archiving past the latest compaction drops the files those blocks listed."""
    import dataclasses

    base = tmp_path / "t"
    _write(base, 0)
    if not (base / ".hoodie" / "metadata").exists():
        initialize_files_partition(HoodieTable.load(str(base)), storage_listing(base))
    for n in range(1, 8):
        _write(base, n)
    fenced = ar.archive_context
    monkeypatch.setattr(ar, "archive_context",
                        lambda table, tl: dataclasses.replace(fenced(table, tl), has_metadata_table=False))
    archived = ar.run_archive(HoodieTable.load(str(base)), HoodieConfig(CONF))["archived_instants"]
    assert [ts for ts in archived if ts > _latest_compaction(base)]
    table = HoodieTable.load(str(base))
    listing = load_files_listing(table.storage, table.base_path, table.timeline).files
    assert listing != storage_listing(base)
    assert sum(map(len, listing.values())) < sum(map(len, storage_listing(base).values()))


def test_the_metadata_tables_own_timeline_is_archived_behind_the_data_tables(tmp_path):
    """Hudi's writer archives the metadata table too (keep.min/max one above the data
    table's, never at or after the data table's earliest commit or pending instant); its
    listing stays storage's, its archive reads back."""
    base = tmp_path / "t"
    _write(base, 0)
    if not (base / ".hoodie" / "metadata").exists():
        initialize_files_partition(HoodieTable.load(str(base)), storage_listing(base))
    mdt_path = str(base / ".hoodie" / "metadata")
    for n in range(1, 31):
        _write(base, n)
        ar.run_archive(HoodieTable.load(str(base)), HoodieConfig(CONF))
        table = HoodieTable.load(str(base))
        assert load_files_listing(table.storage, table.base_path, table.timeline).files == storage_listing(base)
    mdt = HoodieTable.load(mdt_path)
    archived = {e["commitTime"] for e in mdt.archived_timeline().entries}
    assert len(archived) > 10 and "00000000000000010" in archived
    active = mdt.reload_timeline()
    assert not archived & set(active.timestamps)
    data = HoodieTable.load(str(base)).reload_timeline()
    # every delta commit of a data instant still active stays on the metadata timeline
    assert {i.timestamp for i in data.instants} <= set(active.timestamps) | {
        i.timestamp for i in data.instants if i.action in (Action.SAVEPOINT,)}
    assert max(archived) < ar.data_table_earliest(data)
    _listing_is_storage(base)
