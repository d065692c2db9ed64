"""OpenLineage for the operators: the Hudi table as output, the batch as input.

Datasets follow OpenLineage's naming spec (``file`` / ``s3://bucket`` / ``gs://bucket`` /
``hdfs://host:port`` / ``abfss://container@account.dfs.core.windows.net`` namespaces, the
path as name), so lineage from Spark's own OpenLineage listener or other providers joins on
the same datasets. The output carries the table's schema (from its latest commit), the
job's output statistics (rows, bytes, files) and the instant as the dataset version.
"""

from __future__ import annotations

import os
import urllib.parse
from typing import Any, Mapping

from airflow.providers.common.compat.openlineage.facet import (
    Dataset,
    InputDataset,
    OutputDataset,
    OutputStatisticsOutputDatasetFacet,
    SchemaDatasetFacet,
    SchemaDatasetFacetFields,
)
from airflow.providers.openlineage.extractors import OperatorLineage
from openlineage.client.generated.dataset_version_dataset import (
    DatasetVersionDatasetFacet,
)

from airflow_hoodie.actions.service_common import table_avro_schema
from airflow_hoodie.assets import table_uri_from_asset
from airflow_hoodie.errors import HoodieError
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.table.schema.avro_convert import avro_to_arrow_schema

_S3 = ("s3", "s3a", "s3n")
_GCS = ("gs", "gcs")
_ABFS = ("abfs", "abfss")


def namespace_and_name(location: str) -> tuple[str, str]:
    """OpenLineage (namespace, name) of a path or storage URI."""
    parts = urllib.parse.urlsplit(str(location))
    scheme = parts.scheme.lower()
    path = parts.path.rstrip("/") or "/"
    if scheme in ("", "file"):
        return "file", os.path.abspath(os.path.expanduser(parts.path if scheme else str(location))).rstrip("/") or "/"
    if scheme in _S3:
        return f"s3://{parts.netloc}", path.lstrip("/")
    if scheme in _GCS:
        return f"gs://{parts.netloc}", path.lstrip("/")
    if scheme == "hdfs":
        return f"hdfs://{parts.netloc}", path
    if scheme in _ABFS:
        return f"abfss://{parts.netloc}", path.lstrip("/")
    return f"{scheme}://{parts.netloc}", path


def schema_facet(base_path: str, storage_options: Mapping[str, str] | None) -> SchemaDatasetFacet | None:
    """The table's columns from its latest commit's schema (None when it has no commit yet)."""
    try:
        table = HoodieTable.load(base_path, dict(storage_options or {}) or None)
        schema = avro_to_arrow_schema(table_avro_schema(table))
    except HoodieError:
        return None
    return SchemaDatasetFacet(fields=[SchemaDatasetFacetFields(name=f.name, type=str(f.type)) for f in schema])


def table_output(base_path: str, result: Mapping[str, Any], storage_options: Mapping[str, str] | None) -> OutputDataset:
    """The table as an output dataset of the instant ``result`` describes."""
    namespace, name = namespace_and_name(base_path)
    facets: dict[str, Any] = {}
    schema = schema_facet(base_path, storage_options)
    if schema is not None:
        facets["schema"] = schema
    if result.get("instant"):
        facets["version"] = DatasetVersionDatasetFacet(datasetVersion=str(result["instant"]))
    rows = sum(int(result.get(k) or 0) for k in ("inserts", "updates", "deletes"))
    output_facets = {"outputStatistics": OutputStatisticsOutputDatasetFacet(
        rowCount=rows, size=int(result.get("bytes_written") or 0), fileCount=int(result.get("files_written") or 0))}
    return OutputDataset(namespace=namespace, name=name, facets=facets, outputFacets=output_facets)


def operator_lineage(base_path: str, result: Mapping[str, Any] | None, storage_options: Mapping[str, str] | None,
                     inputs: tuple[str, ...] = (), changed: bool = True) -> OperatorLineage:
    """Inputs (source batches, or the table itself for a table service) and the table output."""
    datasets = [InputDataset(*namespace_and_name(src)) for src in inputs]
    outputs = [table_output(base_path, result or {}, storage_options)] if changed and result else []
    return OperatorLineage(inputs=datasets, outputs=outputs)


def convert_asset_to_openlineage(asset: Any, lineage_context: Any = None) -> Dataset:
    """The provider's ``asset-uris`` converter: a ``hudi+...`` Asset -> its table's dataset."""
    return Dataset(*namespace_and_name(table_uri_from_asset(asset)))
