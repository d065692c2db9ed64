"""The write settings: the keys the write flow owns, and what they derive.

Keys another module reads first (key generator fields, log file sizes, bloom filter
settings, payload merge settings) are registered there; this module registers the rest
of a write's keys, each once, and derives what a write needs from them (key generator
class, hoodie.properties of a new table, dedupe and ordering rules).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from airflow_hoodie.config import ConfigKey, HoodieConfig, register, register_prefix
from airflow_hoodie.errors import (
    HoodieConfigError,
)

TABLE_TYPE = "hoodie.table.type"
RECORD_KEY_FIELD = "hoodie.datasource.write.recordkey.field"
PRECOMBINE_FIELD = "hoodie.datasource.write.precombine.field"
PARTITION_FIELD = "hoodie.datasource.write.partitionpath.field"


register(
    ConfigKey(TABLE_TYPE, "COPY_ON_WRITE", "COPY_ON_WRITE or MERGE_ON_READ", ("hoodie.datasource.write.table.type",)),
    ConfigKey("hoodie.table.name", None, "table name", ("hoodie.datasource.write.table.name",)),
    ConfigKey(PRECOMBINE_FIELD, "ts", "ordering field used to dedupe", ("hoodie.table.precombine.field",)),
    ConfigKey("hoodie.datasource.write.operation", "upsert", ""),
    ConfigKey("hoodie.datasource.write.payload.class", "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload", ""),
    ConfigKey("hoodie.payload.ordering.field", None, "ordering field of DefaultHoodieRecordPayload"),
    ConfigKey("hoodie.index.type", "SIMPLE", "SIMPLE, GLOBAL_SIMPLE, BLOOM, GLOBAL_BLOOM, IN_MEMORY"),
    ConfigKey("hoodie.combine.before.upsert", "true", ""),
    ConfigKey("hoodie.combine.before.insert", "false", ""),
    ConfigKey("hoodie.combine.before.delete", "true", ""),
    ConfigKey("hoodie.simple.index.update.partition.path", "true", ""),
    ConfigKey("hoodie.bloom.index.update.partition.path", "true", ""),
    ConfigKey("hoodie.bloom.index.prune.by.ranges", "true", ""),
    ConfigKey("hoodie.bloom.index.use.metadata", "false", ""),
    ConfigKey("hoodie.parquet.small.file.limit", str(104857600), ""),
    ConfigKey("hoodie.parquet.max.file.size", str(125829120), ""),
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
    ConfigKey("hoodie.metadata.enable", "false", "the metadata table is not maintained by airflow-hoodie"),
)
register_prefix("hoodie.write.commit.callback.")
register_prefix("hoodie.datasource.write.keygenerator.")
register_prefix("hoodie.keygen.")
OPERATIONS = ("insert", "upsert", "bulk_insert", "delete", "insert_overwrite", "insert_overwrite_table")
OPERATION_TYPE = {
    "insert": "INSERT", "upsert": "UPSERT", "bulk_insert": "BULK_INSERT", "delete": "DELETE",
    "insert_overwrite": "INSERT_OVERWRITE", "insert_overwrite_table": "INSERT_OVERWRITE_TABLE",
}
GLOBAL_INDEXES = ("GLOBAL_SIMPLE", "GLOBAL_BLOOM")
INDEX_TYPES = ("SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM", "IN_MEMORY")


def key_generator_class(config: HoodieConfig) -> str:
    cls = config.get("hoodie.datasource.write.keygenerator.class")
    if cls:
        return cls
    kind = (config.get("hoodie.datasource.write.keygenerator.type") or "").upper()
    types = {"SIMPLE": "SimpleKeyGenerator", "COMPLEX": "ComplexKeyGenerator",
             "NON_PARTITION": "NonpartitionedKeyGenerator", "TIMESTAMP": "TimestampBasedKeyGenerator",
             "CUSTOM": "CustomKeyGenerator"}
    if kind:
        if kind not in types:
            raise HoodieConfigError(f"hoodie.datasource.write.keygenerator.type={kind!r} is unknown; use one of {sorted(types)}.")
        return "org.apache.hudi.keygen." + types[kind]
    parts = config.get_list(PARTITION_FIELD)
    keys = config.get_list(RECORD_KEY_FIELD)
    if not parts:
        return "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
    if len(parts) > 1 or len(keys) > 1:
        return "org.apache.hudi.keygen.ComplexKeyGenerator"
    return "org.apache.hudi.keygen.SimpleKeyGenerator"


def key_generator_props(config: HoodieConfig) -> dict[str, str]:
    props = config.as_dict()
    for k in (RECORD_KEY_FIELD, PARTITION_FIELD, "hoodie.datasource.write.keygenerator.class",
              "hoodie.datasource.write.hive_style_partitioning", "hoodie.datasource.write.partitionpath.urlencode"):
        v = config.get(k)
        if v is not None:
            props[k] = v
    props["hoodie.datasource.write.keygenerator.class"] = key_generator_class(config)
    return props


def table_config_from_write_config(config: HoodieConfig, table_name: str, avro_schema: Mapping[str, Any]) -> dict[str, str]:
    """hoodie.properties of a table created by its first write (Hudi's HoodieTableMetaClient.initTable)."""
    table_type = config.get(TABLE_TYPE) or "COPY_ON_WRITE"
    if table_type not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        raise HoodieConfigError(f"hoodie.table.type={table_type!r} is not a table type; use COPY_ON_WRITE or MERGE_ON_READ.")
    part_fields = config.get_list(PARTITION_FIELD)
    keygen = key_generator_class(config)
    props = {
        "hoodie.table.name": table_name,
        "hoodie.table.type": table_type,
        "hoodie.table.version": "6",
        "hoodie.timeline.layout.version": "1",
        "hoodie.archivelog.folder": "archived",
        "hoodie.table.recordkey.fields": ",".join(config.get_list(RECORD_KEY_FIELD)),
        "hoodie.table.partition.fields": ",".join(part_fields),
        "hoodie.table.keygenerator.class": keygen,
        "hoodie.datasource.write.hive_style_partitioning": config.get("hoodie.datasource.write.hive_style_partitioning") or "false",
        "hoodie.datasource.write.partitionpath.urlencode": config.get("hoodie.datasource.write.partitionpath.urlencode") or "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.populate.meta.fields": "true",
        "hoodie.database.name": config.get("hoodie.database.name") or "default",
        "hoodie.table.create.schema": json.dumps(avro_schema, separators=(",", ":")),
    }
    pre = config.get(PRECOMBINE_FIELD)
    if pre and pre in {f["name"] for f in avro_schema.get("fields", [])}:
        props["hoodie.table.precombine.field"] = pre
    if table_type == "MERGE_ON_READ":
        props["hoodie.compaction.payload.class"] = config.get("hoodie.datasource.write.payload.class")
    if config.get("hoodie.table.timeline.timezone", "LOCAL").upper() == "UTC":
        props["hoodie.table.timeline.timezone"] = "UTC"
    # Hudi leaves a key out rather than writing it empty (a non-partitioned table has no
    # hoodie.table.partition.fields, a table without metadata table no metadata.partitions)
    return {k: v for k, v in props.items() if v not in (None, "")}


def dedupe_enabled(config: HoodieConfig, operation: str) -> bool:
    if operation == "upsert":
        return config.get_bool("hoodie.combine.before.upsert")
    if operation == "delete":
        return config.get_bool("hoodie.combine.before.delete")
    return config.get_bool("hoodie.combine.before.insert")


def ordering_field_for_merge(config: HoodieConfig) -> str | None:
    """Ordering-aware merging (DefaultHoodieRecordPayload semantics) only when asked for."""
    payload = config.get("hoodie.datasource.write.payload.class") or ""
    explicit = config.get("hoodie.payload.ordering.field") if "hoodie.payload.ordering.field" in config else None
    if explicit:
        return explicit
    if payload.endswith("DefaultHoodieRecordPayload"):
        return config.get(PRECOMBINE_FIELD)
    return None

