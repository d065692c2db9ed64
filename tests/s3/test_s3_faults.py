"""Faults on S3 mid-write, through a fault-injecting proxy in front of moto (fault_proxy.py):
a network error, a timeout or a 503 SlowDown. One of them is absorbed by the SDK's
standard retries; more than the retries allow end the write in a clean failure (an error,
nothing of the write visible), and the next run completes the work."""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pytest

from airflow_hoodie.actions.write import write_arrow
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.read import read_table
from tests.s3.conftest import S3Place
from tests.s3.fault_proxy import Fault, FaultProxy
from tests.table.normalize import hudi_rs_rows, normalize_table

FAST = {"hoodie.time.generator.max_expected_clock_skew_ms": "0"}


@pytest.fixture
def proxy(s3: S3Place) -> Iterator[FaultProxy]:
    with FaultProxy(s3.endpoint) as p:
        yield p


def _through(s3: S3Place, proxy: FaultProxy) -> dict[str, str]:
    # short timeouts so a held request fails fast; 3 attempts in the standard retry mode
    return {"endpoint_override": proxy.endpoint, "region": "us-east-1", "request_timeout": "1",
            "connect_timeout": "1", "retry_max_attempts": "3"}


def _cfg(version: str) -> dict[str, str]:
    return {**FAST, "hoodie.datasource.write.recordkey.field": "id", "hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.write.table.version": version,
            "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.table.name": "faults"}


def _rows(ids: list[int], ts: int, tag: str) -> pa.Table:
    return pa.table({"id": [f"k{i}" for i in ids], "p": ["p0"] * len(ids), "ts": [ts] * len(ids),
                     "v": [f"{tag}{i}" for i in ids]})


def _check(s3: S3Place, uri: str, expected: dict[str, str]) -> None:
    ours = normalize_table(read_table(uri, storage_options=s3.storage_options))
    assert {r["id"]: r["v"] for r in ours} == expected and len(ours) == len(expected)
    assert hudi_rs_rows(uri, storage_options=s3.hudi_rs_options) == ours


@pytest.mark.parametrize("kind", ["reset", "timeout", "slowdown"])
def test_one_fault_is_retried_by_the_sdk(s3: S3Place, proxy: FaultProxy, kind: str) -> None:
    uri = s3.uri("retried")
    opts = _through(s3, proxy)
    write_arrow(uri, _rows([1, 2], 1, "a"), "upsert", _cfg("9"), storage_options=opts)
    fault = proxy.inject(Fault(kind, "PUT", ".log.", times=1, hold_s=1.5))
    write_arrow(uri, _rows([2, 3], 2, "b"), "upsert", _cfg("9"), storage_options=opts)
    assert fault.fired == 1
    _check(s3, uri, {"k1": "a1", "k2": "b2", "k3": "b3"})


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind,version", [("reset", "6"), ("timeout", "9"), ("slowdown", "9")])
def test_a_fault_outlasting_the_retries_fails_cleanly_and_the_next_run_completes(
        s3: S3Place, proxy: FaultProxy, kind: str, version: str) -> None:
    uri = s3.uri("failed")
    opts = _through(s3, proxy)
    write_arrow(uri, _rows([1, 2], 1, "a"), "upsert", _cfg(version), storage_options=opts)
    # the new data file of the next write fails every attempt (bounded: 6 times)
    fault = proxy.inject(Fault(kind, "PUT", ".log." if kind != "reset" else "/p0/", times=6, hold_s=1.5))
    with pytest.raises(Exception) as failure:
        write_arrow(uri, _rows([2, 3], 2, "b"), "upsert", _cfg(version), storage_options=opts)
    assert fault.fired >= 3, fault  # the SDK tried (standard mode: 3 attempts) before giving up
    assert "Hoodie" in type(failure.value).__name__, repr(failure.value)
    proxy.clear()
    table = HoodieTable.load(uri, storage_options=s3.storage_options)
    assert len(table.timeline.completed_commits().instants) == 1  # nothing of it completed
    _check(s3, uri, {"k1": "a1", "k2": "a2"})
    # the next run: the failed write is rolled back (single writer: eagerly) and the work lands
    write_arrow(uri, _rows([2, 3], 3, "c"), "upsert", _cfg(version), storage_options=opts)
    _check(s3, uri, {"k1": "a1", "k2": "c2", "k3": "c3"})
    table = HoodieTable.load(uri, storage_options=s3.storage_options)
    assert table.timeline.pending().instants == []  # the failed write was rolled back, not left behind
    assert len(table.timeline.rollbacks().instants) == 1
