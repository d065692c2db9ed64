"""The task log of the example ingest is short and says what happened.

Everything the upsert task logs (the operator, the hook, every line spark-submit and the
job print) is captured while the example DAG's upsert runs on an existing table (day 2 of
the example: half updates); it must stay under 80 lines and hold the job's progress lines,
the summary table and the Spark UI address.

Under ``dag.test()`` (issue 20, item 3): a successful upsert logs nothing at error level,
and a failed one shows its cause once, in its first error entry.
"""

from __future__ import annotations

import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write import write_arrow
from tests.airflow.conftest import DAGS_FOLDER, load_dag_file
from tests.airflow.deferral import FakeTaskInstance

pytestmark = pytest.mark.timeout(600)

#: structlog's console renderer marks the level of each entry: ``[error    ]``
ERROR_MARK = "[error"


def _entries(text: str) -> list[str]:
    """The log's entries: a timestamped line and the traceback lines that follow it."""
    entries: list[str] = []
    for line in text.splitlines():
        if line[:4].isdigit() and "T" in line[:11] or not entries:
            entries.append(line)
        else:
            entries[-1] += "\n" + line
    return entries


def _upsert_dag(name: str, base, source: str, **op_kwargs):
    """A DAG of one upsert into a table no DAG declares an Asset for."""
    return load_dag_file(name, f"""
        import pendulum
        from airflow.sdk import DAG
        from airflow_hoodie.operators.hoodie import HoodieUpsertOperator
        with DAG("{name}", schedule=None, start_date=pendulum.datetime(2024, 1, 1)) as dag:
            HoodieUpsertOperator(task_id="upsert", base_path="{base}", table_name="t", source="{source}",
                                 hoodie_conf={{"hoodie.datasource.write.recordkey.field": "uuid",
                                              "hoodie.datasource.write.partitionpath.field": "city",
                                              "hoodie.datasource.write.precombine.field": "ts"}},
                                 **{op_kwargs!r})
    """)


def test_a_successful_upsert_under_dag_test_logs_no_error(airflow_db, tmp_path, monkeypatch, capfd):
    """No connection (the local fallback), no DAG declaring the table's Asset, no Spark UI
    (so no URL for the extra link): each used to log an error or a misleading line."""
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    dag = _upsert_dag("log_ok", tmp_path / "t", _batch(tmp_path / "b.parquet", 0),
                      spark_conf={"spark.ui.enabled": "false"})
    capfd.readouterr()
    dr = dag.test()
    out, err = capfd.readouterr()
    text = out + err
    assert {ti.task_id: ti.state for ti in dr.get_task_instances()} == {"upsert": "success"}, text
    assert "hoodie: committed commit" in text, text
    errors = [e for e in _entries(text) if ERROR_MARK in e.splitlines()[0]]
    assert errors == [], "\n".join(errors)
    assert "defaulting to yarn" not in text  # we run on local[*]: the provider's guess is wrong
    assert text.count("Spark connection 'spark_default' does not exist") == 1


def test_a_failed_upsert_shows_its_cause_once_in_its_first_error(airflow_db, tmp_path, monkeypatch, capfd):
    """The job fails inside Spark (a null ordering value only the data shows): its error
    used to appear three times, as the job's stderr line, inside an AirflowException that
    carried the whole spark-submit command, and as HoodieJobError."""
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    source = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"uuid": ["a", "b"], "ts": pa.array([1, None], pa.int64()), "city": ["sf", "sf"]}),
                   source)
    dag = _upsert_dag("log_fail", tmp_path / "t", str(source))
    capfd.readouterr()
    dr = dag.test()
    out, err = capfd.readouterr()
    text = out + err
    assert {ti.task_id: ti.state for ti in dr.get_task_instances()} == {"upsert": "failed"}, text
    cause = "(hoodie.datasource.write.precombine.field) is null in 1 of 2 records"
    errors = [e for e in _entries(text) if ERROR_MARK in e.splitlines()[0]]
    assert errors, text
    assert cause in errors[0], text
    assert text.count(cause) == 1, text
    assert "HoodieJobError" in errors[0]
    assert "Cannot execute: spark-submit" not in text  # the provider's exception and its command


def _batch(path, first: int) -> str:
    keys = range(first, first + 200)
    pq.write_table(pa.table({
        "uuid": [f"trip-{k:06d}" for k in keys], "rider": [f"r{k % 7}" for k in keys],
        "driver": [f"d{k % 5}" for k in keys], "fare": [float(k) for k in keys],
        "ts": list(keys), "city": [("sf", "sp", "ch")[k % 3] for k in keys]}), path)
    return str(path)


def test_example_ingest_task_log_is_short_and_says_what_happened(airflow_db, tmp_path, monkeypatch, capfd):
    monkeypatch.delenv("AIRFLOW_HOODIE_JOBS_DIR", raising=False)
    sys.path.insert(0, str(DAGS_FOLDER))
    from hoodie_example_common import TABLE_NAME, WRITE_CONF

    from airflow_hoodie.operators.hoodie import HoodieUpsertOperator
    base = str(tmp_path / "trips")
    # day 1 written in-process (no Spark): the logged run is day 2, half updates of day 1
    write_arrow(base, pq.read_table(_batch(tmp_path / "b1.parquet", 0)), "upsert",
                {**WRITE_CONF, "hoodie.table.name": TABLE_NAME})
    capfd.readouterr()
    op = HoodieUpsertOperator(task_id="upsert", base_path=base, table_name=TABLE_NAME, hoodie_conf=WRITE_CONF,
                              source=_batch(tmp_path / "b2.parquet", 100), operation="upsert")
    ti = FakeTaskInstance(dag_id="hoodie_example_ingest", run_id="r2", task_id="upsert", map_index=-1, pushed={})
    op.execute({"ti": ti})
    # Airflow's task logger writes every record (the hook relays each spark-submit output line)
    out, err = capfd.readouterr()
    log = [line for line in (out + err).splitlines() if line.strip()]
    text = "\n".join(log)
    print(f"task log: {len(log)} lines", file=sys.__stderr__)
    assert len(log) < 80, f"{len(log)} lines:\n{text}"
    assert "hoodie: indexing 200 records against 3 files: 100 to existing file groups, 100 new" in text, text
    assert "hoodie: writing" in text and "file groups" in text, text
    assert "hoodie: committed deltacommit" in text, text
    assert "| instant" in text and "| inserts" in text and "| updates" in text, text  # the summary table
    assert "Spark UI: http" in text, text
    assert ti.pushed.get("spark_ui_url", "").startswith("http")

    # OpenLineage: the batch in, the table out with schema, statistics and the instant as version
    lineage = op.get_openlineage_facets_on_complete(None)
    assert [(d.namespace, d.name) for d in lineage.inputs] == [("file", str(tmp_path / "b2.parquet"))]
    (out,) = lineage.outputs
    assert (out.namespace, out.name) == ("file", base)
    assert out.facets["version"].datasetVersion == ti.pushed["instant"]
    columns = {f.name: f.type for f in out.facets["schema"].fields}
    assert columns["uuid"] == "string" and columns["fare"] == "double" and "_hoodie_record_key" not in columns
    stats = out.outputFacets["outputStatistics"]
    assert stats.rowCount == 200 and stats.size > 0 and stats.fileCount >= 3
