"""A consistent-hashing resize's settings (Hudi's HoodieIndexConfig bucket keys), parsed once
where the clustering job starts.

A resize splits a bucket grown past ``split_size`` and merges ring neighbours under
``merge_size``, within [``min_buckets``, ``max_buckets``] per partition. Hudi clamps both bounds
around ``hoodie.bucket.index.num.buckets``, so a job that names neither keeps the count as it is;
the writers of the table must be given the same values."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.write import (
    BUCKET_HASH_FIELD,
    BUCKET_MAX_NUM_BUCKETS,
    BUCKET_MERGE_THRESHOLD,
    BUCKET_MIN_NUM_BUCKETS,
    BUCKET_NUM_BUCKETS,
    BUCKET_SPLIT_THRESHOLD,
    PARQUET_MAX_FILE_SIZE,
)


@dataclass(frozen=True)
class BucketResizeSettings:
    """Bucket-count bounds and the group sizes that trigger a split or a merge; ``hash_fields``:
    the job's ``hoodie.bucket.index.hash.field`` (empty: the table's record key fields)."""

    max_buckets: int
    min_buckets: int
    split_size: int
    merge_size: int
    hash_fields: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: HoodieConfig) -> BucketResizeSettings:
        num = config.get_int(BUCKET_NUM_BUCKETS)
        max_b = max(config.get_int(BUCKET_MAX_NUM_BUCKETS) if config.get(BUCKET_MAX_NUM_BUCKETS) else num, num)
        min_b = min(config.get_int(BUCKET_MIN_NUM_BUCKETS) if config.get(BUCKET_MIN_NUM_BUCKETS) else num, num)
        max_file = config.get_int(PARQUET_MAX_FILE_SIZE)
        return cls(max_b, min_b, int(max_file * config.get_float(BUCKET_SPLIT_THRESHOLD)),
                   int(max_file * config.get_float(BUCKET_MERGE_THRESHOLD)), tuple(config.get_list(BUCKET_HASH_FIELD)))


__all__ = ["BucketResizeSettings"]
