"""A write's mistakes fail before spark-submit (issue 20, item 4).

A missing record-key column used to surface 25 to 42 s in, after Spark had started. The
upsert operator now runs the write flow's own checks on the batch's footer schema and the
table in the worker; spark-submit is never reached for a batch the job would refuse.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import HoodieError, HoodieSchemaError
from airflow_hoodie.hooks.spark_submit import CapturingSparkSubmitHook
from airflow_hoodie.hooks.write_check import check_write
from airflow_hoodie.operators.hoodie import HoodieUpsertOperator
from tests.airflow.deferral import FakeTaskInstance

pytestmark = pytest.mark.timeout(120)

CONF = {"hoodie.datasource.write.recordkey.field": "uuid", "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts"}


@pytest.fixture
def no_spark(monkeypatch):
    """spark-submit must not start: a refused batch never gets that far."""
    def submit(self, *args, **kwargs):
        raise AssertionError("spark-submit was started for a batch the checks should have refused")

    monkeypatch.setattr(CapturingSparkSubmitHook, "submit", submit)


def _upsert(tmp_path, source, **conf) -> HoodieUpsertOperator:
    return HoodieUpsertOperator(task_id="upsert", base_path=str(tmp_path / "t"), table_name="t", source=str(source),
                                hoodie_conf={**CONF, **conf})


def _context():
    return {"ti": FakeTaskInstance(dag_id="d", run_id="r", task_id="upsert", map_index=-1, pushed={})}


def test_a_missing_record_key_column_fails_in_seconds_without_spark(airflow_db, tmp_path, no_spark):
    source = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"id": ["a"], "ts": [1], "city": ["sf"]}), source)
    started = time.monotonic()
    with pytest.raises(HoodieError, match="Record key field 'uuid' is not a column of the input") as info:
        _upsert(tmp_path, source).execute(_context())
    assert time.monotonic() - started < 10
    assert "hoodie.datasource.write.recordkey.field" in str(info.value)
    assert not (tmp_path / "t").exists()  # nothing written, no table created


def test_a_missing_partition_column_fails_without_spark(airflow_db, tmp_path, no_spark):
    source = tmp_path / "batch"  # a folder of parquet files, as Spark writes them
    source.mkdir()
    pq.write_table(pa.table({"uuid": ["a"], "ts": [1], "town": ["sf"]}), source / "part-0.parquet")
    with pytest.raises(HoodieError, match="Partition path field 'city' is not a column"):
        _upsert(tmp_path, source).execute(_context())


def test_naive_timestamps_into_a_table_of_utc_instants_fail_without_spark(airflow_db, tmp_path, no_spark):
    """The time-zone check needs the table's schema: read from the table, before Spark."""
    when = pa.array([1_700_000_000_000_000], pa.timestamp("us", "UTC"))
    write_arrow(str(tmp_path / "t"), pa.table({"uuid": ["a"], "ts": [1], "city": ["sf"], "at": when}), "upsert",
                {**CONF, "hoodie.table.name": "t"})
    source = tmp_path / "naive.parquet"
    pq.write_table(pa.table({"uuid": ["b"], "ts": [2], "city": ["sf"],
                             "at": pa.array([1_700_000_000_000], pa.timestamp("ms"))}), source)
    with pytest.raises(HoodieSchemaError, match="timestamp without time zone"):
        _upsert(tmp_path, source).execute(_context())


def test_a_good_batch_passes_and_formats_without_footers_are_left_to_the_job(tmp_path):
    source = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"uuid": pa.array(["a"], pa.large_string()), "ts": [1], "city": ["sf"]}), source)
    base = str(tmp_path / "t")
    assert check_write(base, None, HoodieConfig(CONF), str(source), "parquet", "upsert", "t") is True
    assert not (tmp_path / "t").exists()  # a check writes nothing
    (tmp_path / "batch.json").write_text('{"id": "a"}\n')
    assert check_write(base, None, HoodieConfig(CONF), str(tmp_path / "batch.json"), "json", "upsert", "t") is False


def test_a_default_index_write_into_a_bucket_table_fails_before_spark(tmp_path):
    """The bucket-layout refusal of the write flow (issue 39) runs in the hook's check too."""
    from airflow_hoodie.errors import HoodieNotSupportedError

    base = str(tmp_path / "t")
    bucket = {**CONF, "hoodie.table.name": "t", "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2"}
    write_arrow(base, pa.table({"uuid": ["a", "b"], "ts": [1, 1], "city": ["sf", "la"]}), "upsert", bucket)
    source = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"uuid": ["c"], "ts": [2], "city": ["sf"]}), source)
    assert check_write(base, None, HoodieConfig(bucket), str(source), "parquet", "upsert", "t") is True
    with pytest.raises(HoodieNotSupportedError, match="hoodie.index.type=BUCKET"):
        check_write(base, None, HoodieConfig(CONF), str(source), "parquet", "upsert", "t")
