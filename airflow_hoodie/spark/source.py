"""A write's source batch as a DataFrame, read with the task's storage settings.

A lake's landing zone is usually on the table's object store, reached with the same
endpoint and credentials. Spark's own readers reach a path through Hadoop, whose
distribution in pyspark has no S3 or GCS filesystem (hadoop-aws is not bundled) and would
need the options again in Hadoop's names. So a source on an object store is read the way
our executors read the table: through :class:`Storage` (pyarrow) with the storage options,
one Spark task per source file. Local and HDFS sources keep Spark's readers (and their
inferred schemas) as before.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import pyarrow as pa

from airflow_hoodie.errors import HoodieError, HoodieIOError
from airflow_hoodie.table.schema.spark_types import as_spark_schema
from airflow_hoodie.table.storage.storage import Storage

SOURCE_FORMATS = ("parquet", "json", "csv", "orc")
#: the schemes Spark's bundled Hadoop reads itself
_SPARK_SCHEMES = ("", "file", "hdfs")


def _scheme(path: str) -> str:
    return path.split("://", 1)[0].lower() if "://" in path else ""


def require_source(path: str, storage_options: Mapping[str, str] | None) -> tuple[Storage, str]:
    """The source's storage and path; a missing source fails here, before Spark starts."""
    storage, fs_path = Storage.for_uri(path, dict(storage_options or {}) or None)
    if not storage.exists(fs_path):
        raise HoodieIOError(f"Source path {path!r} does not exist; check --source and, for a source on another "
                            "bucket or store, --source-storage-option (source_storage_options=).")
    return storage, fs_path


def _visible(relative: str) -> bool:
    """Spark's rule: files and directories starting with ``_`` or ``.`` are not data."""
    return not any(part.startswith(("_", ".")) for part in relative.split("/") if part)


def source_files(storage: Storage, fs_path: str) -> dict[str, int]:
    """The data files of a source path (a file, or a directory read recursively) and their
    sizes, in path order."""
    if storage.file_exists(fs_path):
        return {fs_path: storage.size(fs_path)}
    return {f.path: f.size for f in sorted(storage.walk_files(fs_path), key=lambda f: f.path)
            if _visible(posixpath.relpath(f.path, fs_path)) and f.size > 0}


def _file_format(fmt: str) -> Any:
    import pyarrow.dataset as ds

    if fmt == "csv":  # Spark's header=true, inferSchema=true
        return ds.CsvFileFormat()
    if fmt == "json":
        return ds.JsonFileFormat()
    return fmt


def _read_files(uris: list[str], fmt: str, file_schema: pa.Schema, target: pa.Schema,
                storage_options: Mapping[str, str] | None) -> Iterator[pa.RecordBatch]:
    """Every record batch of ``uris`` in the batch's one schema (runs in Spark tasks)."""
    import pyarrow.dataset as ds

    for uri in uris:
        storage, path = Storage.for_uri(uri, dict(storage_options or {}) or None)
        dataset = ds.dataset(path, format=_file_format(fmt), filesystem=storage.fs, schema=file_schema)
        for batch in dataset.to_batches():
            if batch.num_rows:
                yield from pa.Table.from_batches([batch]).cast(target).to_batches()


@dataclass(frozen=True)
class SourceBatch:
    """The batch and, when Spark cannot estimate its size (read through our storage), the
    bytes of its files: what Spark's estimate of a file source would be, so a small batch on
    S3 takes the driver path as a small local one does."""

    df: Any
    size_bytes: int | None = None


def _read_through_storage(spark: Any, storage: Storage, fs_path: str, path: str, fmt: str,
                          storage_options: Mapping[str, str] | None) -> SourceBatch:
    import pyarrow.dataset as ds
    from pyspark.sql.pandas.types import from_arrow_schema

    sizes = source_files(storage, fs_path)
    files = list(sizes)
    if not files:
        raise HoodieIOError(f"Source path {path!r} holds no data files; check --source.")
    try:
        file_schema = ds.dataset(files[0], format=_file_format(fmt), filesystem=storage.fs).schema
    except (OSError, pa.ArrowException) as exc:
        raise HoodieIOError(f"Cannot read source file {storage.uri(files[0])!r} as {fmt}: {exc}") from exc
    target = as_spark_schema(file_schema)
    uris = [storage.uri(f) for f in files]
    options = dict(storage_options or {})

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield from _read_files(b.column(0).to_pylist(), fmt, file_schema, target, options)

    slices = max(1, min(len(uris), spark.sparkContext.defaultParallelism))
    names = spark.sparkContext.parallelize([(u,) for u in uris], slices).toDF(["file"])
    return SourceBatch(names.mapInArrow(read, from_arrow_schema(target)), sum(sizes.values()))


def load_source(spark: Any, path: str, fmt: str, options: Mapping[str, str] | None = None,
                storage_options: Mapping[str, str] | None = None) -> SourceBatch:
    """The input batch; csv gets a header and inferred types. ``options`` are Spark reader
    options; ``storage_options`` reach the source's store (endpoint, credentials)."""
    fmt = (fmt or "parquet").lower()
    if fmt not in SOURCE_FORMATS:
        raise HoodieError(f"--source-format {fmt!r} is not supported; use one of {', '.join(SOURCE_FORMATS)}.")
    storage, fs_path = require_source(path, storage_options)
    if _scheme(path) not in _SPARK_SCHEMES:
        return _read_through_storage(spark, storage, fs_path, path, fmt, storage_options)
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    for k, v in (options or {}).items():
        reader = reader.option(k, v)
    return SourceBatch(reader.load(path))


def read_source(spark: Any, path: str, fmt: str, options: Mapping[str, str] | None = None,
                storage_options: Mapping[str, str] | None = None) -> Any:
    """:func:`load_source`'s DataFrame."""
    return load_source(spark, path, fmt, options, storage_options).df
