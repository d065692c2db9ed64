"""The clustering service's settings (Hudi's HoodieClusteringConfig, size-based plan
strategy and sort-and-size execution), parsed once per scheduling or execution."""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.clustering import (
    DEFAULT_EXECUTION_STRATEGY,
    EXECUTION_STRATEGY_CLASS,
    LAYOUT_KEYS,
    LAYOUT_OPTIMIZE_BUILD_CURVE_SAMPLE_SIZE,
    LAYOUT_OPTIMIZE_CURVE_BUILD_METHOD,
    LAYOUT_OPTIMIZE_DATA_SKIPPING_ENABLE,
    LAYOUT_OPTIMIZE_STRATEGY,
    MAX_BYTES_PER_GROUP,
    MAX_NUM_GROUPS,
    SINGLE_GROUP,
    SKIP_PARTITIONS_FROM_LATEST,
    SMALL_FILE_LIMIT,
    SORT_COLUMNS,
    TARGET_FILE_MAX_BYTES,
)
from airflow_hoodie.config_keys.write import PARQUET_MAX_FILE_SIZE
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.settings.bucket_resize import BucketResizeSettings
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.table.layout import LayoutSpec


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
    #: how a group's rows are ordered by the sort columns (hoodie.layout.optimize.*)
    layout: LayoutSpec = field(default_factory=LayoutSpec)
    #: hoodie.layout.optimize.data.skipping.enable: deprecated in Hudi; reads skip through the
    #: metadata table's column_stats whenever it is kept, which every clustering keeps exact
    data_skipping: bool = True
    #: a consistent-hashing table's resize bounds (its clustering is a resize)
    resize: BucketResizeSettings = field(default_factory=lambda: BucketResizeSettings.from_config(HoodieConfig({})))

    @classmethod
    def from_config(cls, config: HoodieConfig | None) -> ClusteringSettings:
        config = config or HoodieConfig({})
        sort = config.get(SORT_COLUMNS) or ""
        params = tuple((k, str(config.get(k))) for k in (SORT_COLUMNS, TARGET_FILE_MAX_BYTES) if config.get(k))
        params += tuple((k, str(config.get(k))) for k in LAYOUT_KEYS if config.get(k) and k in config)
        return cls(config.get_int(SMALL_FILE_LIMIT), config.get_int(TARGET_FILE_MAX_BYTES),
                   config.get_int(MAX_BYTES_PER_GROUP), config.get_int(MAX_NUM_GROUPS),
                   config.get_int(PARQUET_MAX_FILE_SIZE), config.get_bool(SINGLE_GROUP) or bool(sort), sort,
                   config.get_int(SKIP_PARTITIONS_FROM_LATEST),
                   config.get(EXECUTION_STRATEGY_CLASS) or DEFAULT_EXECUTION_STRATEGY, params,
                   ActionSettings.from_config(config), layout_spec(config),
                   config.get_bool(LAYOUT_OPTIMIZE_DATA_SKIPPING_ENABLE), BucketResizeSettings.from_config(config))

    @property
    def lock(self) -> LockSettings:
        return self.action.lock


def layout_spec(options: HoodieConfig | dict[str, str]) -> LayoutSpec:
    """The layout optimization the options ask for (strategy and build method read
    case-insensitively, ``Z-ORDER`` as ``z-order``); an unknown strategy or method is refused by
    name, at scheduling as at execution, before any file is written."""
    config = options if isinstance(options, HoodieConfig) else HoodieConfig(dict(options))
    size = config.get_int(LAYOUT_OPTIMIZE_BUILD_CURVE_SAMPLE_SIZE)
    if size < 1:
        raise HoodieConfigError(f"{LAYOUT_OPTIMIZE_BUILD_CURVE_SAMPLE_SIZE}={size}: the sample size must be at "
                                "least 1 (Hudi's default is 200000).")
    return LayoutSpec(str(config.get(LAYOUT_OPTIMIZE_STRATEGY) or "linear").strip().lower(),
                      str(config.get(LAYOUT_OPTIMIZE_CURVE_BUILD_METHOD) or "direct").strip().lower(), size)
