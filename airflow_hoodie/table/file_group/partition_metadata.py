"""``.hoodie_partition_metadata``: the marker that makes a directory a partition.

Hudi finds partitions by this file, not by directory shape, so every partition we
write gets one before its first data file. Hudi 0.14 writes it (by default) as a Java
properties text file with ``commitTime`` (the instant that created the partition) and
``partitionDepth`` (number of path segments; 0 for the non-partitioned table). With
``hoodie.partition.metafile.use.base.format=true`` it is a parquet file
(``.hoodie_partition_metadata.parquet``) instead; we recognise those but write text.
"""

from __future__ import annotations

from airflow_hoodie.errors import HoodieCorruptedDataError
from airflow_hoodie.table.properties import dump_java_properties, load_java_properties
from airflow_hoodie.table.storage.storage import Storage

PARTITION_METAFILE = ".hoodie_partition_metadata"
PARTITION_METAFILE_NAMES = (
    PARTITION_METAFILE,
    PARTITION_METAFILE + ".parquet",
    PARTITION_METAFILE + ".orc",
)
COMMIT_TIME_KEY = "commitTime"
PARTITION_DEPTH_KEY = "partitionDepth"


def partition_depth(partition_path: str) -> int:
    return len([p for p in partition_path.strip("/").split("/") if p])


def partition_metadata_text(partition_path: str, commit_time: str) -> bytes:
    props = {COMMIT_TIME_KEY: commit_time, PARTITION_DEPTH_KEY: str(partition_depth(partition_path))}
    return dump_java_properties(props, "partition metadata").encode("latin-1")


def write_partition_metadata(
    storage: Storage, base_path: str, partition_path: str, commit_time: str
) -> bool:
    """Create the partition's marker unless one exists; True if we wrote it.

    Created with ``create_if_absent`` so concurrent tasks writing into the same new
    partition neither fail nor leave a half-written marker.
    """
    pdir = Storage.join(base_path, partition_path) if partition_path else base_path
    if any(storage.file_exists(Storage.join(pdir, n)) for n in PARTITION_METAFILE_NAMES[1:]):
        return False
    return storage.create_if_absent(
        Storage.join(pdir, PARTITION_METAFILE), partition_metadata_text(partition_path, commit_time)
    )


def read_partition_metadata(storage: Storage, base_path: str, partition_path: str) -> dict[str, str]:
    """``{"commitTime": ..., "partitionDepth": ...}`` of a partition (text form only)."""
    pdir = Storage.join(base_path, partition_path) if partition_path else base_path
    path = Storage.join(pdir, PARTITION_METAFILE)
    if not storage.file_exists(path):
        raise HoodieCorruptedDataError(
            f"{storage.uri(path)} does not exist; {partition_path!r} is not a Hudi partition."
        )
    props = load_java_properties(storage.read_bytes(path).decode("latin-1"), storage.uri(path))
    if COMMIT_TIME_KEY not in props:
        raise HoodieCorruptedDataError(
            f"{storage.uri(path)} has no {COMMIT_TIME_KEY}; the partition marker is corrupt. "
            "Delete it and let the next write recreate it."
        )
    return props


def is_partition(storage: Storage, base_path: str, partition_path: str) -> bool:
    pdir = Storage.join(base_path, partition_path) if partition_path else base_path
    return any(storage.file_exists(Storage.join(pdir, n)) for n in PARTITION_METAFILE_NAMES)


def is_partition_metafile(name: str) -> bool:
    return name in PARTITION_METAFILE_NAMES
