"""The compaction service's settings (Hudi's HoodieCompactionConfig and the file sizes it
plans with), parsed once per scheduling or execution."""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.compaction import (
    LOGFILE_SIZE_THRESHOLD,
    MAX_DELTA_COMMITS,
    MAX_DELTA_SECONDS,
    TARGET_IO_MB,
    TRIGGER_STRATEGY,
)
from airflow_hoodie.config_keys.write import (
    PARQUET_MAX_FILE_SIZE,
    PARQUET_SMALL_FILE_LIMIT,
)
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.settings.lock import LockSettings

#: Hudi's compaction trigger strategies
TRIGGER_STRATEGIES = ("NUM_COMMITS", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME")


@dataclass(frozen=True)
class CompactionSettings:
    trigger_strategy: str = "NUM_COMMITS"
    max_delta_commits: int = 5
    max_delta_seconds: int = 3600
    #: the IO budget (MB) of one plan
    target_io_mb: int = 500 * 1024
    #: only slices whose logs total at least this many bytes
    logfile_size_threshold: int = 0
    #: the size a slice without a base file is expected to be written at
    parquet_max_file_size: int = 125829120
    #: the small-file limit of the writes (named when no slice has logs)
    parquet_small_file_limit: int = 104857600
    action: ActionSettings = field(default_factory=ActionSettings.default)

    @classmethod
    def from_config(cls, config: HoodieConfig | None) -> CompactionSettings:
        config = config or HoodieConfig({})
        strategy = (config.get(TRIGGER_STRATEGY) or "NUM_COMMITS").upper()
        if strategy not in TRIGGER_STRATEGIES:
            raise HoodieConfigError(
                f"{TRIGGER_STRATEGY}={strategy!r} is not supported; use one of {', '.join(TRIGGER_STRATEGIES)}."
            )
        return cls(strategy, config.get_int(MAX_DELTA_COMMITS), config.get_int(MAX_DELTA_SECONDS),
                   config.get_int(TARGET_IO_MB), config.get_int(LOGFILE_SIZE_THRESHOLD),
                   config.get_int(PARQUET_MAX_FILE_SIZE), config.get_int(PARQUET_SMALL_FILE_LIMIT),
                   ActionSettings.from_config(config))

    @property
    def lock(self) -> LockSettings:
        return self.action.lock
