"""A write's source batch as a DataFrame, read with the task's storage settings.

A lake's landing zone is usually on the table's object store, reached with the same
endpoint and credentials. Spark's own readers reach a path through Hadoop, whose
distribution in pyspark has no S3 or GCS filesystem (hadoop-aws is not bundled) and would
need the options again in Hadoop's names. So a source on an object store is read the way
our executors read the table: through :class:`Storage` (pyarrow) with the storage options,
one Spark task per source file. Local and HDFS sources keep Spark's readers (and their
inferred schemas) as before.

A directory laid out Hive-style (``orders/region=eu/part-0.parquet``) gives its ``key=value``
directories as columns, as Spark's partition discovery does for a local one: a landing zone
partitioned by the table's partition field must not lose that field on S3.
"""

from __future__ import annotations

import datetime
import posixpath
import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence
from urllib.parse import unquote

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


#: Spark's (and Hive's) name for a null partition value
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_INT = re.compile(r"^-?\d+$")
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def _partition_pairs(relative: str) -> list[tuple[str, str | None]]:
    """The ``key=value`` directories of a file's path under the source root, unescaped as
    Spark unescapes them (``%3A`` is ``:``); the Hive null partition is None."""
    out: list[tuple[str, str | None]] = []
    for part in relative.split("/")[:-1]:
        if "=" in part:
            key, value = part.split("=", 1)
            value = unquote(value)
            out.append((unquote(key), None if value == _HIVE_NULL else value))
    return out


def _is_date(value: str) -> bool:
    try:
        return datetime.date.fromisoformat(value).isoformat() == value
    except ValueError:
        return False


def _infer_partition_type(values: Sequence[str | None]) -> pa.DataType:
    """Spark's partition column type inference (``partitionColumnTypeInference``): int, then
    long, then double, then date, else string, over every value of the column. Spark's
    decimal (integers past a long) and timestamp inference are read as strings here."""
    present = [v for v in values if v is not None]
    if not present:
        return pa.string()
    if all(_INT.match(v) for v in present):
        ints = [int(v) for v in present]
        if all(_INT32[0] <= i <= _INT32[1] for i in ints):
            return pa.int32()
        if all(_INT64[0] <= i <= _INT64[1] for i in ints):
            return pa.int64()
        return pa.string()
    try:
        [float(v) for v in present]
        # Python's float() also reads "1_000" and "nan", which Java's parseDouble does not
        if not any("_" in v or v.strip().lower().lstrip("+-") in ("nan", "inf", "infinity") for v in present):
            return pa.float64()
    except ValueError:
        pass
    if all(_is_date(v) for v in present):
        return pa.date32()
    return pa.string()


@dataclass(frozen=True)
class SourcePartitions:
    """The partition columns a Hive-style source directory gives, and each file's values."""

    fields: list[pa.Field]
    #: file path -> that file's partition values, in ``fields`` order (as strings; None: null)
    values: dict[str, list[str | None]]


def source_partitions(files: Sequence[str], root: str) -> SourcePartitions:
    """The ``key=value`` directories of ``files`` under ``root`` as columns; every file must
    name the same keys in the same order (Spark refuses conflicting layouts too)."""
    pairs = {f: _partition_pairs(posixpath.relpath(f, root)) for f in files}
    layouts = {tuple(k for k, _ in p) for p in pairs.values()}
    if len(layouts) > 1:
        examples = {tuple(k for k, _ in p): f for f, p in pairs.items()}
        shown = "; ".join(f"{list(keys)} in {path}" for keys, path in sorted(examples.items())[:2])
        raise HoodieIOError(f"Source directory {root!r} mixes partition layouts ({shown}); Spark would refuse it "
                            "too. Point --source at one directory of one layout.")
    keys = list(next(iter(layouts), ()))
    fields = [pa.field(k, _infer_partition_type([p[i][1] for p in pairs.values()]), nullable=True)
              for i, k in enumerate(keys)]
    return SourcePartitions(fields, {f: [v for _, v in p] for f, p in pairs.items()})


def _typed(value: str | None, type_: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_integer(type_):
        return int(value)
    if pa.types.is_floating(type_):
        return float(value)
    if pa.types.is_date(type_):
        return datetime.date.fromisoformat(value)
    return value


def _file_format(fmt: str) -> Any:
    import pyarrow.dataset as ds

    if fmt == "csv":  # Spark's header=true, inferSchema=true
        return ds.CsvFileFormat()
    if fmt == "json":
        return ds.JsonFileFormat()
    return fmt


def _read_files(uris: list[str], fmt: str, file_schema: pa.Schema, target: pa.Schema,
                storage_options: Mapping[str, str] | None,
                partitions: Mapping[str, list[str | None]] | None = None) -> Iterator[pa.RecordBatch]:
    """Every record batch of ``uris`` in the batch's one schema (runs in Spark tasks), with
    the file's partition values (``partitions``: uri -> values of the fields that ``target``
    has after the file's columns) as constant columns."""
    import pyarrow.dataset as ds

    extra = list(target)[len(file_schema):]
    for uri in uris:
        storage, path = Storage.for_uri(uri, dict(storage_options or {}) or None)
        dataset = ds.dataset(path, format=_file_format(fmt), filesystem=storage.fs, schema=file_schema)
        values = (partitions or {}).get(uri, [])
        for batch in dataset.to_batches():
            if batch.num_rows:
                table = pa.Table.from_batches([batch])
                for f, value in zip(extra, values):
                    table = table.append_column(f, pa.array([_typed(value, f.type)] * table.num_rows, f.type))
                yield from table.cast(target).to_batches()


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
    found = source_partitions(files, fs_path) if not storage.file_exists(fs_path) else SourcePartitions([], {})
    # a column the files hold already keeps the files' values (the directory names only add)
    added = [f for f in found.fields if f.name not in file_schema.names]
    target = pa.schema([*as_spark_schema(file_schema), *added])
    keep = [i for i, f in enumerate(found.fields) if f.name not in file_schema.names]
    uris = [storage.uri(f) for f in files]
    partitions = {storage.uri(f): [v[i] for i in keep] for f, v in found.values.items()}
    options = dict(storage_options or {})

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield from _read_files(b.column(0).to_pylist(), fmt, file_schema, target, options, partitions)

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
