"""S3 options as they reach us (strings from a connection's JSON or a job's arguments) are
typed for pyarrow, and retries use the SDK's standard mode; the local compare-and-swap
behind the storage lock lets exactly one of several racing replacers win."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.fs as pafs

from airflow_hoodie.table.storage.storage import Storage, s3_filesystem_options


def test_string_options_are_typed_and_retries_are_standard() -> None:
    opts = s3_filesystem_options({"region": "eu-west-1", "request_timeout": "2.5", "allow_bucket_creation": "true",
                                  "background_writes": "false", "retry_max_attempts": "5"})
    assert opts["request_timeout"] == 2.5 and opts["allow_bucket_creation"] is True
    assert opts["background_writes"] is False and "retry_max_attempts" not in opts
    assert isinstance(opts["retry_strategy"], pafs.AwsStandardS3RetryStrategy)
    pafs.S3FileSystem(**opts)  # pyarrow takes them as they are


def test_local_compare_and_swap_has_one_winner(tmp_path: Path) -> None:
    storage = Storage.local()
    path = str(tmp_path / "lock.json")
    created = storage.create_versioned(path, b"v0")
    assert created is not None and storage.create_versioned(path, b"again") is None
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: storage.replace_if_version(path, f"v{i + 1}".encode(), created.etag),
                                range(8)))
    winners = [i for i, r in enumerate(results) if r is not None]
    assert len(winners) == 1
    assert Path(path).read_bytes() == f"v{winners[0] + 1}".encode()
    current = storage.read_versioned(path)
    assert current is not None and current.etag == results[winners[0]].etag
