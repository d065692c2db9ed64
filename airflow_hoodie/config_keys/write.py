"""Keys of the write flow (Hudi's HoodieWriteConfig, DataSourceWriteOptions, storage and
index settings) and the open-ended key families a write accepts."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register, register_prefix, register_spellings

TABLE_TYPE = "hoodie.table.type"
RECORD_KEY_FIELD = "hoodie.datasource.write.recordkey.field"
PRECOMBINE_FIELD = "hoodie.datasource.write.precombine.field"
PARTITION_FIELD = "hoodie.datasource.write.partitionpath.field"
SMALL_FILE_GROUP_CANDIDATES_LIMIT = "hoodie.merge.small.file.group.candidates.limit"
LOG_TO_PARQUET_RATIO = "hoodie.logfile.to.parquet.compression.ratio"
METADATA_ENABLE = "hoodie.metadata.enable"
SET_NULL_FOR_MISSING_COLUMNS = "hoodie.write.set.null.for.missing.columns"
ALLOW_COLUMN_DROP = "hoodie.datasource.write.schema.allow.auto.evolution.column.drop"
#: our keys (Hudi has no driver-side write path): see their docs below
DRIVER_BATCH_MAX_BYTES = "hoodie.airflow.write.driver.batch.max.bytes"
DRIVER_FILES_MAX_BYTES = "hoodie.airflow.write.driver.files.max.bytes"
#: the table version a write creates a new table at (Hudi 1.x's HoodieWriteConfig.WRITE_TABLE_VERSION);
#: an existing table is written at its own version, never upgraded or downgraded
WRITE_TABLE_VERSION = "hoodie.write.table.version"
#: Hudi 1.1's ordering field list (write option and table key; older writers set the precombine field)
ORDERING_FIELDS = "hoodie.table.ordering.fields"
#: write options under this prefix go into the commit's extraMetadata
COMMIT_META_PREFIX = "hoodie.datasource.write.commitmeta.key.prefix"
PARQUET_SMALL_FILE_LIMIT = "hoodie.parquet.small.file.limit"
PARQUET_MAX_FILE_SIZE = "hoodie.parquet.max.file.size"
INDEX_TYPE = "hoodie.index.type"
#: Hudi's HoodieIndexConfig bucket-index keys
BUCKET_NUM_BUCKETS = "hoodie.bucket.index.num.buckets"
BUCKET_HASH_FIELD = "hoodie.bucket.index.hash.field"
BUCKET_ENGINE = "hoodie.index.bucket.engine"
#: the consistent-hashing engine's resize bounds and thresholds (Hudi 0.13+)
BUCKET_MAX_NUM_BUCKETS = "hoodie.bucket.index.max.num.buckets"
BUCKET_MIN_NUM_BUCKETS = "hoodie.bucket.index.min.num.buckets"
BUCKET_SPLIT_THRESHOLD = "hoodie.bucket.index.split.threshold"
BUCKET_MERGE_THRESHOLD = "hoodie.bucket.index.merge.threshold"

register(
    ConfigKey(SET_NULL_FOR_MISSING_COLUMNS, "false",
              "Write nulls for table columns a batch lacks; otherwise such a batch is refused, since its updated "
              "records would lose those columns' stored values"),
    ConfigKey(ALLOW_COLUMN_DROP, "false",
              "Drop table columns a batch lacks from the table's schema (not supported: refused with a clear error)"),
    ConfigKey(DRIVER_BATCH_MAX_BYTES, None,
              "A batch whose Spark size estimate is at most this many bytes is collected to the driver as "
              "Arrow and deduped, indexed and routed there; index lookups and file-group writes go to Spark "
              "tasks unless hoodie.airflow.write.driver.files.max.bytes keeps them in the driver. It saves "
              "the shuffles of the DataFrame path. Unset: 64 MB with a local master, 32 MB on a cluster, "
              "from the crossover measured by benchmarks/crossover.py (airflow_hoodie/spark/write_path.py). "
              "0 keeps every batch a DataFrame."),
    ConfigKey(DRIVER_FILES_MAX_BYTES, None,
              "With the batch on the driver, an index lookup or file-group write whose existing files and "
              "records come to at most this many bytes runs in the driver's process. Unset: no limit with a "
              "local master (Spark tasks would share the same cores and add a serialization round trip), "
              "128 MB on a cluster. 0 sends all of it to Spark tasks."),
    ConfigKey(TABLE_TYPE, "COPY_ON_WRITE", "COPY_ON_WRITE or MERGE_ON_READ", ("hoodie.datasource.write.table.type",)),
    ConfigKey("hoodie.table.name", None, "table name", ("hoodie.datasource.write.table.name",)),
    ConfigKey(PRECOMBINE_FIELD, "ts", "ordering field used to dedupe", ("hoodie.table.precombine.field",)),
    ConfigKey("hoodie.datasource.write.operation", "upsert", ""),
    ConfigKey("hoodie.datasource.write.payload.class", "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload", ""),
    ConfigKey("hoodie.payload.ordering.field", None, "ordering field of DefaultHoodieRecordPayload"),
    ConfigKey("hoodie.index.type", "SIMPLE", "SIMPLE, GLOBAL_SIMPLE, BLOOM, GLOBAL_BLOOM, IN_MEMORY, RECORD_INDEX, "
              "BUCKET"),
    ConfigKey(BUCKET_NUM_BUCKETS, "256", "BUCKET index: buckets per partition (Hudi's Spark default; Flink's is 4). "
              "Must be the number the table's other writers use", ("hoodie.index.bucket.num",)),
    ConfigKey(BUCKET_HASH_FIELD, None, "BUCKET index: the record key fields a key's bucket is hashed from "
              "(default: the record key fields)"),
    ConfigKey(BUCKET_ENGINE, "SIMPLE", "BUCKET index engine: SIMPLE (a fixed bucket count) or CONSISTENT_HASHING "
              "(MERGE_ON_READ only: a hash ring per partition, resized by clustering)"),
    ConfigKey(BUCKET_MAX_NUM_BUCKETS, None, "CONSISTENT_HASHING: the most buckets a partition's resize may reach "
              "(default, and at least: hoodie.bucket.index.num.buckets)"),
    ConfigKey(BUCKET_MIN_NUM_BUCKETS, None, "CONSISTENT_HASHING: the fewest buckets a partition's resize may leave "
              "(default, and at most: hoodie.bucket.index.num.buckets)"),
    ConfigKey(BUCKET_SPLIT_THRESHOLD, "2.0", "CONSISTENT_HASHING: a bucket whose file slice is larger than this "
              "times hoodie.parquet.max.file.size is split in two by clustering"),
    ConfigKey(BUCKET_MERGE_THRESHOLD, "0.2", "CONSISTENT_HASHING: adjacent buckets whose file slices are smaller "
              "than this times hoodie.parquet.max.file.size (together too) are merged by clustering"),
    ConfigKey("hoodie.combine.before.upsert", "true", ""),
    ConfigKey("hoodie.combine.before.insert", "false", ""),
    ConfigKey("hoodie.combine.before.delete", "true", ""),
    ConfigKey("hoodie.simple.index.update.partition.path", "true", ""),
    ConfigKey("hoodie.bloom.index.update.partition.path", "true", ""),
    ConfigKey("hoodie.bloom.index.prune.by.ranges", "true", ""),
    ConfigKey("hoodie.bloom.index.use.metadata", "false", ""),
    ConfigKey(PARQUET_SMALL_FILE_LIMIT, str(104857600), ""),
    ConfigKey(PARQUET_MAX_FILE_SIZE, str(125829120), ""),
    ConfigKey(SMALL_FILE_GROUP_CANDIDATES_LIMIT, "1", "MERGE_ON_READ with an index blind to log files: how many "
              "of a partition's smallest base-only file groups an insert may fill (as a new base file)"),
    ConfigKey(LOG_TO_PARQUET_RATIO, "0.35", "how many parquet bytes a log byte counts as when sizing a file slice"),
    ConfigKey("hoodie.parquet.block.size", str(125829120), ""),
    ConfigKey("hoodie.parquet.page.size", str(1048576), ""),
    ConfigKey("hoodie.parquet.compression.codec", "gzip", ""),
    ConfigKey("hoodie.copyonwrite.record.size.estimate", "1024", ""),
    ConfigKey("hoodie.record.size.estimation.threshold", "1.0", ""),
    ConfigKey("hoodie.copyonwrite.insert.split.size", "500000", ""),
    ConfigKey("hoodie.copyonwrite.insert.auto.split", "true", ""),
    ConfigKey("hoodie.logfile.data.block.format", "avro", ""),
    ConfigKey("hoodie.upsert.shuffle.parallelism", "0", ""),
    ConfigKey("hoodie.insert.shuffle.parallelism", "0", ""),
    ConfigKey("hoodie.bulkinsert.shuffle.parallelism", "0", ""),
    ConfigKey("hoodie.bulkinsert.sort.mode", "NONE", "bulk_insert layout: NONE, GLOBAL_SORT, PARTITION_SORT, "
              "PARTITION_PATH_REPARTITION or PARTITION_PATH_REPARTITION_AND_SORT"),
    ConfigKey("hoodie.delete.shuffle.parallelism", "0", ""),
    ConfigKey("hoodie.populate.meta.fields", "true", ""),
    ConfigKey("hoodie.table.timeline.timezone", "LOCAL", ""),
    ConfigKey("hoodie.datasource.write.reconcile.schema", "false", ""),
    ConfigKey("hoodie.table.base.file.format", "PARQUET", ""),
    ConfigKey("hoodie.database.name", None, ""),
    ConfigKey("hoodie.write.markers.type", "DIRECT", "we write direct markers"),
    ConfigKey("hoodie.rollback.using.markers", "true", ""),
    ConfigKey(METADATA_ENABLE, "true",
              "Keep the table's metadata table true (its files partition; column_stats, partition_stats and "
              "bloom_filters are dropped); false drops the whole metadata table before the first change, as a Hudi "
              "writer with it disabled does"),
    ConfigKey(WRITE_TABLE_VERSION, "6",
              "Table version a new table is created at: 6 (Hudi 0.14/0.15), 8 (Hudi 1.0) or 9 (Hudi 1.1). An existing "
              "table keeps its version; a different value here is refused, since airflow-hoodie never upgrades or "
              "downgrades a table."),
    ConfigKey(ORDERING_FIELDS, None,
              "Comma-separated ordering fields, compared in order (the first decides, the next breaks its ties); "
              "wins over hoodie.datasource.write.precombine.field. Stored as hoodie.table.ordering.fields (version 9) "
              "or hoodie.table.precombine.field (versions 6 and 8)."),
    ConfigKey(COMMIT_META_PREFIX, "_", "Write options whose key starts with this prefix are copied "
              "into the commit's extraMetadata (checkpoints, write identities)."),
)
# the ordering field, as Hudi 0.x (precombine field, and the payload's ordering field) and 1.x
# (ordering fields) spell it: two of them with different values are refused (C27)
register_spellings(ORDERING_FIELDS, PRECOMBINE_FIELD, "hoodie.table.precombine.field", "hoodie.payload.ordering.field")
register_prefix("hoodie.write.commit.callback.")
register_prefix("hoodie.datasource.write.keygenerator.")
register_prefix("hoodie.keygen.")
