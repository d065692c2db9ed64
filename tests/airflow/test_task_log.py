"""The task log of the example ingest is short and says what happened.

Everything the upsert task logs (the operator, the hook, every line spark-submit and the
job print) is captured while the example DAG's upsert runs on an existing table (day 2 of
the example: half updates); it must stay under 80 lines and hold the job's progress lines,
the summary table and the Spark UI address.
"""

from __future__ import annotations

import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write import write_arrow
from tests.airflow.conftest import DAGS_FOLDER
from tests.airflow.deferral import FakeTaskInstance

pytestmark = pytest.mark.timeout(600)




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
