"""How a base file is written: parquet encoding and the bloom filter in its footer.

Parsed once per action on the driver and shipped with each task's context, so every file of
a write, compaction or clustering is written with the same settings and no task re-reads the
job's options (Hudi's HoodieStorageConfig and the bloom keys of HoodieIndexConfig).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.bloom import (
    DYNAMIC_MAX_ENTRIES,
    FILTER_TYPE,
    FPP,
    NUM_ENTRIES,
)
from airflow_hoodie.config_keys.keygen import RECORDKEY_FIELD
from airflow_hoodie.table.properties import POPULATE_META_FIELDS

PARQUET_COMPRESSION_CODEC = "hoodie.parquet.compression.codec"
PARQUET_PAGE_SIZE = "hoodie.parquet.page.size"


def _as_config(options: HoodieConfig | Mapping[str, str] | None) -> HoodieConfig:
    return options if isinstance(options, HoodieConfig) else HoodieConfig(dict(options or {}))


@dataclass(frozen=True)
class BloomSettings:
    """The filter a new base file gets: type, expected keys, false-positive rate."""

    num_entries: int = 60000
    fpp: float = 0.000000001
    filter_type: str = "DYNAMIC_V0"
    dynamic_max_entries: int = 100000

    @classmethod
    def from_config(cls, options: HoodieConfig | Mapping[str, str] | None) -> BloomSettings:
        config = _as_config(options)
        return cls(config.get_int(NUM_ENTRIES.key), config.get_float(FPP.key),
                   config.get(FILTER_TYPE.key) or "DYNAMIC_V0", config.get_int(DYNAMIC_MAX_ENTRIES.key))


@dataclass(frozen=True)
class BaseFileSettings:
    compression: str = "gzip"
    page_size: int = 1048576
    #: the record key field when the key is that one field: its column is unique per file
    key_field: str | None = None
    #: hoodie.populate.meta.fields: whether an empty file still gets its (empty) bloom filter
    populate_meta_fields: bool = True
    bloom: BloomSettings = field(default_factory=BloomSettings)

    @classmethod
    def from_config(cls, options: HoodieConfig | Mapping[str, str] | None) -> BaseFileSettings:
        config = _as_config(options)
        fields = [f.strip() for f in (config.get(RECORDKEY_FIELD.key) or "").split(",") if f.strip()]
        return cls(config.get(PARQUET_COMPRESSION_CODEC) or "", config.get_int(PARQUET_PAGE_SIZE),
                   fields[0] if len(fields) == 1 else None, config.get_bool(POPULATE_META_FIELDS),
                   BloomSettings.from_config(config))
