"""The clustering service's settings (Hudi's HoodieClusteringConfig, size-based plan
strategy and sort-and-size execution), parsed once per scheduling or execution."""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.clustering import (
    DEFAULT_EXECUTION_STRATEGY,
    EXECUTION_STRATEGY_CLASS,
    MAX_BYTES_PER_GROUP,
    MAX_NUM_GROUPS,
    SINGLE_GROUP,
    SKIP_PARTITIONS_FROM_LATEST,
    SMALL_FILE_LIMIT,
    SORT_COLUMNS,
    TARGET_FILE_MAX_BYTES,
)
from airflow_hoodie.config_keys.write import PARQUET_MAX_FILE_SIZE
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.settings.lock import LockSettings


@dataclass(frozen=True)
class ClusteringSettings:
    #: base files below this size are clustered
    small_file_limit: int = 300 * 1024 * 1024
    target_file_max_bytes: int = 1024 * 1024 * 1024
    max_bytes_per_group: int = 2 * 1024 * 1024 * 1024
    max_num_groups: int = 30
    #: the size a slice without a base file is expected to be written at
    parquet_max_file_size: int = 125829120
    #: cluster a group of one slice (always, when sorting)
    single_group: bool = True
    #: the raw ``sort.columns`` value, as the plan records it ("" for none)
    sort_columns: str = ""
    skip_partitions_from_latest: int = 0
    execution_strategy_class: str = DEFAULT_EXECUTION_STRATEGY
    #: the keys the plan records as strategy parameters (those the job set)
    strategy_params: tuple[tuple[str, str], ...] = ()
    action: ActionSettings = field(default_factory=ActionSettings.default)

    @classmethod
    def from_config(cls, config: HoodieConfig | None) -> ClusteringSettings:
        config = config or HoodieConfig({})
        sort = config.get(SORT_COLUMNS) or ""
        params = tuple((k, str(config.get(k))) for k in (SORT_COLUMNS, TARGET_FILE_MAX_BYTES) if config.get(k))
        return cls(config.get_int(SMALL_FILE_LIMIT), config.get_int(TARGET_FILE_MAX_BYTES),
                   config.get_int(MAX_BYTES_PER_GROUP), config.get_int(MAX_NUM_GROUPS),
                   config.get_int(PARQUET_MAX_FILE_SIZE), config.get_bool(SINGLE_GROUP) or bool(sort), sort,
                   config.get_int(SKIP_PARTITIONS_FROM_LATEST),
                   config.get(EXECUTION_STRATEGY_CLASS) or DEFAULT_EXECUTION_STRATEGY, params,
                   ActionSettings.from_config(config))

    @property
    def lock(self) -> LockSettings:
        return self.action.lock
