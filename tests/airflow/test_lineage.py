"""OpenLineage naming of table locations and the asset converter registered in provider info."""

from __future__ import annotations

import importlib

import pytest
from airflow.sdk import Asset

from airflow_hoodie.lineage import convert_asset_to_openlineage, namespace_and_name, operator_lineage
from airflow_hoodie.provider_info import provider_info


@pytest.mark.parametrize("location, expected", [
    ("/data/trips/", ("file", "/data/trips")),
    ("file:///data/trips", ("file", "/data/trips")),
    ("s3a://bucket/warehouse/trips", ("s3://bucket", "warehouse/trips")),
    ("s3://bucket/trips/", ("s3://bucket", "trips")),
    ("gs://bucket/trips", ("gs://bucket", "trips")),
    ("hdfs://namenode:8020/warehouse/trips", ("hdfs://namenode:8020", "/warehouse/trips")),
    ("abfss://data@acct.dfs.core.windows.net/trips", ("abfss://data@acct.dfs.core.windows.net", "trips")),
])
def test_openlineage_naming(location, expected):
    assert namespace_and_name(location) == expected


def test_asset_converter_is_registered_and_names_the_table():
    (entry,) = provider_info()["asset-uris"]
    module, _, name = entry["to_openlineage_converter"].rpartition(".")
    converter = getattr(importlib.import_module(module), name)
    assert converter is convert_asset_to_openlineage
    dataset = converter(Asset("hudi+s3a://bucket/trips/"), None)
    assert (dataset.namespace, dataset.name) == ("s3://bucket", "trips")


def test_nothing_written_means_no_output_dataset():
    lineage = operator_lineage("/data/t", {"instant": None}, None, ("/data/t",), changed=False)
    assert [(d.namespace, d.name) for d in lineage.inputs] == [("file", "/data/t")] and lineage.outputs == []
