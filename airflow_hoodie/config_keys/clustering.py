"""Keys of the clustering service (Hudi's HoodieClusteringConfig)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

SMALL_FILE_LIMIT = "hoodie.clustering.plan.strategy.small.file.limit"
TARGET_FILE_MAX_BYTES = "hoodie.clustering.plan.strategy.target.file.max.bytes"
SORT_COLUMNS = "hoodie.clustering.plan.strategy.sort.columns"
SKIP_PARTITIONS_FROM_LATEST = "hoodie.clustering.plan.strategy.skip.partitions.from.latest"
MAX_NUM_GROUPS = "hoodie.clustering.plan.strategy.max.num.groups"
MAX_BYTES_PER_GROUP = "hoodie.clustering.plan.strategy.max.bytes.per.group"
SINGLE_GROUP = "hoodie.clustering.plan.strategy.single.group.clustering.enabled"
PLAN_STRATEGY_CLASS = "hoodie.clustering.plan.strategy.class"
EXECUTION_STRATEGY_CLASS = "hoodie.clustering.execution.strategy.class"

DEFAULT_EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"

register(
    ConfigKey(SMALL_FILE_LIMIT, str(300 * 1024 * 1024), "Base files below this size are clustered"),
    ConfigKey(TARGET_FILE_MAX_BYTES, str(1024 * 1024 * 1024), "Target size of clustered files"),
    ConfigKey(SORT_COLUMNS, None, "Comma-separated columns to sort clustered data by"),
    ConfigKey(SKIP_PARTITIONS_FROM_LATEST, "0", "Leave the newest N partitions alone"),
    ConfigKey(MAX_NUM_GROUPS, "30", "Most clustering groups per plan"),
    ConfigKey(MAX_BYTES_PER_GROUP, str(2 * 1024 * 1024 * 1024), "Most input bytes per clustering group"),
    ConfigKey(SINGLE_GROUP, "true", "Cluster a group made of a single file slice"),
    ConfigKey(PLAN_STRATEGY_CLASS,
              "org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy"),
    ConfigKey(EXECUTION_STRATEGY_CLASS, DEFAULT_EXECUTION_STRATEGY),
    ConfigKey("hoodie.clustering.inline", "false"),
    ConfigKey("hoodie.clustering.async.enabled", "false"),
    ConfigKey("hoodie.clustering.inline.max.commits", "4"),
    ConfigKey("hoodie.clustering.async.max.commits", "4"),
)
