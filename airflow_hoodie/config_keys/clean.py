"""Keys of the clean service (Hudi's HoodieCleanConfig)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

POLICY = "hoodie.cleaner.policy"
COMMITS_RETAINED = "hoodie.cleaner.commits.retained"
FILE_VERSIONS_RETAINED = "hoodie.cleaner.fileversions.retained"
HOURS_RETAINED = "hoodie.cleaner.hours.retained"

register(
    ConfigKey(POLICY, "KEEP_LATEST_COMMITS", "KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS or KEEP_LATEST_BY_HOURS"),
    ConfigKey(COMMITS_RETAINED, "10", "Commits whose file slices stay readable (time travel, incremental)"),
    ConfigKey(FILE_VERSIONS_RETAINED, "3", "File slices kept per file group"),
    ConfigKey(HOURS_RETAINED, "24", "Hours of commits whose file slices stay readable"),
    ConfigKey("hoodie.clean.automatic", "true"),
    ConfigKey("hoodie.clean.async", "false"),
)
