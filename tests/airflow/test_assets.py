"""Hudi table Assets: one canonical URI per table, reversible to the table path."""

from __future__ import annotations

import pytest

from airflow_hoodie.assets import hoodie_table_asset, table_asset_uri, table_uri_from_asset


@pytest.mark.parametrize(
    "path, uri",
    [
        ("/data/trips", "hudi+file://localhost/data/trips"),
        ("/data/trips/", "hudi+file://localhost/data/trips"),
        ("file:///data//trips", "hudi+file://localhost/data/trips"),
        ("hudi:///data/trips", "hudi+file://localhost/data/trips"),
        ("s3://bucket/trips", "hudi+s3://bucket/trips"),
        ("s3a://bucket/trips/", "hudi+s3://bucket/trips"),
        ("gs://bucket/a/b", "hudi+gs://bucket/a/b"),
        ("hdfs://nn:8020/warehouse/t", "hudi+hdfs://nn:8020/warehouse/t"),
    ],
)
def test_canonical_uri(path, uri):
    assert table_asset_uri(path) == uri


def test_round_trip():
    assert table_uri_from_asset("hudi+file://localhost/data/trips") == "/data/trips"
    assert table_uri_from_asset(table_asset_uri("s3a://b/t")) == "s3://b/t"


@pytest.mark.parametrize("bad", ["", "ftp://host/t", "s3://", "hudi+file://otherhost/t"])
def test_bad_paths_fail_loudly(bad):
    with pytest.raises(ValueError):
        table_asset_uri(bad)


def test_airflow_asset_keeps_our_uri(airflow_db):
    """Airflow sanitizes Asset URIs through our registered handler: same spelling back."""
    asset = hoodie_table_asset("/data/trips/")
    assert asset.uri == "hudi+file://localhost/data/trips"
    from airflow.sdk import Asset

    assert Asset("hudi:///data/trips").uri == "hudi+file://localhost/data/trips"
