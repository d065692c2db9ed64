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
    BUCKET_NUM_BUCKETS,
    RECORD_KEY_FIELD,
)
from airflow_hoodie.errors import HoodieConfigError, HoodieNotSupportedError


@dataclass(frozen=True)
class BucketIndexSettings:
    """How a record key maps to its bucket: ``hash_fields`` (the record key fields whose
    values are hashed) into ``num_buckets`` buckets per partition."""

    num_buckets: int
    hash_fields: tuple[str, ...]

    @classmethod
    def from_config(cls, config: HoodieConfig) -> BucketIndexSettings:
        engine = (config.get(BUCKET_ENGINE) or "SIMPLE").strip().upper()
        if engine != "SIMPLE":
            raise HoodieNotSupportedError(
                f"{BUCKET_ENGINE}={engine} (Hudi's consistent-hashing bucket index, whose bucket layout lives in "
                ".hoodie/.bucket_index/consistent_hashing_metadata) is not supported here; write with the SIMPLE "
                "bucket engine, or with Hudi's own Spark writer.")
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
        return cls(num, tuple(fields))
