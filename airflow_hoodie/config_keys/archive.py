"""Keys of timeline archiving (Hudi's HoodieArchivalConfig)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

MIN_COMMITS = "hoodie.keep.min.commits"
MAX_COMMITS = "hoodie.keep.max.commits"
BATCH = "hoodie.commits.archival.batch"
BEYOND_SAVEPOINT = "hoodie.archive.beyond.savepoint"
MERGE_ENABLE = "hoodie.archive.merge.enable"
MERGE_SMALL_FILE_LIMIT = "hoodie.archive.merge.small.file.limit.bytes"
MERGE_FILES_BATCH = "hoodie.archive.merge.files.batch.size"

register(
    ConfigKey(MIN_COMMITS, "20", "Fewest instants left on the active timeline"),
    ConfigKey(MAX_COMMITS, "30", "Archive once the active timeline holds more than this many commits"),
    ConfigKey(BATCH, "10", "Instants archived per batch"),
    ConfigKey(BEYOND_SAVEPOINT, "false", "Archive past savepoints, keeping only the savepointed commits"),
    ConfigKey(MERGE_ENABLE, "false", "Merge small archive files"),
    ConfigKey(MERGE_SMALL_FILE_LIMIT, str(20 * 1024 * 1024), "Archive files smaller than this are merged"),
    ConfigKey(MERGE_FILES_BATCH, "10", "Merge once this many small archive files exist"),
    ConfigKey("hoodie.archive.automatic", "true"),
    ConfigKey("hoodie.archive.async", "false"),
)
