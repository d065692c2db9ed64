"""Keys of the metadata table's record index (Hudi 0.14's HoodieMetadataConfig and
HoodieIndexConfig, with Hudi's defaults)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

RECORD_INDEX_ENABLE = "hoodie.metadata.record.index.enable"
RECORD_INDEX_MIN_FILE_GROUPS = "hoodie.metadata.record.index.min.filegroup.count"
RECORD_INDEX_MAX_FILE_GROUPS = "hoodie.metadata.record.index.max.filegroup.count"
RECORD_INDEX_MAX_FILE_GROUP_SIZE = "hoodie.metadata.record.index.max.filegroup.size"
RECORD_INDEX_GROWTH_FACTOR = "hoodie.metadata.record.index.growth.factor"
RECORD_INDEX_UPDATE_PARTITION_PATH = "hoodie.record.index.update.partition.path"

register(
    ConfigKey(RECORD_INDEX_ENABLE, "false",
              "Build the record index in the metadata table (from the table's files, on the next write) and keep it"),
    ConfigKey(RECORD_INDEX_MIN_FILE_GROUPS, "10", "Fewest file groups of a new record index"),
    ConfigKey(RECORD_INDEX_MAX_FILE_GROUPS, "10000", "Most file groups of a new record index"),
    ConfigKey(RECORD_INDEX_MAX_FILE_GROUP_SIZE, "1073741824",
              "Bytes one record-index file group may grow to; sizes the file group count of a new record index"),
    ConfigKey(RECORD_INDEX_GROWTH_FACTOR, "2.0",
              "Growth the file group count of a new record index leaves room for (times the current key count)"),
    ConfigKey(RECORD_INDEX_UPDATE_PARTITION_PATH, "false",
              "With hoodie.index.type=RECORD_INDEX, an update whose partition changed moves the record (delete in "
              "the old partition, insert in the new); else it stays in its old partition"),
)
