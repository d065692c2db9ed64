"""The write settings: what a write derives from its keys (key generator class,
hoodie.properties of a new table, dedupe and ordering rules).

The keys themselves are declared once, in the catalog :mod:`airflow_hoodie.config_keys`
(``write``, ``keygen``, ``log``, ``bloom``, ``merge``).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.write import (
    DRIVER_BATCH_MAX_BYTES,
    DRIVER_FILES_MAX_BYTES,
    LOG_TO_PARQUET_RATIO,
    PARTITION_FIELD,
    PRECOMBINE_FIELD,
    RECORD_KEY_FIELD,
    SMALL_FILE_GROUP_CANDIDATES_LIMIT,
    TABLE_TYPE,
)
from airflow_hoodie.errors import (
    HoodieConfigError,
)
from airflow_hoodie.table import properties as tp


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
    """hoodie.properties of a table created by its first write (Hudi's HoodieTableMetaClient.initTable):
    the table-level defaults are :data:`properties.DEFAULTS`, written out as Hudi writes them."""
    table_type = config.get(TABLE_TYPE) or tp.DEFAULTS[tp.TYPE]
    if table_type not in (tp.COPY_ON_WRITE, tp.MERGE_ON_READ):
        raise HoodieConfigError(f"hoodie.table.type={table_type!r} is not a table type; use COPY_ON_WRITE or MERGE_ON_READ.")
    defaults = {k: tp.DEFAULTS[k] for k in (tp.VERSION, tp.TIMELINE_LAYOUT_VERSION, tp.ARCHIVELOG_FOLDER)}
    props = {
        tp.NAME: table_name,
        tp.TYPE: table_type,
        **defaults,
        tp.RECORDKEY_FIELDS: ",".join(config.get_list(RECORD_KEY_FIELD)),
        tp.PARTITION_FIELDS: ",".join(config.get_list(PARTITION_FIELD)),
        tp.KEY_GENERATOR_CLASS: key_generator_class(config),
        tp.HIVE_STYLE_PARTITIONING: config.get(tp.HIVE_STYLE_PARTITIONING) or tp.DEFAULTS[tp.HIVE_STYLE_PARTITIONING],
        tp.URL_ENCODE_PARTITIONING: config.get(tp.URL_ENCODE_PARTITIONING) or tp.DEFAULTS[tp.URL_ENCODE_PARTITIONING],
        tp.DROP_PARTITION_COLUMNS: tp.DEFAULTS[tp.DROP_PARTITION_COLUMNS],
        tp.BASE_FILE_FORMAT: tp.DEFAULTS[tp.BASE_FILE_FORMAT],
        tp.POPULATE_META_FIELDS: tp.DEFAULTS[tp.POPULATE_META_FIELDS],
        tp.DATABASE_NAME: config.get(tp.DATABASE_NAME) or "default",
        tp.CREATE_SCHEMA: json.dumps(avro_schema, separators=(",", ":")),
    }
    pre = config.get(PRECOMBINE_FIELD)
    if pre and pre in {f["name"] for f in avro_schema.get("fields", [])}:
        props[tp.PRECOMBINE_FIELD] = pre
    if table_type == tp.MERGE_ON_READ:
        props[tp.PAYLOAD_CLASS] = config.get("hoodie.datasource.write.payload.class")
    if (config.get(tp.TIMELINE_TIMEZONE) or "").upper() == "UTC":
        props[tp.TIMELINE_TIMEZONE] = "UTC"
    # Hudi leaves a key out rather than writing it empty (a non-partitioned table has no
    # hoodie.table.partition.fields, a table without metadata table no metadata.partitions)
    return {k: v for k, v in props.items() if v not in (None, "")}


def dedupe_enabled(config: HoodieConfig, operation: str) -> bool:
    if operation == "upsert":
        return config.get_bool("hoodie.combine.before.upsert")
    if operation == "delete":
        return config.get_bool("hoodie.combine.before.delete")
    return config.get_bool("hoodie.combine.before.insert")


def checked_ordering_field(config: HoodieConfig, operation: str) -> str | None:
    """The ordering field every record of this write must carry a value of: Hudi reads it
    into each record's payload whenever it combines records, which an upsert always does and
    an insert does with hoodie.combine.before.insert (HoodieCreateRecordUtils, 0.14)."""
    if operation == "delete" or not (operation == "upsert" or dedupe_enabled(config, operation)):
        return None
    return config.get(PRECOMBINE_FIELD)


def ordering_field_for_merge(config: HoodieConfig) -> str | None:
    """Ordering-aware merging (DefaultHoodieRecordPayload semantics) only when asked for."""
    payload = config.get("hoodie.datasource.write.payload.class") or ""
    explicit = config.get("hoodie.payload.ordering.field") if "hoodie.payload.ordering.field" in config else None
    if explicit:
        return explicit
    if payload.endswith("DefaultHoodieRecordPayload"):
        return config.get(PRECOMBINE_FIELD)
    return None

