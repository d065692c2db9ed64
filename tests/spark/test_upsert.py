"""The Spark write path and the upsert job, against a Python model, our reader and hudi-rs."""

from __future__ import annotations

import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES, DRIVER_FILES_MAX_BYTES
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.actions.test_write import conf
from tests.actions.write_model import TableModel, actual, random_batch, to_arrow
from tests.table.normalize import hudi_rs_rows, normalize_table

REPO = pathlib.Path(__file__).resolve().parents[2]
JOB = REPO / "spark_jobs" / "upsert.py"
PY = sys.executable


def df_of(spark, batch):
    return spark.createDataFrame(to_arrow(batch))


# every index x table type x partitioning runs without Spark in tests/actions/test_write.py;
# here each index type and table type goes through the DataFrame path at least once, and
# the driver-batch path (small batches as Arrow on the driver) with its file work on Spark
# tasks ("tasks") and in the driver ("driver")
@pytest.mark.parametrize("table_type,partitioned,index,driver_batch,version", [
    ("COPY_ON_WRITE", True, "BLOOM", None, 6),
    ("MERGE_ON_READ", False, "SIMPLE", None, 6),
    ("MERGE_ON_READ", True, "GLOBAL_BLOOM", None, 6),
    ("COPY_ON_WRITE", False, "GLOBAL_SIMPLE", None, 6),
    ("MERGE_ON_READ", True, "IN_MEMORY", None, 6),
    ("COPY_ON_WRITE", True, "SIMPLE", "tasks", 6),
    ("MERGE_ON_READ", True, "GLOBAL_BLOOM", "tasks", 6),
    ("MERGE_ON_READ", True, "BLOOM", "driver", 6),
    # Hudi 1.1 tables (version 9) through each engine path
    ("COPY_ON_WRITE", True, "BLOOM", None, 9),
    ("MERGE_ON_READ", True, "GLOBAL_BLOOM", None, 9),
    ("MERGE_ON_READ", True, "SIMPLE", "tasks", 9),
    ("COPY_ON_WRITE", False, "BLOOM", "driver", 9),
])
def test_spark_upserts_match_model(spark, tmp_path, table_type, partitioned, index, driver_batch, version):
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    rng = random.Random(7)
    base = str(tmp_path / "t")
    glob = index.startswith("GLOBAL") or index == "IN_MEMORY"
    model = TableModel(partitioned, glob)
    parts = ["a", "b"] if partitioned else ["x"]
    sticky = None if glob else {}
    for step, op in enumerate(["bulk_insert", "upsert", "delete", "upsert"]):
        batch = random_batch(rng, 50, 30, step * 10, parts, sticky)
        if op == "bulk_insert":
            batch = list({r["id"]: r for r in batch}.values()) if glob or not partitioned else \
                list({(r["p"], r["id"]): r for r in batch}.values())
        cfg = HoodieConfig(conf(table_type, partitioned, index, **version_conf(version))).with_values(
            engine_conf(driver_batch))
        upsert_dataframe(spark, df_of(spark, batch), base, op, cfg, "t")
        model.apply(op, batch)
        assert actual(read_table(base)) == model.expected(), f"step {step} ({op})"
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)
    assert HoodieTable.load(base).config.table_version == version


def version_conf(version: int) -> dict[str, str]:
    """Create the table at ``version`` (one writer: no clock-skew wait)."""
    if version == 6:
        return {}
    return {"hoodie.write.table.version": str(version), "hoodie.time.generator.max_expected_clock_skew_ms": "0"}


def engine_conf(driver_batch: str | None) -> dict[str, str]:
    """None: the DataFrame path; "tasks": batch on the driver, file work on Spark tasks;
    "driver": batch and file work on the driver (the defaults, for small tables)."""
    if driver_batch is None:
        return {DRIVER_BATCH_MAX_BYTES: "0"}
    return {DRIVER_BATCH_MAX_BYTES: str(32 << 20), DRIVER_FILES_MAX_BYTES: "0" if driver_batch == "tasks" else str(128 << 20)}


@pytest.mark.parametrize("driver_batch,fewest_jobs,most_jobs", [("driver", 1, 1), ("tasks", 3, 3), (None, 4, 14)])
def test_a_small_upsert_runs_few_spark_jobs(spark, tmp_path, driver_batch, fewest_jobs, most_jobs):
    """A batch Spark sizes under hoodie.airflow.write.driver.batch.max.bytes is indexed on
    the driver: reading it is the one Spark job while the files are small, and the index's
    file reads and the file-group writes add one each when they go to Spark tasks. The
    DataFrame path keys, tags and routes in at most five jobs (test_dataframe_upsert_jobs.py)."""
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    cfg = HoodieConfig(conf("COPY_ON_WRITE", True, "SIMPLE")).with_values(engine_conf(driver_batch))
    rows = [{"id": i, "ts": 1, "p": "ab"[i % 2], "v": f"v{i}"} for i in range(40)]
    upsert_dataframe(spark, df_of(spark, rows), base, "insert", cfg, "t")
    group = f"few-jobs-{driver_batch}"
    spark.sparkContext.setJobGroup(group, "one upsert")
    try:
        r = upsert_dataframe(spark, df_of(spark, [dict(row, ts=2, v="new") for row in rows[:10]]
                                         + [{"id": 100, "ts": 2, "p": "a", "v": "n"}]), base, "upsert", cfg)
    finally:
        spark.sparkContext.setJobGroup("tests", "other")
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
    assert (r.updates, r.inserts) == (10, 1)
    assert fewest_jobs <= jobs <= most_jobs, jobs
    got = {row["id"]: row["v"] for row in read_table(base, columns=["id", "v"]).to_pylist()}
    assert got == {**{i: f"v{i}" for i in range(40)}, **{i: "new" for i in range(10)}, 100: "n"}


@pytest.mark.parametrize("files_max_bytes,jobs", [(str(128 << 20), 1), ("100000", 2)])
def test_an_insert_into_small_files_counts_their_bytes(spark, tmp_path, files_max_bytes, jobs):
    """Inserts packed into existing small files (COW) rewrite those files: their bytes decide
    whether the driver or Spark tasks write them, though the insert was never indexed. A
    base file here is about 1 MB (its bloom filter), over a 100 kB bound."""
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    cfg = HoodieConfig({"hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.precombine.field": "ts",
                        "hoodie.datasource.write.partitionpath.field": "p", DRIVER_FILES_MAX_BYTES: files_max_bytes})
    upsert_dataframe(spark, df_of(spark, [{"id": i, "ts": 1, "p": "a", "v": "x"} for i in range(20)]), base, "insert", cfg, "t")
    group = f"small-files-{files_max_bytes}"
    spark.sparkContext.setJobGroup(group, "one insert")
    try:
        r = upsert_dataframe(spark, df_of(spark, [{"id": i, "ts": 1, "p": "a", "v": "y"} for i in range(20, 25)]),
                             base, "insert", cfg)
    finally:
        spark.sparkContext.setJobGroup("tests", "other")
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup(group)) == jobs
    assert r.inserts == 5 and r.files_written == 1
    slices = [fg.latest_slice() for fg in HoodieTable.load(base).file_system_view().file_groups()]
    assert len(slices) == 1  # packed into the one small file group
    assert sorted(read_table(base, columns=["id"]).column("id").to_pylist()) == list(range(25))


@pytest.mark.parametrize("driver_batch", [None, "driver"])
def test_a_batch_with_timestamp_and_date_columns_is_written_by_both_engines(spark, tmp_path, driver_batch):
    import datetime as dt

    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    when = [dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc) + dt.timedelta(hours=i) for i in range(4)]
    data = pa.table({"id": [1, 2, 3, 4], "ts": [1, 1, 1, 1], "p": ["a", "a", "b", "b"],
                     "at": pa.array(when, pa.timestamp("us", tz="UTC")),
                     "day": pa.array([w.date() for w in when], pa.date32())})
    cfg = HoodieConfig(conf("COPY_ON_WRITE", True, "SIMPLE")).with_values(engine_conf(driver_batch))
    upsert_dataframe(spark, spark.createDataFrame(data), base, "upsert", cfg, "t")
    got = read_table(base, columns=["id", "at", "day"]).sort_by("id")
    assert got.column("id").to_pylist() == [1, 2, 3, 4]
    assert [v.replace(tzinfo=dt.timezone.utc) if v.tzinfo is None else v for v in got.column("at").to_pylist()] == when
    assert got.column("day").to_pylist() == [w.date() for w in when]


def test_spark_overwrite_operations_and_read(spark, tmp_path):
    from airflow_hoodie.spark import read
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe

    base = str(tmp_path / "t")
    model = TableModel(True)
    c = HoodieConfig(conf("MERGE_ON_READ"))
    b1 = [{"id": i, "ts": 1, "p": "abc"[i % 3], "v": f"a{i}"} for i in range(30)]
    upsert_dataframe(spark, df_of(spark, b1), base, "insert", c, "t"); model.apply("insert", b1)
    b2 = [{"id": i, "ts": 2, "p": "a", "v": f"o{i}"} for i in range(100, 104)]
    r = upsert_dataframe(spark, df_of(spark, b2), base, "insert_overwrite", c); model.apply("insert_overwrite", b2)
    assert r.action == "replacecommit"
    assert actual(read_table(base)) == model.expected()
    df = read(spark, base, query_type="snapshot")
    assert sorted(tuple(x) for x in df.select("id", "p", "ts", "v").collect()) == model.expected()
    b3 = [{"id": 7, "ts": 3, "p": "c", "v": "t"}]
    upsert_dataframe(spark, df_of(spark, b3), base, "insert_overwrite_table", c); model.apply("insert_overwrite_table", b3)
    assert actual(read_table(base)) == model.expected()
    assert normalize_table(read_table(base)) == hudi_rs_rows(base)


def run_job(*args, env=None, timeout=300):
    return subprocess.run([PY, str(JOB), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=str(REPO))


def job_args(base, source, op="upsert", fmt="parquet", *extra):
    return ["--base-path", base, "--table-name", "t", "--source", source, "--source-format", fmt, "--operation", op,
            "--hoodie-conf", "hoodie.datasource.write.recordkey.field=id",
            "--hoodie-conf", "hoodie.datasource.write.precombine.field=ts",
            "--hoodie-conf", "hoodie.datasource.write.partitionpath.field=p",
            "--spark-master", "local[2]", *extra]


def hoodie_listing(base):
    return sorted(p.name for p in (pathlib.Path(base) / ".hoodie").iterdir())


def test_job_bad_input_fails_before_spark(tmp_path):
    src = tmp_path / "src.parquet"
    pq.write_table(to_arrow([{"id": 1, "ts": 1, "p": "a", "v": "x"}]), src)
    base = str(tmp_path / "t")
    r = run_job(*job_args(base, str(tmp_path / "nope.parquet")))
    assert r.returncode != 0 and "does not exist" in r.stderr
    r = run_job(*job_args(base, str(src), "upsert", "parquet", "--hoodie-conf", "hoodie.table.type=BOGUS"))
    assert r.returncode != 0 and "not a table type" in r.stderr
    r = run_job(*job_args(base, str(src), "merge"))
    assert r.returncode != 0 and "--operation" in r.stderr
    assert not pathlib.Path(base).exists()


def test_bad_batches_leave_table_unchanged(spark, tmp_path):
    """Same code the job runs after its session starts (the job adds only exit code + message)."""
    from airflow_hoodie.errors import HoodieError, HoodieKeyError
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe
    from airflow_hoodie.spark.source import read_source

    base = str(tmp_path / "t")
    c = HoodieConfig(conf())
    upsert_dataframe(spark, df_of(spark, [{"id": 1, "ts": 1, "p": "a", "v": "x"}]), base, "upsert", c, "t")
    before = hoodie_listing(base)
    null_key = tmp_path / "null.parquet"
    pq.write_table(pa.table({"id": pa.array([None, 2], pa.int64()), "ts": [1, 1], "p": ["a", "a"], "v": ["x", "y"]}), null_key)
    no_key = tmp_path / "nokey.json"
    no_key.write_text('{"ts": 1, "p": "a", "v": "x"}\n')
    no_pre = tmp_path / "nopre.csv"
    no_pre.write_text("id,p,v\n5,a,x\n")
    with pytest.raises(HoodieKeyError):
        upsert_dataframe(spark, read_source(spark, str(null_key), "parquet"), base, "upsert", c)
    with pytest.raises(HoodieError, match="Record key field 'id'"):
        upsert_dataframe(spark, read_source(spark, str(no_key), "json"), base, "upsert", c)
    with pytest.raises(HoodieError, match="Precombine field 'ts'"):
        upsert_dataframe(spark, read_source(spark, str(no_pre), "csv"), base, "upsert", c)
    assert hoodie_listing(base) == before
    assert actual(read_table(base)) == [(1, "a", 1, "x")]


def test_job_sigkill_mid_write_then_rerun(tmp_path):
    rows = [{"id": i, "ts": 1, "p": "abcd"[i % 4], "v": f"v{i}"} for i in range(200)]
    src = tmp_path / "src.parquet"
    pq.write_table(to_arrow(rows), src)
    base = str(tmp_path / "t")
    proc = subprocess.Popen([PY, str(JOB), *job_args(base, str(src))], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "AIRFLOW_HOODIE_TEST_PAUSE_AFTER_FILE": "60"}, cwd=str(REPO),
                            start_new_session=True)
    deadline = time.time() + 240
    try:
        while time.time() < deadline:
            if list(pathlib.Path(base).rglob("*.parquet")):
                break
            time.sleep(0.5)
        else:
            pytest.fail("the job never wrote a file")
        time.sleep(1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    table = HoodieTable.load(base)
    assert table.timeline.pending().instants and not table.timeline.completed().instants
    assert len(read_table(base)) == 0
    r = run_job(*job_args(base, str(src)))
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(out["rolled_back"]) == 1
    got = read_table(base)
    assert sorted(got.column("id").to_pylist()) == list(range(200))  # every record once
    assert actual(got) == sorted((r["id"], r["p"], r["ts"], r["v"]) for r in rows)
    assert normalize_table(got) == hudi_rs_rows(base)
    # no file of the killed instant survived
    killed = out["rolled_back"][0]
    assert not [p for p in pathlib.Path(base).rglob("*.parquet") if killed in p.name]


@pytest.mark.parametrize("driver_batch", [None, "tasks", "driver"])
def test_spark_upsert_into_a_hudi_1_0_table_without_meta_fields(spark, conformance_next, tmp_path, driver_batch):
    """The corpus's version 8 table keeps no meta fields (hoodie.populate.meta.fields=false):
    every engine path derives the stored keys from its key generator, updates in place, and
    writes the meta columns empty; hudi-rs reads the same."""
    from airflow_hoodie.spark.dataframe_write import upsert_dataframe
    from tests.table.table_files import copy_conformance_table

    base = str(copy_conformance_table(conformance_next, "cow/v8_simplekeygen_hivestyle_no_metafields", tmp_path))
    stored = read_table(base)
    rows = stored.slice(0, 2)
    rows = rows.set_column(rows.schema.get_field_index("name"), "name", pa.array(["X", "Y"]))
    rows = rows.set_column(rows.schema.get_field_index("longField"), "longField", pa.array([2 ** 50] * 2, pa.int64()))
    cfg = HoodieConfig({"hoodie.datasource.write.recordkey.field": "id", **version_conf(8)}).with_values(
        engine_conf(driver_batch))
    upsert_dataframe(spark, spark.createDataFrame(rows), base, "upsert", cfg, "t")
    after = read_table(base)
    assert after.num_rows == stored.num_rows
    assert sorted(after.column("name").to_pylist()) == sorted(["X", "Y"] + stored.column("name").to_pylist()[2:])
    assert normalize_table(after) == hudi_rs_rows(base)
    written = [p for p in pathlib.Path(base).rglob("*.parquet") if HoodieTable.load(base).timeline.last().timestamp
               in p.name]
    assert written and all(pq.read_table(p, columns=["_hoodie_record_key"]).column(0).null_count
                           == pq.read_metadata(p).num_rows for p in written)
