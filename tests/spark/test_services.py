"""A long life of one MOR table on real Spark: tens of upserts interleaved with compaction,
clustering, clean and archive (services on SparkExecutor). After every step the snapshot
equals a Python model, hudi-rs reads the same rows, and every still-retained commit time
travels to what it returned when it was written."""

import pytest

from airflow_hoodie.actions import archive as ar
from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.service_common import deserialize_plan
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.timeline.instant import Action, State

from tests.actions.services_fixtures import Model, batch, load, snapshot, table_config, write

SERVICES = HoodieConfig({
    c.MAX_DELTA_COMMITS: "3", cl.COMMITS_RETAINED: "4", ar.MIN_COMMITS: "6", ar.MAX_COMMITS: "8",
    ar.BATCH: "2", cu.SORT_COLUMNS: "id", cu.SMALL_FILE_LIMIT: str(10 * 1024 * 1024),
})


def _rs_rows(base, **kw):
    from tests.table.normalize import hudi_rs_rows

    return sorted((r["id"], r["v"]) for r in hudi_rs_rows(base, **kw))


def _retained(base):
    """Commits time travel must still serve: on the active timeline and at/after the latest
    clean's earliestCommitToRetain."""
    t = load(base)
    inst = t.timeline.instants
    cleans = [i for i in inst if i.action == Action.CLEAN and i.state == State.COMPLETED]
    low = ""
    if cleans:
        low = deserialize_plan("HoodieCleanMetadata", t.timeline.read_details(cleans[-1]))["earliestCommitToRetain"]
    return [i.timestamp for i in inst if i.state == State.COMPLETED and i.action in Action.COMMITS and i.timestamp >= low]


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ"])
def test_long_sequence(spark, tmp_path, table_type):
    from airflow_hoodie.spark.executor import SparkExecutor

    ex = SparkExecutor(spark)
    base = str(tmp_path / "life")
    cfg = table_config(table_type, **{"hoodie.parquet.small.file.limit": "0"})
    model = Model()
    seen: dict[str, dict] = {}
    events = []
    for step in range(1, 25):
        lo = (step * 7) % 60
        b = batch(range(lo, lo + 12), step)
        ts = write(base, b, cfg)
        model.upsert(b)
        seen[ts] = model.table()
        if step % 4 == 0:
            s = c.schedule_compaction(load(base), SERVICES)
            if s.instant is not None:
                r = c.execute_pending_compactions(load(base), ex, SERVICES)
                seen[r["instant"]] = model.table()
                events.append(("compaction", r["operations"]))
        if step % 6 == 0:
            r = cu.run_clustering(load(base), SERVICES, ex)
            if r["instant"]:
                seen[r["instant"]] = model.table()
                events.append(("clustering", r["replaced_file_groups"]))
        if step % 5 == 0:
            r = cl.run_clean(load(base), SERVICES, ex)
            events.append(("clean", r.get("files_deleted")))
        if step % 7 == 0:
            r = ar.run_archive(load(base), SERVICES)
            events.append(("archive", r.get("archived", 0)))
        # checks after every step
        assert snapshot(base) == model.table(), step
        want = sorted(zip(model.table()["id"], model.table()["v"]))
        assert _rs_rows(base) == want, step
        for old in _retained(base):
            if old in seen:
                assert snapshot(base, as_of=old) == seen[old], (step, old)
    kinds = {k for k, _ in events}
    assert {"compaction", "clustering", "clean", "archive"} <= kinds, events
    for kind in ("compaction", "clustering", "clean", "archive"):
        assert any(v for k, v in events if k == kind), (kind, events)
    # archive happened and reads back
    assert len(load(base).archived_timeline().instants) > 0
    # final: compact everything, RO equals snapshot
    c.schedule_compaction(load(base), SERVICES, force=True)
    c.execute_pending_compactions(load(base), ex, SERVICES)
    assert snapshot(base, query_type="read_optimized") == model.table()
    assert _rs_rows(base, query_type="read_optimized") == sorted(zip(model.table()["id"], model.table()["v"]))
