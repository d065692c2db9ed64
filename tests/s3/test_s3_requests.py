"""What each storage call costs on S3, counted at a proxy in front of moto: a small file is
one PutObject (not a multipart upload), a read one GetObject, a delete leaves no directory
marker behind; a file past the single-PUT threshold still arrives whole, by multipart."""

from __future__ import annotations

from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_hoodie.table.storage.s3_output import BufferedS3Output
from airflow_hoodie.table.storage.storage import Storage
from tests.s3.conftest import S3Place
from tests.s3.fault_proxy import FaultProxy, request_type


@pytest.fixture
def counted(s3: S3Place) -> Iterator[tuple[Storage, str, Callable[[Callable[[], object]], list[str]]]]:
    with FaultProxy(s3.endpoint) as proxy:
        storage, base = Storage.for_uri(s3.uri("t"), {"endpoint_override": proxy.endpoint, "region": "us-east-1"})

        def requests(fn: Callable[[], object]) -> list[str]:
            start = len(proxy.requests)
            fn()
            return [m for m, _ in proxy.requests[start:]]
        yield storage, base, requests


def test_small_calls_take_one_request_each(counted, s3: S3Place) -> None:  # noqa: ANN001
    storage, base, requests = counted
    path = Storage.join(base, "d", "a.commit")
    assert requests(lambda: storage.write_bytes(path, b"x")) == ["PUT"]
    assert requests(lambda: storage.read_bytes(path)) == ["GET"]

    def parquet() -> None:
        with storage.open_output(Storage.join(base, "d", "f.parquet")) as out:
            pq.write_table(pa.table({"x": list(range(100))}), out)
    assert requests(parquet) == ["PUT"]
    assert requests(lambda: storage.delete(path)) == ["HEAD", "DELETE"]
    keys = [o["Key"] for o in s3.client().list_objects_v2(Bucket=s3.bucket).get("Contents", [])]
    assert keys == ["t/d/f.parquet"]  # no directory marker objects


def test_a_file_past_the_threshold_goes_multipart_and_arrives_whole(counted) -> None:  # noqa: ANN001
    storage, base, requests = counted
    path = Storage.join(base, "big.log")
    data = bytes(range(256)) * 40
    writer = storage._conditional
    stream = BufferedS3Output(lambda b: writer.put(path, b), lambda: storage.fs.open_output_stream(path), threshold=1000)

    def write() -> None:
        with pa.PythonFile(stream, mode="w") as out:
            for i in range(0, len(data), 700):
                out.write(data[i:i + 700])
    methods = requests(write)
    assert "POST" in methods and len(methods) >= 3  # create, part(s), complete
    assert storage.read_bytes(path) == data


def test_file_exists_is_one_head(counted) -> None:  # noqa: ANN001
    storage, base, requests = counted
    path = Storage.join(base, "p0", ".hoodie_partition_metadata")
    assert requests(lambda: storage.file_exists(path)) == ["HEAD"]
    assert requests(lambda: storage.exists(path)) == ["HEAD", "GET"]  # pyarrow: is it a directory? (a LIST)
    storage.write_bytes(path, b"x")
    assert storage.file_exists(path) and not storage.file_exists(Storage.join(base, "p0"))


def _upsert_lists(s3: S3Place, proxy: FaultProxy, partitions: int, version: str, mdt: bool) -> int:
    """LIST requests of one upsert touching every partition of a MERGE_ON_READ table."""
    from airflow_hoodie.actions.write import write_arrow  # noqa: PLC0415

    uri = s3.uri(f"t{partitions}-{version}-{mdt}")
    opts = {"endpoint_override": proxy.endpoint, "region": "us-east-1"}
    cfg = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
           "hoodie.table.type": "MERGE_ON_READ", "hoodie.write.table.version": version,
           "hoodie.metadata.enable": str(mdt).lower(), "hoodie.time.generator.max_expected_clock_skew_ms": "0"}

    def batch(ts: int) -> pa.Table:
        n = 2 * partitions
        return pa.table({"id": [f"k{i}" for i in range(n)], "p": [f"p{i % partitions}" for i in range(n)],
                         "ts": [ts] * n, "v": [f"v{ts}"] * n})
    write_arrow(uri, batch(1), "upsert", cfg, storage_options=opts)
    write_arrow(uri, batch(2), "upsert", cfg, storage_options=opts)  # a log in every file group
    start = len(proxy.requests)
    write_arrow(uri, batch(3), "upsert", cfg, storage_options=opts)
    return sum(request_type(m, p) == "LIST" for m, p in proxy.requests[start:])


@pytest.mark.parametrize("version", ["6", "9"])
def test_with_the_metadata_table_an_upsert_lists_the_same_for_any_partition_count(s3: S3Place, version: str
                                                                                    ) -> None:
    """The writer plans on the metadata table's listing (and names new log versions from
    it), so its LIST requests do not grow with the partitions it touches; without the
    metadata table they do."""
    with FaultProxy(s3.endpoint) as proxy:
        with_mdt = [_upsert_lists(s3, proxy, n, version, True) for n in (2, 6)]
        assert with_mdt[0] == with_mdt[1], with_mdt
        if version == "6":  # the control: the same count would not show a listing per partition
            without = [_upsert_lists(s3, proxy, n, version, False) for n in (2, 6)]
            assert without[1] > without[0], without
