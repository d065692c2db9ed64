"""How a write appends to log files: when it rolls over to the next log file and how large
one data block may be (Hudi's HoodieStorageConfig), parsed once per write on the driver."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.log import LOG_BLOCK_MAX_SIZE, LOG_FILE_MAX_SIZE


@dataclass(frozen=True)
class LogFileSettings:
    max_file_size: int = 1024 * 1024 * 1024
    max_block_size: int = 256 * 1024 * 1024

    @classmethod
    def from_config(cls, config: HoodieConfig) -> LogFileSettings:
        return cls(config.get_int(LOG_FILE_MAX_SIZE.key), config.get_int(LOG_BLOCK_MAX_SIZE.key))
