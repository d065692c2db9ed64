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
#: layout optimization (Hudi's LAYOUT_OPTIMIZE_*): how clustering orders a group's rows
LAYOUT_OPTIMIZE_STRATEGY = "hoodie.layout.optimize.strategy"
LAYOUT_OPTIMIZE_CURVE_BUILD_METHOD = "hoodie.layout.optimize.curve.build.method"
LAYOUT_OPTIMIZE_BUILD_CURVE_SAMPLE_SIZE = "hoodie.layout.optimize.build.curve.sample.size"
LAYOUT_OPTIMIZE_DATA_SKIPPING_ENABLE = "hoodie.layout.optimize.data.skipping.enable"
LAYOUT_OPTIMIZE_ENABLE = "hoodie.layout.optimize.enable"
#: the layout keys a plan records as strategy parameters when the job set them, so that its
#: execution (a retry, another task) orders the rows as planned
LAYOUT_KEYS = (LAYOUT_OPTIMIZE_STRATEGY, LAYOUT_OPTIMIZE_CURVE_BUILD_METHOD, LAYOUT_OPTIMIZE_BUILD_CURVE_SAMPLE_SIZE)

DEFAULT_EXECUTION_STRATEGY = "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
#: what a write does with records whose file group a pending clustering rewrites
UPDATES_STRATEGY = "hoodie.clustering.updates.strategy"
REJECT_UPDATE_STRATEGY = "org.apache.hudi.client.clustering.update.strategy.SparkRejectUpdateStrategy"
#: consistent-hashing tables: such records are written to the old group and to the pending
#: resize's child group too (Hudi's choice for writing while a resize runs)
DUPLICATE_UPDATE_STRATEGY = \
    "org.apache.hudi.client.clustering.update.strategy.SparkConsistentBucketDuplicateUpdateStrategy"

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
    ConfigKey(LAYOUT_OPTIMIZE_STRATEGY, "linear",
              "How clustering orders rows by the sort columns: linear, z-order or hilbert"),
    ConfigKey(LAYOUT_OPTIMIZE_CURVE_BUILD_METHOD, "direct",
              "How values map onto the curve: direct (their bytes) or sample (ranks against sampled bounds)"),
    ConfigKey(LAYOUT_OPTIMIZE_BUILD_CURVE_SAMPLE_SIZE, "200000", "Most range bounds per column of the sample method"),
    ConfigKey(LAYOUT_OPTIMIZE_DATA_SKIPPING_ENABLE, "true",
              "Deprecated in Hudi: skipping uses the metadata table's column_stats whenever it is kept"),
    ConfigKey(LAYOUT_OPTIMIZE_ENABLE, "false", "Deprecated in Hudi, no effect: set hoodie.layout.optimize.strategy"),
    ConfigKey(UPDATES_STRATEGY, REJECT_UPDATE_STRATEGY,
              "Writes to file groups under pending clustering: SparkRejectUpdateStrategy refuses them; "
              "SparkConsistentBucketDuplicateUpdateStrategy (consistent-hashing bucket index) writes them to the old "
              "and the new bucket"),
    ConfigKey("hoodie.clustering.inline", "false"),
    ConfigKey("hoodie.clustering.async.enabled", "false"),
    ConfigKey("hoodie.clustering.inline.max.commits", "4"),
    ConfigKey("hoodie.clustering.async.max.commits", "4"),
)
