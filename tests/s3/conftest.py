"""An S3 endpoint for the tests: moto's server on 127.0.0.1 (see moto_server.py), one
bucket per test. Credentials reach every client the standard AWS way (environment); the
storage options carry only where the endpoint is, as a user's connection would."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Iterator

import pytest

from tests.s3.moto_server import moto_server


@dataclass(frozen=True)
class S3Place:
    """A fresh bucket on the test endpoint and the options each reader needs to reach it."""

    endpoint: str
    bucket: str

    def uri(self, name: str) -> str:
        return f"s3://{self.bucket}/{name}"

    @property
    def storage_options(self) -> dict[str, str]:
        """pyarrow's (ours): strings, as they come from a connection's JSON extra."""
        return {"endpoint_override": self.endpoint, "region": "us-east-1"}

    @property
    def hudi_rs_options(self) -> dict[str, str]:
        """hudi-rs's (object_store's) names for the same endpoint."""
        return {"aws_endpoint_url": self.endpoint, "aws_allow_http": "true", "aws_region": "us-east-1"}

    def client(self):  # noqa: ANN201 - boto3 client
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1")


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with moto_server(tmp_path_factory.mktemp("moto_s3")) as endpoint:
        yield endpoint


@pytest.fixture
def s3(s3_endpoint: str) -> S3Place:
    place = S3Place(s3_endpoint, f"lake-{uuid.uuid4().hex[:12]}")
    place.client().create_bucket(Bucket=place.bucket)
    return place
