"""A base or log file the timeline names as the latest version of a file group is gone:
every reader, writer and service says which file and what to do, instead of silently
serving the older slice (and a write making that permanent). The table is left as it was."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_hoodie.actions.compaction import schedule_compaction
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table import read_table
from airflow_hoodie.table.hoodie_table import HoodieTable

CONF = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.partitionpath.field": "p"}


def _table(tmp_path: Path, table_type: str) -> Path:
    base = tmp_path / "t"
    conf = {**CONF, "hoodie.table.type": table_type}
    write_arrow(str(base), pa.table({"id": [1, 2], "ts": [1, 1], "p": ["a", "a"], "v": ["old", "old"]}), "upsert", conf)
    write_arrow(str(base), pa.table({"id": [1], "ts": [2], "p": ["a"], "v": ["new"]}), "upsert", conf)
    return base


def _snapshot(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def _latest(base: Path, kind: str) -> Path:
    if kind == "base":
        return sorted((base / "a").glob("*.parquet"), key=lambda f: f.stem.rsplit("_", 1)[-1])[-1]
    (log,) = (base / "a").glob(".*.log.*")
    return log


CASES = [("COPY_ON_WRITE", "base"), ("MERGE_ON_READ", "log"), ("MERGE_ON_READ", "base")]


@pytest.mark.parametrize(("table_type", "kind"), CASES)
def test_missing_latest_file_is_named_by_reads_and_writes(tmp_path, table_type, kind):
    base = _table(tmp_path, table_type)
    assert sorted(read_table(str(base)).column("v").to_pylist()) == ["new", "old"]
    gone = _latest(base, kind)
    gone.unlink()
    before = _snapshot(base)
    before_commits = HoodieTable.load(str(base)).timeline.completed_commits()
    # the metadata table lists the file still, so a snapshot read through it names the loss when it
    # opens the file; a read-optimized read of a lost log file sees it only by listing storage
    for read in (lambda: read_table(str(base)), lambda: read_table(str(base), metadata_enable=False),
                 lambda: read_table(str(base), query_type="read_optimized", metadata_enable=False)):
        with pytest.raises(HoodieCorruptedDataError, match=f"{gone.name} is missing.*Put the file back"):
            read()
    # the next upsert must not build on the older slice and make the loss permanent: listing
    # storage, it sees the loss before it starts
    batch = pa.table({"id": [2], "ts": [3], "p": ["a"], "v": ["x"]})
    with pytest.raises(HoodieCorruptedDataError, match=f"{gone.name} is missing"):
        write_arrow(str(base), batch, "upsert", {**CONF, "hoodie.table.type": table_type,
                                                 "hoodie.metadata.enable": "false"})
    assert _snapshot(base) == before
    # planning on the metadata table, which still lists the file, it asks storage for the files
    # it builds on and stops there; its own instant is rolled back, no data file changes
    with pytest.raises(HoodieCorruptedDataError, match=f"{gone.name} is missing"):
        write_arrow(str(base), batch, "upsert", {**CONF, "hoodie.table.type": table_type})
    after = _snapshot(base)
    assert {k: v for k, v in after.items() if not k.startswith(".hoodie")} == \
        {k: v for k, v in before.items() if not k.startswith(".hoodie")}
    completed = HoodieTable.load(str(base)).reload_timeline().completed_commits()
    assert [i.timestamp for i in completed] == [i.timestamp for i in before_commits]


def test_missing_log_file_stops_compaction_planning(tmp_path):
    base = _table(tmp_path, "MERGE_ON_READ")
    gone = _latest(base, "log")
    gone.unlink()
    before = _snapshot(base)
    with pytest.raises(HoodieCorruptedDataError, match=f"{gone.name} is missing"):
        schedule_compaction(HoodieTable.load(str(base)), HoodieConfig({}), force=True)
    assert _snapshot(base) == before


def test_files_of_older_slices_may_be_cleaned(tmp_path):
    """Only the latest slice must be there: the cleaner legitimately deletes older ones."""
    base = _table(tmp_path, "COPY_ON_WRITE")
    older = sorted((base / "a").glob("*.parquet"), key=lambda f: f.stem.rsplit("_", 1)[-1])[0]
    older.unlink()
    assert sorted(read_table(str(base)).column("v").to_pylist()) == ["new", "old"]


def test_a_view_older_than_a_replace_and_clean_is_not_a_missing_file(tmp_path):
    """A replacecommit and a clean that completed after this view loaded its timeline removed
    the group's files legitimately: the check re-reads the timeline before failing."""
    base = _table(tmp_path, "COPY_ON_WRITE")
    view = HoodieTable.load(str(base)).file_system_view()
    old = list((base / "a").glob("*.parquet"))
    write_arrow(str(base), pa.table({"id": [9], "ts": [9], "p": ["a"], "v": ["ow"]}), "insert_overwrite",
                {**CONF, "hoodie.table.type": "COPY_ON_WRITE"})
    for f in old:  # what the cleaner does to a replaced file group
        f.unlink()
    assert view._first_missing_latest_file() is not None  # stale: names a replaced group's file
    view.check_latest_files_present()
    assert read_table(str(base)).column("v").to_pylist() == ["ow"]


def test_a_metadata_table_view_older_than_a_replace_and_clean_is_not_a_missing_file(tmp_path):
    """The same for a writer planning on the metadata table's listing: the files it asks
    storage for were removed by a replace and clean completed since, not lost; with no
    newer instant, the same absence is a loss."""
    base = _table(tmp_path, "COPY_ON_WRITE")
    table = HoodieTable.load(str(base))
    view = table.file_system_view(through_metadata_table=True)
    assert view.lists_through_metadata_table
    planned = view.existing_files(["a"])
    write_arrow(str(base), pa.table({"id": [9], "ts": [9], "p": ["a"], "v": ["ow"]}), "insert_overwrite",
                {**CONF, "hoodie.table.type": "COPY_ON_WRITE"})
    for f in planned:  # what the cleaner does to a replaced file group
        (base / f.base_file).unlink()
    view.check_on_storage(planned)
    stale = HoodieTable.load(str(base)).file_system_view(through_metadata_table=True)
    latest = stale.existing_files(["a"])
    (base / latest[0].base_file).unlink()
    with pytest.raises(HoodieCorruptedDataError, match=f"{latest[0].base_file.rsplit('/', 1)[-1]} is missing"):
        stale.check_on_storage(latest)
