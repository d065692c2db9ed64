"""Every job on an ``s3://`` table (moto's S3 server): bulk insert, upsert, delete, compaction
plan and execute, rollback, savepoint and restore, clustering, clean and archival, on a
table of version 6 and of version 9. After each step our reader and hudi-rs (given the same
endpoint) read exactly the rows a model of the changes expects."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from airflow_hoodie.actions import clean as cl
from airflow_hoodie.actions import clustering as cu
from airflow_hoodie.actions import compaction as c
from airflow_hoodie.actions.archive import run_archive
from airflow_hoodie.actions.executor import LocalExecutor
from airflow_hoodie.actions.restore import restore_to
from airflow_hoodie.actions.rollback import rollback_latest_or
from airflow_hoodie.actions.savepoint import create_savepoint
from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from airflow_hoodie.table.storage.storage import Storage
from tests.s3.conftest import S3Place
from tests.table.normalize import hudi_rs_rows, normalize_table

FAST = {"hoodie.time.generator.max_expected_clock_skew_ms": "0"}


def table_config(version: str, table_type: str = "MERGE_ON_READ", **extra: str) -> dict[str, str]:
    return {**FAST, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.write.table.version": version,
            "hoodie.table.name": "lake", **extra}


def rows(ids: list[int], ts: int, tag: str) -> pa.Table:
    return pa.table({"id": [f"k{i:03d}" for i in ids], "p": [f"p{i % 2}" for i in ids],
                     "ts": pa.array([ts] * len(ids), pa.int64()), "v": [f"{tag}-{i}" for i in ids]})


def model_of(table: pa.Table) -> dict[str, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist()))


def assert_reads(s3: S3Place, uri: str, expected: dict[str, str], step: str, hudi_rs: bool = True) -> None:
    """Our reader sees ``expected``; so does hudi-rs (seconds a read over S3: skipped for a
    step the next checked step covers)."""
    ours = normalize_table(read_table(uri, storage_options=s3.storage_options))
    assert {r["id"]: r["v"] for r in ours} == expected, f"our reader after {step}"
    assert len(ours) == len(expected), f"duplicate rows after {step}"
    if hudi_rs:
        assert hudi_rs_rows(uri, storage_options=s3.hudi_rs_options) == ours, f"hudi-rs after {step}"


def load(s3: S3Place, uri: str) -> HoodieTable:
    return HoodieTable.load(uri, storage_options=s3.storage_options)


@pytest.mark.parametrize("version", ["6", "9"])
def test_every_job_on_an_s3_table(s3: S3Place, version: str) -> None:
    uri = s3.uri(f"lake_v{version}")
    cfg = table_config(version)
    opts = s3.storage_options
    write_arrow(uri, rows(list(range(12)), 1, "a"), "bulk_insert", cfg, storage_options=opts)
    model = model_of(rows(list(range(12)), 1, "a"))
    assert_reads(s3, uri, model, "bulk_insert", hudi_rs=False)
    table = load(s3, uri)
    assert table.config.get("hoodie.table.version") == version

    write_arrow(uri, rows([0, 1, 12], 2, "b"), "upsert", cfg, storage_options=opts)
    model.update(model_of(rows([0, 1, 12], 2, "b")))
    assert_reads(s3, uri, model, "upsert", hudi_rs=False)
    write_arrow(uri, rows([2], 3, "d"), "delete", cfg, storage_options=opts)
    model.pop("k002")
    assert_reads(s3, uri, model, "delete")

    sched = c.schedule_compaction(load(s3, uri), HoodieConfig(cfg), force=True)
    assert sched.instant is not None, sched.reason
    done = c.execute_pending_compactions(load(s3, uri), LocalExecutor(), HoodieConfig(cfg), storage_options=opts)
    assert done["state"] == "completed", done
    assert_reads(s3, uri, model, "compaction")

    write_arrow(uri, rows([3], 4, "r"), "upsert", cfg, storage_options=opts)
    rolled = rollback_latest_or(load(s3, uri), None, HoodieConfig(cfg))
    assert rolled["instant"], rolled
    assert_reads(s3, uri, model, "rollback")

    last = load(s3, uri).timeline.completed_commits().last().timestamp
    create_savepoint(load(s3, uri), last)
    write_arrow(uri, rows([4, 5], 5, "s"), "upsert", cfg, storage_options=opts)
    assert_reads(s3, uri, {**model, **model_of(rows([4, 5], 5, "s"))}, "upsert after savepoint", hudi_rs=False)
    restore_to(load(s3, uri), last, HoodieConfig(cfg))
    assert_reads(s3, uri, model, "restore")

    res = cu.run_clustering(load(s3, uri), HoodieConfig(cfg), LocalExecutor(), storage_options=opts)
    assert res["state"] == "completed", res
    assert_reads(s3, uri, model, "clustering")

    res = cl.run_clean(load(s3, uri), HoodieConfig(
        {**cfg, cl.POLICY: cl.KEEP_LATEST_FILE_VERSIONS, cl.FILE_VERSIONS_RETAINED: "1"}), LocalExecutor(),
        storage_options=opts)
    assert res["state"] == "completed" and res["files_deleted"] > 0, res
    assert_reads(s3, uri, model, "clean")


@pytest.mark.parametrize("version", ["6", "9"])
def test_archival_on_an_s3_table(s3: S3Place, version: str) -> None:
    uri = s3.uri(f"archived_v{version}")
    cfg = table_config(version, "COPY_ON_WRITE", **{"hoodie.metadata.enable": "false"})
    model: dict[str, str] = {}
    for n in range(6):
        batch = rows([n, n + 10], n + 1, f"w{n}")
        write_arrow(uri, batch, "upsert", cfg, storage_options=s3.storage_options)
        model.update(model_of(batch))
    small = {**cfg, "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
             "hoodie.cleaner.commits.retained": "1"}
    before = len(load(s3, uri).timeline.completed_commits().instants)
    result = run_archive(load(s3, uri), HoodieConfig(small))
    assert result["instant"] is not None or result.get("archived"), result
    after = len(load(s3, uri).timeline.completed_commits().instants)
    assert after < before
    assert_reads(s3, uri, model, "archival")


def test_a_v6_mor_file_group_takes_a_new_log_version_per_write_on_s3(s3: S3Place) -> None:
    """S3 cannot append: where a local v6 table appends to the file group's log file, each
    write on S3 rolls over to the next log version (Hudi's HoodieLogFormatWriter on S3)."""
    uri = s3.uri("logs_v6")
    cfg = table_config("6", **{"hoodie.metadata.enable": "false"})
    write_arrow(uri, rows([0], 1, "a"), "insert", cfg, storage_options=s3.storage_options)
    for ts in (2, 3):
        write_arrow(uri, rows([0], ts, f"u{ts}"), "upsert", cfg, storage_options=s3.storage_options)
    storage, path = Storage.for_uri(uri, s3.storage_options)
    assert not storage.supports_append
    logs = sorted(st.name for st in storage.list_dir(Storage.join(path, "p0")) if ".log." in st.name)
    assert [name.split(".log.")[1].split("_")[0] for name in logs] == ["1", "2"], logs
    assert_reads(s3, uri, {"k000": "u3-0"}, "two log writes")


def test_create_if_absent_is_a_conditional_put(s3: S3Place) -> None:
    storage, path = Storage.for_uri(s3.uri("cond"), s3.storage_options)
    target = Storage.join(path, "x.requested")
    assert storage.has_atomic_create
    assert storage.create_if_absent(target, b"first")
    assert not storage.create_if_absent(target, b"second")
    assert storage.read_bytes(target) == b"first"
    got = storage.read_versioned(target)
    assert got is not None and got.data == b"first"
    assert storage.replace_if_version(target, b"third", '"not-the-etag"') is None
    new = storage.replace_if_version(target, b"third", got.etag)
    assert new is not None and storage.read_bytes(target) == b"third"
    assert storage.replace_if_version(target, b"fourth", got.etag) is None  # stale ETag


def test_racing_creates_on_s3_have_one_winner(s3: S3Place) -> None:
    from concurrent.futures import ThreadPoolExecutor

    storage, path = Storage.for_uri(s3.uri("race"), s3.storage_options)
    target = Storage.join(path, "instant.commit.requested")
    with ThreadPoolExecutor(8) as pool:
        wins = list(pool.map(lambda i: storage.create_if_absent(target, f"writer-{i}".encode()), range(8)))
    assert wins.count(True) == 1
    assert storage.read_bytes(target) == f"writer-{wins.index(True)}".encode()


