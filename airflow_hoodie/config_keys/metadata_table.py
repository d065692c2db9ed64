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

# ------------------------------------------------------------------ statistics indexes
COLUMN_STATS_ENABLE = "hoodie.metadata.index.column.stats.enable"
COLUMN_STATS_COLUMN_LIST = "hoodie.metadata.index.column.stats.column.list"
COLUMN_STATS_MAX_COLUMNS = "hoodie.metadata.index.column.stats.max.columns.to.index"
COLUMN_STATS_FILE_GROUP_COUNT = "hoodie.metadata.index.column.stats.file.group.count"
PARTITION_STATS_ENABLE = "hoodie.metadata.index.partition.stats.enable"
PARTITION_STATS_FILE_GROUP_COUNT = "hoodie.metadata.index.partition.stats.file.group.count"
BLOOM_FILTER_ENABLE = "hoodie.metadata.index.bloom.filter.enable"
BLOOM_FILTER_FILE_GROUP_COUNT = "hoodie.metadata.index.bloom.filter.file.group.count"

register(
    ConfigKey(COLUMN_STATS_ENABLE, None,
              "true builds the metadata table's column_stats partition when missing; false drops it; unset keeps "
              "a table's existing partition true and builds none"),
    ConfigKey(COLUMN_STATS_COLUMN_LIST, "",
              "Comma-separated columns column_stats covers (Hudi adds the record key, partition path and commit "
              "time meta fields); empty: every top-level column up to max.columns.to.index"),
    ConfigKey(COLUMN_STATS_MAX_COLUMNS, "32",
              "With no column list, index the first this many top-level columns of the table schema"),
    ConfigKey(COLUMN_STATS_FILE_GROUP_COUNT, "2", "File groups of a new column_stats partition"),
    ConfigKey(PARTITION_STATS_ENABLE, None,
              "true builds partition_stats (table version 8 and later; needs column_stats) when missing; false "
              "drops it; unset keeps an existing one true"),
    ConfigKey(PARTITION_STATS_FILE_GROUP_COUNT, "1", "File groups of a new partition_stats partition"),
    ConfigKey(BLOOM_FILTER_ENABLE, None,
              "true builds the bloom_filters partition (each base file's footer bloom filter) when missing; false "
              "drops it; unset keeps an existing one true"),
    ConfigKey(BLOOM_FILTER_FILE_GROUP_COUNT, "4", "File groups of a new bloom_filters partition"),
)

# ------------------------------------------------------------------ secondary indexes
SECONDARY_INDEX_ENABLE = "hoodie.metadata.index.secondary.enable"

register(
    ConfigKey(SECONDARY_INDEX_ENABLE, "true",
              "true keeps every secondary index (table versions 8 and 9) consistent with the data table; false "
              "deletes them, as Hudi's writer does (an index is created by CREATE INDEX, not by this key)"),
)

#: HoodieMetadataConfig.DEFAULT_METADATA_CLEANER_COMMITS_RETAINED: the metadata table's cleaner
#: (KEEP_LATEST_COMMITS) keeps this many commits; fixed, not a key a writer sets
CLEANER_COMMITS_RETAINED = 20

# ------------------------------------------------------------------ expression indexes
#: Spark's session time zone: Hudi's Spark writer evaluates an expression index's datetime
#: functions in it (our Spark jobs set it to UTC unless told otherwise)
SESSION_TIME_ZONE = "spark.sql.session.timeZone"
EXPRESSION_INDEX_FILE_GROUP_COUNT = "hoodie.metadata.index.expression.file.group.count"

register(
    ConfigKey(SESSION_TIME_ZONE, "UTC",
              "The Spark session time zone in which an expression index's datetime functions are evaluated, as "
              "Hudi's Spark writer evaluates them; it must be the zone the index was built and queried in"),
    ConfigKey(EXPRESSION_INDEX_FILE_GROUP_COUNT, "2",
              "File groups of an expression index's metadata-table partition when it is built"),
)
