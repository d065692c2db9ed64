"""A write's simple bucket index settings (Hudi's HoodieIndexConfig bucket keys), parsed once.

The number of buckets and the hash fields are not recorded in the table: every writer of a
bucket table must be given the same ones, or one key lands in two buckets. They are read
here, where the write starts, and checked against the table's layout before any change."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.write import (
    BUCKET_ENGINE,
    BUCKET_HASH_FIELD,
    BUCKET_MAX_NUM_BUCKETS,
    BUCKET_MERGE_THRESHOLD,
    BUCKET_MIN_NUM_BUCKETS,
    BUCKET_NUM_BUCKETS,
    BUCKET_SPLIT_THRESHOLD,
    PARQUET_MAX_FILE_SIZE,
    RECORD_KEY_FIELD,
)
from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError


@dataclass(frozen=True)
class BucketIndexSettings:
    """How a record key maps to its bucket: ``hash_fields`` (the record key fields whose
    values are hashed) into ``num_buckets`` buckets per partition. With the
    ``CONSISTENT_HASHING`` engine, ``num_buckets`` is a new partition's initial ring, and a
    resize keeps each partition between ``min_buckets`` and ``max_buckets`` (Hudi's
    HoodieIndexConfig clamps both to the initial count: unset, or on its wrong side, they
    are the initial count), splitting a bucket above ``split_threshold`` x the max file size
    and merging neighbours below ``merge_threshold`` x it."""

    num_buckets: int
    hash_fields: tuple[str, ...]
    engine: str = "SIMPLE"
    max_buckets: int = 0
    min_buckets: int = 0
    split_threshold: float = 2.0
    merge_threshold: float = 0.2
    max_file_size: int = 125829120

    @property
    def consistent(self) -> bool:
        return self.engine == "CONSISTENT_HASHING"

    @classmethod
    def from_config(cls, config: HoodieConfig) -> BucketIndexSettings:
        engine = (config.get(BUCKET_ENGINE) or "SIMPLE").strip().upper()
        if engine not in ("SIMPLE", "CONSISTENT_HASHING"):
            raise HoodieConfigError(f"{BUCKET_ENGINE}={engine} is not a bucket index engine; use SIMPLE or "
                                    "CONSISTENT_HASHING.")
        num = config.get_int(BUCKET_NUM_BUCKETS)
        if num <= 0:
            raise HoodieConfigError(f"{BUCKET_NUM_BUCKETS}={num}: a bucket index needs at least one bucket; set it "
                                    "to the number of buckets the table's other writers use.")
        key_fields = config.get_list(RECORD_KEY_FIELD)
        if not key_fields:
            raise HoodieNotSupportedError(
                "hoodie.index.type=BUCKET hashes each record's key into its bucket, but this table generates its keys "
                "(no hoodie.datasource.write.recordkey.field). Configure a record key, or use another index.")
        fields = config.get_list(BUCKET_HASH_FIELD) or key_fields
        stray = [f for f in fields if f not in key_fields]
        if stray:
            raise HoodieConfigError(
                f"{BUCKET_HASH_FIELD} names {', '.join(stray)}, which are not record key fields "
                f"({', '.join(key_fields)}); Hudi hashes a key's bucket from its record key, so the hash fields must "
                "be a subset of hoodie.datasource.write.recordkey.field.")
        max_b = config.get_int(BUCKET_MAX_NUM_BUCKETS) if config.get(BUCKET_MAX_NUM_BUCKETS) else num
        min_b = config.get_int(BUCKET_MIN_NUM_BUCKETS) if config.get(BUCKET_MIN_NUM_BUCKETS) else num
        return cls(num, tuple(fields), engine, max(max_b, num), min(min_b, num),
                   config.get_float(BUCKET_SPLIT_THRESHOLD), config.get_float(BUCKET_MERGE_THRESHOLD),
                   config.get_int(PARQUET_MAX_FILE_SIZE))
