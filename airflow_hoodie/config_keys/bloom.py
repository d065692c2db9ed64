"""Keys of the bloom filter written into base files (Hudi's HoodieIndexConfig)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

NUM_ENTRIES = ConfigKey(
    "hoodie.index.bloom.num_entries",
    "60000",
    "Expected number of record keys per base file; sizes the bloom filter (and, for DYNAMIC_V0, one row).",
)
FPP = ConfigKey(
    "hoodie.index.bloom.fpp",
    "0.000000001",
    "Target false-positive probability of the bloom filter at num_entries keys.",
)
FILTER_TYPE = ConfigKey(
    "hoodie.bloom.index.filter.type",
    "DYNAMIC_V0",
    "Bloom filter type written into base files: SIMPLE or DYNAMIC_V0.",
)
DYNAMIC_MAX_ENTRIES = ConfigKey(
    "hoodie.bloom.index.filter.dynamic.max.entries",
    "100000",
    "Upper bound of keys a DYNAMIC_V0 filter grows to; past it rows are reused round-robin.",
)
register(NUM_ENTRIES, FPP, FILTER_TYPE, DYNAMIC_MAX_ENTRIES)
