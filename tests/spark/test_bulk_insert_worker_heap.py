"""A bulk_insert write task freezes its Python worker's heap (airflow_hoodie.spark.worker_heap):
PySpark's full collection after every task then walks only what the task made instead of
every module-level object (44 ms of a 100k-row task's 100 ms), and a driver or an in-process
write keeps its garbage collector untouched."""

from __future__ import annotations

import gc
from typing import Iterator

import pyarrow as pa
import pytest

from airflow_hoodie.spark.worker_heap import freeze_worker_heap
from tests.spark.test_bulk_insert_jobs import _conf, _rows


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """This process's collector as it was, whatever a test froze."""
    assert gc.get_freeze_count() == 0
    try:
        yield
    finally:
        gc.unfreeze()


class _FakeTask:
    """What a write task asks of pyspark's TaskContext."""

    def partitionId(self) -> int:  # noqa: N802 - pyspark's name
        return 0

    def stageId(self) -> int:  # noqa: N802
        return 0

    def attemptNumber(self) -> int:  # noqa: N802
        return 0


def test_outside_a_spark_task_nothing_is_frozen(unfrozen):
    freeze_worker_heap()
    assert gc.get_freeze_count() == 0


def test_a_write_task_freezes_the_heap_it_starts_with(unfrozen, monkeypatch, tmp_path):
    import pyspark

    from airflow_hoodie.actions.file_group_write import WriteContext
    from airflow_hoodie.actions.write_config import key_generator_props
    from airflow_hoodie.settings.base_file import BaseFileSettings
    from airflow_hoodie.settings.log_file import LogFileSettings
    from airflow_hoodie.spark.bulk_insert import _write_task
    from airflow_hoodie.table.schema.avro_convert import arrow_schema_to_avro
    from airflow_hoodie.table.table_format import TableFormat

    monkeypatch.setattr(pyspark.TaskContext, "get", classmethod(lambda cls: _FakeTask()))
    rows = _rows(range(20), ["a", "b"])
    cfg = _conf()
    ctx = WriteContext(base_uri=str(tmp_path), storage_options={}, instant_time="20260101000000000",
                       table_type="COPY_ON_WRITE", table_name="t",
                       avro_schema=arrow_schema_to_avro(rows.schema, "t_record", "hoodie.t"),
                       file_settings=BaseFileSettings.from_config(cfg), log_settings=LogFileSettings.from_config(cfg),
                       ordering_fields=("ts",), operation="bulk_insert", table_format=TableFormat.for_version(6))
    out = list(_write_task(ctx, key_generator_props(cfg), ["ts"], 1000, iter(rows.to_batches())))
    assert len(out[0].column(0)) == 2  # a file per partition path
    assert gc.get_freeze_count() > 10_000  # the imported modules' objects at least


def _heap_probe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: how many objects this worker has frozen."""
    import gc  # noqa: PLC0415 - runs in the Python worker

    for _ in batches:
        pass
    yield pa.RecordBatch.from_pydict({"frozen": pa.array([gc.get_freeze_count()], pa.int64())})


def test_the_workers_of_a_bulk_insert_keep_their_heaps_frozen(spark, tmp_path):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    df = spark.createDataFrame(_rows(range(60), ["a", "b", "c"])).repartition(3)
    upsert_dataframe(spark, df, str(tmp_path / "t"), "bulk_insert", _conf(), "t")
    # many small tasks on the session's two slots go round the idle workers, ours among them
    frozen = spark.range(0, 8, numPartitions=8).mapInArrow(_heap_probe, "frozen long").collect()
    assert max(r[0] for r in frozen) > 10_000
