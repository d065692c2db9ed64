"""Keys of log files (Hudi's HoodieStorageConfig): when a writer rolls over to the next log
file, and how large one data block may be."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

LOG_FILE_MAX_SIZE = ConfigKey(
    "hoodie.logfile.max.size",
    str(1024 * 1024 * 1024),
    "LogFile max size in bytes; a writer rolls over to the next log file version past it.",
)
LOG_BLOCK_MAX_SIZE = ConfigKey(
    "hoodie.logfile.data.block.max.size",
    str(256 * 1024 * 1024),
    "Max size of one data block appended to a log file; larger batches are split.",
)
register(LOG_FILE_MAX_SIZE, LOG_BLOCK_MAX_SIZE)
