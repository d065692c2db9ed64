"""One commit path: every action completes its instant through ``actions.commit.complete``,
which serializes the metadata for the table's version and runs the pre-commit steps.

Before, instants were completed in six places (write client, planned services, clean,
rollback, restore, savepoint), each serializing its own bytes; a metadata-table update or
a version-specific serialization would have had to be added to each of them."""

from __future__ import annotations

import contextvars
import json

import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import commit
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions import restore as rs
from airflow_hoodie.actions import savepoint as sp
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.write import ArrowWriteEngine, write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieConcurrentWriterError, HoodieNotSupportedError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.metadata.commit_metadata import CommitMetadata
from airflow_hoodie.actions.metadata_table.removal import remove_metadata_table
from airflow_hoodie.table.properties import TableConfig
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.table_format import TableFormat
from airflow_hoodie.table.timeline.timeline_writer import TimelineWriter
from tests.actions.services_fixtures import batch, load, table_config, write

_INSIDE = contextvars.ContextVar("inside_table_complete", default=False)


def test_every_action_completes_through_the_table(tmp_path, monkeypatch):
    seen: list[str] = []
    bypassed: list[str] = []
    table_complete, writer_complete = commit.complete, TimelineWriter.complete

    def via_table(table, instant, metadata, *args, **kwargs):
        token = _INSIDE.set(True)
        try:
            return table_complete(table, instant, metadata, *args, **kwargs)
        finally:
            _INSIDE.reset(token)

    def via_writer(self, instant, content, completion_time=None):
        (seen if _INSIDE.get() else bypassed).append(instant.action)
        return writer_complete(self, instant, content, completion_time)

    monkeypatch.setattr(commit, "complete", via_table)
    monkeypatch.setattr(TimelineWriter, "complete", via_writer)

    base = str(tmp_path / "t")
    cfg = table_config("MERGE_ON_READ")
    for t in range(1, 5):
        write(base, batch(range(0, 6), t), cfg)
    c.schedule_compaction(load(base), HoodieConfig({}), force=True)
    c.execute_pending_compactions(load(base), LocalExecutor())
    cu.run_clustering(load(base), HoodieConfig({}), LocalExecutor())
    cl.run_clean(load(base), HoodieConfig({cl.POLICY: "KEEP_LATEST_FILE_VERSIONS", cl.FILE_VERSIONS_RETAINED: "1"}),
                 LocalExecutor())
    kept = write(base, batch(range(0, 6), 5), cfg)
    sp.create_savepoint(load(base), kept)
    last = write(base, batch(range(0, 3), 9), cfg)
    rollback_latest_or(load(base), last)
    write(base, batch(range(0, 3), 10), cfg)
    rs.restore_to(load(base), kept)

    assert bypassed == []
    assert {"deltacommit", "compaction", "replacecommit", "savepoint", "rollback", "restore", "clean"} <= set(seen)


@pytest.mark.parametrize("enabled", [False, True])
def test_a_metadata_table_changed_meanwhile_stops_the_commit(tmp_path, monkeypatch, enabled):
    """A Hudi writer may build the metadata table (we run with it disabled) or add an index
    partition we cannot keep true (with it enabled) while our task runs; completing would
    leave its listing stale. The write is rolled back instead."""
    base = tmp_path / "t"
    cfg = {**table_config("COPY_ON_WRITE"), "hoodie.metadata.enable": str(enabled).lower()}
    write_arrow(str(base), batch(range(0, 4), 1), "upsert", cfg)
    real_write = ArrowWriteEngine.write

    def write_then_java_changes_the_metadata_table(self, tasks, insert_plan, ctx):
        stats = real_write(self, tasks, insert_plan, ctx)
        table = HoodieTable.load(str(base))
        table.update_config({"hoodie.table.metadata.partitions": "files,secondary_index_x"})
        (base / ".hoodie" / "metadata" / ".hoodie").mkdir(parents=True, exist_ok=True)
        return stats

    monkeypatch.setattr(ArrowWriteEngine, "write", write_then_java_changes_the_metadata_table)
    with pytest.raises(HoodieConcurrentWriterError, match="metadata.table.*(stale|cannot keep them true)"):
        write_arrow(str(base), batch(range(2, 6), 2), "upsert", cfg)
    table = HoodieTable.load(str(base))
    assert not table.timeline.pending().instants  # rolled back
    assert len(table.timeline.completed_commits().instants) == 1
    remove_metadata_table(table)  # the stand-in has no secondary index to read
    assert sorted(read_table(str(base)).column("id").to_pylist()) == [f"k{i:04d}" for i in range(4)]


def test_the_format_serializes_for_the_tables_version():
    v6 = TableFormat.of(TableConfig({"hoodie.table.name": "t", "hoodie.table.version": "6"}))
    assert (v6.version, v6.timeline_layout) == (6, 1)
    meta = CommitMetadata(operation_type="UPSERT")
    assert json.loads(v6.serialize_completed("commit", meta))["operationType"] == "UPSERT"
    assert v6.serialize_completed("clean", {"startCleanTime": "1", "timeTakenInMillis": 0, "totalFilesDeleted": 0,
                                            "earliestCommitToRetain": "", "partitionMetadata": {}})[:4] == b"Obj\x01"
    v9 = TableFormat.of(TableConfig({"hoodie.table.name": "t", "hoodie.table.version": "9"}))
    assert (v9.version, v9.timeline_layout) == (9, 2)
    assert v9.serialize_completed("commit", meta)[:4] == b"Obj\x01"  # Hudi 1.x's Avro commit metadata
    v7 = TableFormat.of(TableConfig({"hoodie.table.name": "t", "hoodie.table.version": "7"}))
    with pytest.raises(HoodieNotSupportedError, match="version 7"):
        v7.serialize_completed("commit", meta)
    with pytest.raises(TypeError):
        v6.serialize_completed("commit", {"not": "a model"})
