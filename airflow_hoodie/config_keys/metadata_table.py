"""Keys of the metadata table's own table services (Hudi's HoodieMetadataConfig).

The writer of the data table runs them on ``.hoodie/metadata`` after its delta commits, so
they are data-table write options, as in Hudi.
"""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

COMPACT_MAX_DELTA_COMMITS = "hoodie.metadata.compact.max.delta.commits"
MAX_DELTA_COMMITS_WHEN_PENDING = "hoodie.metadata.max.deltacommits.when_pending"

register(
    ConfigKey(COMPACT_MAX_DELTA_COMMITS, "10",
              "Compact the metadata table once this many delta commits gathered since its last compaction"),
    ConfigKey(MAX_DELTA_COMMITS_WHEN_PENDING, "1000",
              "While a pending data-table instant holds back the metadata table's compaction, fail a write once "
              "the metadata table has more delta commits than this since its last compaction"),
)
