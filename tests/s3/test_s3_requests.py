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
from tests.s3.fault_proxy import FaultProxy


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
