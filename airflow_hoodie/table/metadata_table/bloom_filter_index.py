"""The ``bloom_filters`` partition: each base file's bloom filter, so a BLOOM index lookup
reads one metadata-table file group instead of one parquet footer per file.

One record per base file, keyed by :func:`index_keys.bloom_filter_key` (partition + file), of
type 4, with a HoodieMetadataBloomFilter payload: the filter's type code (``SIMPLE`` or
``DYNAMIC_V0``), the instant that wrote it, the filter as Hudi serializes it into the footer
(the UTF-8 bytes of that string) and ``isDeleted``. A deleted file gets a tombstone.
"""

from __future__ import annotations

from typing import Any

import pyarrow.parquet as pq

from airflow_hoodie.table.bloom.bloom_filter import BloomFilter, load_bloom_filter
from airflow_hoodie.table.bloom.bloom_footer import bloom_filter_from_footer
from airflow_hoodie.table.metadata_table.index_keys import bloom_filter_key
from airflow_hoodie.table.storage.storage import Storage

BLOOM_FILTERS_PARTITION = "bloom_filters"
TYPE_BLOOM_FILTER = 4


def read_footer_bloom_filter(storage: Storage, path: str) -> BloomFilter | None:
    handle = storage.open_input(path)
    try:
        return bloom_filter_from_footer(pq.ParquetFile(handle).metadata.metadata)
    finally:
        handle.close()


def bloom_filter_record(bloom: BloomFilter, instant_time: str) -> dict[str, Any]:
    return {"key": "", "type": TYPE_BLOOM_FILTER, "BloomFilterMetadata": {
        "type": bloom.type_code, "timestamp": instant_time, "bloomFilter": bloom.serialize().encode("utf-8"),
        "isDeleted": False}}


def bloom_filter_tombstone(instant_time: str) -> dict[str, Any]:
    return {"key": "", "type": TYPE_BLOOM_FILTER, "BloomFilterMetadata": {
        "type": "", "timestamp": instant_time, "bloomFilter": b"", "isDeleted": True}}


def bloom_filter_records(files: dict[tuple[str, str], BloomFilter | None], instant_time: str) -> dict[str, Any]:
    """HFile key -> record for (partition, base file name) -> its filter (None: deleted)."""
    return {bloom_filter_key(part, name): (bloom_filter_record(bloom, instant_time) if bloom is not None
                                           else bloom_filter_tombstone(instant_time))
            for (part, name), bloom in files.items()}


def bloom_filter_of(record: dict[str, Any]) -> BloomFilter | None:
    """The filter a (live) bloom_filters record holds."""
    meta = record.get("BloomFilterMetadata") or {}
    if meta.get("isDeleted") or not meta.get("bloomFilter"):
        return None
    return load_bloom_filter(bytes(meta["bloomFilter"]).decode("utf-8"), meta.get("type") or "SIMPLE")
