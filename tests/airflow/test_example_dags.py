"""Every example DAG imports cleanly and is wired the way the README describes."""

from __future__ import annotations

from tests.airflow.conftest import DAGS_FOLDER


def _bag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(str(DAGS_FOLDER))


def test_example_dags_import_without_errors(airflow_db):
    bag = _bag()
    assert bag.import_errors == {}
    assert {"hoodie_example_ingest", "hoodie_example_maintenance", "hoodie_example_downstream"} <= set(bag.dag_ids)


def test_examples_are_wired_together(airflow_db):
    bag = _bag()
    ingest = bag.get_dag("hoodie_example_ingest")
    maintenance = bag.get_dag("hoodie_example_maintenance")
    downstream = bag.get_dag("hoodie_example_downstream")
    table_asset = ingest.get_task("upsert").outlets[0]
    assert table_asset.uri.startswith("hudi+file://localhost/")
    # the downstream DAG is scheduled on exactly the asset the upsert emits
    assert downstream.timetable.asset_condition.objects[0].uri == table_asset.uri
    chain = ["maintenance_due", "compaction_plan", "compaction_execute", "no_pending_compaction",
             "clustering", "clean", "archive"]
    for upstream, downstream_id in zip(chain, chain[1:]):
        assert downstream_id in maintenance.get_task(upstream).downstream_task_ids
    assert maintenance.get_task("maintenance_due").deferrable is True
    assert maintenance.get_task("no_pending_compaction").deferrable is True
    assert all(maintenance.get_task(t).retries >= 1 for t in chain[1:] if "pending" not in t)
