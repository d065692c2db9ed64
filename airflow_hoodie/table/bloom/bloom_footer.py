"""Bloom filters in parquet footers: the keys Hudi writes them under, and the write config.

Hudi stores a base file's bloom filter, its type and its min/max record keys as footer
key-values; the BLOOM index prunes files by them without reading any data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from airflow_hoodie.errors import HoodieError
from airflow_hoodie.settings.base_file import BloomSettings
from airflow_hoodie.table.bloom.bloom_filter import (
    DYNAMIC_V0,
    SIMPLE,
    BloomFilter,
    DynamicBloomFilter,
    create_bloom_filter,
    load_bloom_filter,
    serialized_shape,
)
from airflow_hoodie.table.bloom.bloom_hash import (
    KeysLike,
    as_string_array,
    utf8_buffers,
)

# Parquet footer keys (HoodieAvroWriteSupport / HoodieBloomFilterWriteSupport).
BLOOM_FILTER_KEY = "org.apache.hudi.bloomfilter"


OLD_BLOOM_FILTER_KEY = "com.uber.hoodie.bloomfilter"


BLOOM_FILTER_TYPE_KEY = "hoodie_bloom_filter_type_code"


MIN_KEY = "hoodie_min_record_key"


MAX_KEY = "hoodie_max_record_key"




def new_bloom_filter(settings: BloomSettings) -> BloomFilter:
    """A fresh, empty filter as the write's settings configure it."""
    return create_bloom_filter(settings.num_entries, settings.fpp, settings.filter_type or DYNAMIC_V0,
                               settings.dynamic_max_entries)


class SerializedFilter(Protocol):
    """What a file footer needs of a filter: its type code and its footer string."""

    type_code: str

    def serialize(self) -> str: ...


@dataclass(frozen=True)
class StoredFilter:
    """A footer's filter kept as its footer string: nothing to add, so nothing to decode."""

    type_code: str
    serialized: str

    def serialize(self) -> str:
        return self.serialized


def extended_footer_filter(metadata: Mapping[Any, Any] | None, settings: BloomSettings,
                           added_keys: KeysLike) -> SerializedFilter | None:
    """The filter of a new file whose keys are a stored file's plus ``added_keys``: the
    stored file's filter (from its footer ``metadata``) with those keys added, when it was
    built the way ``settings`` configure a new one (same type, size and hash count); None
    otherwise (the caller builds one from all keys). Hashing the keys is most of a filter's
    cost, and a compaction's file keeps most keys of the file it replaces: this hashes only
    the new ones, and with none to add keeps the footer string as it is. A filter is a set:
    it holds the same keys, and answers every lookup, as one built from scratch; a dynamic
    filter may keep them in other rows."""
    if not metadata:
        return None
    value = _get_meta(metadata, BLOOM_FILTER_KEY) or _get_meta(metadata, OLD_BLOOM_FILTER_KEY)
    type_code = (_get_meta(metadata, BLOOM_FILTER_TYPE_KEY) or SIMPLE).upper()
    fresh = new_bloom_filter(settings)
    if value is None or type_code != fresh.type_code:
        return None
    try:
        nb_hash, vector_size, per_row = serialized_shape(value, type_code)
    except HoodieError:
        return None
    if nb_hash != fresh.nb_hash or vector_size != fresh.vector_size \
            or per_row != (fresh.nr if isinstance(fresh, DynamicBloomFilter) else None):
        return None
    if not len(added_keys):
        return StoredFilter(type_code, value)
    stored = load_bloom_filter(value, type_code)
    if isinstance(stored, DynamicBloomFilter):
        assert isinstance(fresh, DynamicBloomFilter)
        # the bound is not serialized (Hudi reads it back as 0): grow rows as a new filter would
        stored.max_entries = fresh.max_entries
    stored.add_many(added_keys)
    return stored


def _get_meta(meta: Mapping[Any, Any], key: str) -> str | None:
    val = meta.get(key)
    if val is None:
        val = meta.get(key.encode("utf-8"))
    if isinstance(val, bytes):
        val = val.decode("utf-8")
    return val


def bloom_filter_from_footer(metadata: Mapping[Any, Any] | None) -> BloomFilter | None:
    """The filter stored in a parquet footer's key-value metadata (str or bytes keys), or None.

    Reads the current key and falls back to the pre-Apache ``com.uber.hoodie.bloomfilter``;
    a missing type code means SIMPLE, as in Hudi.
    """
    if not metadata:
        return None
    value = _get_meta(metadata, BLOOM_FILTER_KEY) or _get_meta(metadata, OLD_BLOOM_FILTER_KEY)
    if value is None:
        return None
    return load_bloom_filter(value, _get_meta(metadata, BLOOM_FILTER_TYPE_KEY) or SIMPLE)


def footer_metadata(bloom: BloomFilter | None, min_key: str | None, max_key: str | None) -> dict[str, str]:
    """Footer entries Hudi's write support adds: filter, type code (dynamic only), min/max key."""
    meta: dict[str, str] = {}
    if bloom is not None:
        meta[BLOOM_FILTER_KEY] = bloom.serialize()
        if "DYNAMIC" in bloom.type_code:
            meta[BLOOM_FILTER_TYPE_KEY] = bloom.type_code
    if min_key is not None and max_key is not None:
        meta[MIN_KEY] = min_key
        meta[MAX_KEY] = max_key
    return meta


def build_footer(keys: KeysLike, settings: BloomSettings) -> dict[str, str]:
    """Everything Hudi's writer puts in a base file footer for these record keys, in write order.

    Filter built from the config (``hoodie.bloom.index.filter.type`` etc.), type code only for
    dynamic filters, min/max key in Java string order. Empty ``keys`` -> filter only, as Hudi.
    """
    bloom = new_bloom_filter(settings)
    bloom.add_many(keys)
    lo, hi = min_max_record_keys(keys)
    return footer_metadata(bloom, lo, hi)


def min_max_record_keys(keys: KeysLike) -> tuple[str | None, str | None]:
    """Min and max record key in Java ``String.compareTo`` order (what Hudi's Avro writer uses).

    That order is UTF-16 code-unit order; it equals byte order of the UTF-8 bytes unless keys
    mix supplementary characters with U+E000..U+FFFF, in which case we sort by UTF-16.
    """
    arr = as_string_array(keys)
    if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_string())
    if arr.null_count:
        arr = arr.drop_null()
    if len(arr) == 0:
        return None, None
    if orders_differ(arr):
        values = arr.to_pylist()
        return min(values, key=java_order), max(values, key=java_order)
    mm = pc.min_max(arr)
    return mm["min"].as_py(), mm["max"].as_py()


def java_order(key: str) -> bytes:
    """A sort key for Java's ``String.compareTo``: UTF-16 code units."""
    return key.encode("utf-16-be")


def orders_differ(keys: pa.Array) -> bool:
    """May Java's String order and UTF-8 byte order rank these keys differently? Only when
    they hold supplementary characters (4-byte UTF-8, surrogate pairs in UTF-16) beside
    U+E000..U+FFFF; a cheap byte scan tells when that cannot be."""
    data, offsets = utf8_buffers(keys)
    used = data[offsets[0] : offsets[-1]]
    return bool(used.size and (used >= 0xEE).any() and (used >= 0xF0).any())
