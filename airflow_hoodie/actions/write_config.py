"""The write settings: what a write derives from its keys (key generator class,
hoodie.properties of a new table, dedupe and ordering rules).

The keys themselves are declared once, in the catalog :mod:`airflow_hoodie.config_keys`
(``write``, ``keygen``, ``log``, ``bloom``, ``merge``).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from airflow_hoodie.actions.merge_settings import (
    DEFAULT_PAYLOAD,
    EVENT_TIME_AVRO_PAYLOAD,
    OVERWRITE_PAYLOAD,
    STRATEGY_OF_MODE,
    dedupe_ordering_fields,
    explicit_ordering_fields,
    inferred_merge_mode,
    version6_payload_class,
    write_merge_mode,
    write_ordering_fields,
)
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.merge import MERGE_MODE
from airflow_hoodie.config_keys.write import (
    DRIVER_BATCH_MAX_BYTES,
    DRIVER_FILES_MAX_BYTES,
    LOG_TO_PARQUET_RATIO,
    ORDERING_FIELDS,
    PARTITION_FIELD,
    PRECOMBINE_FIELD,
    RECORD_KEY_FIELD,
    SMALL_FILE_GROUP_CANDIDATES_LIMIT,
    TABLE_TYPE,
    WRITE_TABLE_VERSION,
)
from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieNotSupportedError,
)
from airflow_hoodie.settings.cdc import CdcSettings
from airflow_hoodie.table import properties as tp
from airflow_hoodie.table.hudi_release import release_of
from airflow_hoodie.table.keygen.keygen_config import CLASS_TO_TYPE
from airflow_hoodie.table.record_merger import MergeMode
from airflow_hoodie.table.table_format import WRITABLE_TABLE_VERSIONS, TableFormat


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


#: the time-based key generator settings Hudi persists in a new table's hoodie.properties
#: (HoodieTableConfig.PERSISTED_CONFIG_LIST), with their Hudi 0.x streamer spellings
_PERSISTED_KEYGEN_KEYS = tuple(
    (f"hoodie.keygen.timebased.{k}", f"hoodie.deltastreamer.keygen.timebased.{k}") for k in (
        "timestamp.type", "timestamp.scalar.time.unit", "input.dateformat.list.delimiter.regex",
        "input.dateformat", "input.timezone", "output.dateformat", "output.timezone", "timezone")
) + (("hoodie.keygen.datetime.parser.class", "hoodie.deltastreamer.keygen.datetime.parser.class"),)


def write_table_version(config: HoodieConfig) -> int:
    """The table version ``hoodie.write.table.version`` asks for (6 unless set); refused unless
    we write it, before anything is written."""
    raw = (config.get(WRITE_TABLE_VERSION) or "6").strip()
    version = int(raw) if raw.lstrip("-").isdigit() else None
    if version is None or not TableFormat.for_version(version).writable:
        raise HoodieNotSupportedError(
            f"{WRITE_TABLE_VERSION}={raw!r}: airflow-hoodie writes Hudi table versions "
            f"{', '.join(map(str, WRITABLE_TABLE_VERSIONS))} (Hudi 0.14/0.15, 1.0, 1.1); nothing was written. "
            f"Set {WRITE_TABLE_VERSION} to one of them.")
    return version


def _ordering_fields_checked(ordering: list[str], avro_schema: Mapping[str, Any]) -> list[str]:
    names = {f["name"] for f in avro_schema.get("fields", [])}
    missing = [f for f in ordering if f.split(".")[0] not in names]
    if missing:
        raise HoodieConfigError(
            f"Ordering field(s) {', '.join(missing)} are not columns of the input (columns: {', '.join(sorted(names))}); "
            f"set {ORDERING_FIELDS} (or hoodie.datasource.write.precombine.field) to existing columns. Nothing was "
            "written.")
    return ordering


def _merge_props_1x(version: int, mode: MergeMode, payload: str | None) -> dict[str, str]:
    """The merge keys of a new version 8/9 table as Hudi 1.x writes them: version 8 names the
    payload class and strategy id of the mode as well; version 9 only the mode, plus the
    payload class (as legacy) and strategy id when a payload class was asked for."""
    if release_of(version).names_merge_payload_and_strategy:
        if mode is MergeMode.EVENT_TIME_ORDERING:
            payload_class = payload if payload in (DEFAULT_PAYLOAD, EVENT_TIME_AVRO_PAYLOAD) else DEFAULT_PAYLOAD
        else:
            payload_class = OVERWRITE_PAYLOAD
        return {tp.RECORD_MERGE_MODE: mode.value, tp.PAYLOAD_CLASS: payload_class,
                tp.RECORD_MERGE_STRATEGY_ID: STRATEGY_OF_MODE[mode]}
    props = {tp.RECORD_MERGE_MODE: mode.value}
    if payload:
        props[tp.LEGACY_PAYLOAD_CLASS] = payload
        props[tp.RECORD_MERGE_STRATEGY_ID] = STRATEGY_OF_MODE[mode]
    return props


def _table_config_1x(config: HoodieConfig, version: int, table_name: str, table_type: str,
                     avro_schema: Mapping[str, Any]) -> dict[str, str]:
    """hoodie.properties of a new version 8/9 table, key for key as Hudi 1.0/1.1 writes it
    (HoodieTableMetaClient.TableBuilder + HoodieTableConfig.create): the key generator by type,
    the timeline under ``timeline``/``history`` in layout 2, the ordering fields under the
    version's key, the merge mode spelled out; no base file format, time zone or meta-field
    switch unless they differ from Hudi's defaults."""
    release = release_of(version)
    ordering = _ordering_fields_checked(explicit_ordering_fields(config), avro_schema)
    mode, payload = inferred_merge_mode(config, ordering)
    keygen_class = key_generator_class(config)
    keygen_type = CLASS_TO_TYPE.get(keygen_class.rsplit(".", 1)[-1])
    if keygen_type is None:
        raise HoodieNotSupportedError(f"Key generator class {keygen_class!r} is not one of Hudi's built-in generators; "
                                      "a user-provided key generator is not supported. Nothing was written.")
    props = {
        tp.NAME: table_name,
        tp.TYPE: table_type,
        tp.VERSION: str(version),
        tp.INITIAL_VERSION: str(version),
        tp.TIMELINE_LAYOUT_VERSION: "2",
        tp.ARCHIVELOG_FOLDER: tp.DEFAULTS[tp.ARCHIVELOG_FOLDER],
        tp.TIMELINE_PATH: "timeline",
        tp.TIMELINE_HISTORY_PATH: "history",
        tp.RECORDKEY_FIELDS: ",".join(config.get_list(RECORD_KEY_FIELD)),
        tp.PARTITION_FIELDS: ",".join(config.get_list(PARTITION_FIELD)),
        tp.KEY_GENERATOR_TYPE: keygen_type,
        tp.HIVE_STYLE_PARTITIONING: _stored_bool(config, tp.HIVE_STYLE_PARTITIONING),
        tp.URL_ENCODE_PARTITIONING: _stored_bool(config, tp.URL_ENCODE_PARTITIONING),
        tp.DROP_PARTITION_COLUMNS: tp.DEFAULTS[tp.DROP_PARTITION_COLUMNS],
        tp.DATABASE_NAME: config.get(tp.DATABASE_NAME) or "default",
        tp.CREATE_SCHEMA: json.dumps(avro_schema, separators=(",", ":")),
        release.ordering_fields_key: ",".join(ordering),
        **_merge_props_1x(version, mode, payload),
    }
    if release.declares_table_format:
        props[tp.TABLE_FORMAT] = "native"
    if not config.get_bool(tp.POPULATE_META_FIELDS):
        props[tp.POPULATE_META_FIELDS] = "false"
    if (config.get(tp.TIMELINE_TIMEZONE) or "").upper() == "UTC":
        props[tp.TIMELINE_TIMEZONE] = "UTC"
    if keygen_type in ("TIMESTAMP", "CUSTOM"):
        given = config.as_dict()
        for key, old_key in _PERSISTED_KEYGEN_KEYS:
            value = given.get(key, given.get(old_key))
            if value is not None:
                props[key] = value
    props.update(cdc_table_props(config, version))
    return {k: v for k, v in props.items() if v not in (None, "")}


def table_config_from_write_config(config: HoodieConfig, table_name: str, avro_schema: Mapping[str, Any],
                                   table_type: str) -> dict[str, str]:
    """hoodie.properties of a table created by its first write (Hudi's HoodieTableMetaClient.initTable),
    at ``hoodie.write.table.version``: version 6 with the table-level defaults of
    :data:`properties.DEFAULTS`, versions 8 and 9 as Hudi 1.0/1.1 write them. ``table_type``:
    the one the write asked for, checked where it started (``WriteRequest``)."""
    version = write_table_version(config)
    if release_of(version).table_properties_1x:
        return _table_config_1x(config, version, table_name, table_type, avro_schema)
    write_merge_mode(config)  # CUSTOM refused at every version
    defaults = {k: tp.DEFAULTS[k] for k in (tp.VERSION, tp.TIMELINE_LAYOUT_VERSION, tp.ARCHIVELOG_FOLDER)}
    props = {
        tp.NAME: table_name,
        tp.TYPE: table_type,
        **defaults,
        tp.RECORDKEY_FIELDS: ",".join(config.get_list(RECORD_KEY_FIELD)),
        tp.PARTITION_FIELDS: ",".join(config.get_list(PARTITION_FIELD)),
        tp.KEY_GENERATOR_CLASS: key_generator_class(config),
        tp.HIVE_STYLE_PARTITIONING: _stored_bool(config, tp.HIVE_STYLE_PARTITIONING),
        tp.URL_ENCODE_PARTITIONING: _stored_bool(config, tp.URL_ENCODE_PARTITIONING),
        tp.DROP_PARTITION_COLUMNS: tp.DEFAULTS[tp.DROP_PARTITION_COLUMNS],
        tp.BASE_FILE_FORMAT: tp.DEFAULTS[tp.BASE_FILE_FORMAT],
        # honoured as on 1.x (it was stored as the default whatever the write asked)
        tp.POPULATE_META_FIELDS: _stored_bool(config, tp.POPULATE_META_FIELDS),
        tp.DATABASE_NAME: config.get(tp.DATABASE_NAME) or "default",
        tp.CREATE_SCHEMA: json.dumps(avro_schema, separators=(",", ":")),
    }
    # several ordering fields are kept as a list, which Hudi 1.x reads from the precombine key too
    ordering = write_ordering_fields(config)
    if ordering and set(ordering) <= {f["name"] for f in avro_schema.get("fields", [])}:
        props[tp.PRECOMBINE_FIELD] = ",".join(ordering)
    if table_type == tp.MERGE_ON_READ:
        props[tp.PAYLOAD_CLASS] = version6_payload_class(config)
    if (config.get(tp.TIMELINE_TIMEZONE) or "").upper() == "UTC":
        props[tp.TIMELINE_TIMEZONE] = "UTC"
    props.update(cdc_table_props(config, version))
    # Hudi leaves a key out rather than writing it empty (a non-partitioned table has no
    # hoodie.table.partition.fields, a table without metadata table no metadata.partitions)
    return {k: v for k, v in props.items() if v not in (None, "")}


def cdc_table_props(config: HoodieConfig, version: int) -> dict[str, str]:
    """The CDC table properties a first write stores when it asks for CDC (HoodieTableMetaClient's
    property builder: the flag, and with it the supplemental logging mode, spelled as the
    release line spells the enum: lower case on 0.14, upper case on 1.x). Every later writer
    reads them from the table, so a table created without them logs nothing, ever."""
    cdc = CdcSettings.from_config(config, None)
    if not cdc.enabled:
        return {tp.CDC_ENABLED: "false"} if tp.CDC_ENABLED in config else {}
    mode = cdc.mode if release_of(version).table_properties_1x else cdc.mode.lower()
    return {tp.CDC_ENABLED: "true", tp.CDC_SUPPLEMENTAL_LOGGING_MODE: mode}


def dedupe_enabled(config: HoodieConfig, operation: str) -> bool:
    if operation == "upsert":
        return config.get_bool("hoodie.combine.before.upsert")
    if operation == "delete":
        return config.get_bool("hoodie.combine.before.delete")
    return config.get_bool("hoodie.combine.before.insert")


def checked_ordering_field(config: HoodieConfig, operation: str) -> list[str]:
    """The ordering fields every record of this write must carry a value of: Hudi reads them
    into each record's payload whenever it combines records, which an upsert always does and
    an insert does with hoodie.combine.before.insert (HoodieCreateRecordUtils, 0.14). Under
    commit-time ordering no ordering value is read, so none is required."""
    if operation == "delete" or not (operation == "upsert" or dedupe_enabled(config, operation)):
        return []
    return dedupe_ordering_fields(config)


def _stored_bool(config: HoodieConfig, key: str) -> str:
    """A boolean table setting as the write applied it, stored as ``true``/``false`` (values
    Java's parseBoolean would read otherwise than we do are refused by ``get_bool``)."""
    return "true" if config.get_bool(key, tp.DEFAULTS[key] == "true") else "false"


def _refuse_other_key_fields(config: HoodieConfig, table: tp.TableConfig) -> None:
    """A write naming other record key or partition fields than the table's would store a
    record again under another key or partition: refused, as Hudi's validateTableConfig
    refuses ("Config conflict"). (A write's own ordering field stays allowed.)"""
    def fields(key: str) -> list[str]:
        return [f.split(":")[0].strip() for f in config.get_list(key) if f.strip()] if key in config else []

    for key, stored in ((RECORD_KEY_FIELD, table.record_key_fields), (PARTITION_FIELD, table.partition_fields)):
        asked = fields(key)
        if asked and stored and asked != stored:
            raise HoodieConfigError(
                f"The write sets {key}={','.join(asked)} but the table's is {','.join(stored)}; a table keeps its key "
                f"and partition fields, and nothing was written. Drop {key} from the write (the table's is used), "
                "or write to a new table.")


def _refuse_other_ordering_fields(config: HoodieConfig, stored: list[str]) -> None:
    """A write naming other ordering fields than the table's would merge its records by
    another field than every earlier write did: an update older by the table's field could
    replace a newer one, silently. Hudi's validateTableConfig refuses it ("Config conflict
    ... PreCombineKey"). The table's first field alone is the same setting: our write
    client fills the precombine field with it."""
    asked = explicit_ordering_fields(config)
    if not asked or not stored or asked == stored or asked == stored[:1]:
        return
    raise HoodieConfigError(
        f"The write orders records by {','.join(asked)} but the table's ordering field is {','.join(stored)} "
        f"(hoodie.properties); a table keeps its ordering fields, and nothing was written. Drop "
        f"{PRECOMBINE_FIELD} / {ORDERING_FIELDS} from the write (the table's is used), or write to a new table.")


def with_table_settings(config: HoodieConfig, table: tp.TableConfig | None) -> HoodieConfig:
    """The write settings with the existing table's merge semantics and version filled in, checked
    before anything is written.

    A new table: the asked-for version and merge mode are checked (a version we do not write and
    the CUSTOM merge mode are refused). An existing table is written at its own version (never
    upgraded or downgraded: a different ``hoodie.write.table.version`` is refused), with its own
    merge mode (a contradicting one is refused) and all of its ordering fields unless the write
    names its own.
    """
    if table is None:
        write_table_version(config)
        write_merge_mode(config)
        return config
    extra: dict[str, str] = {}
    version = table.table_version
    # not a branch on the version: the asked one must be the table's own (never upgraded)
    if WRITE_TABLE_VERSION in config and write_table_version(config) != version:
        raise HoodieNotSupportedError(
            f"The table is Hudi table version {version} but the write asks for {WRITE_TABLE_VERSION}="
            f"{config.get(WRITE_TABLE_VERSION)}; airflow-hoodie never upgrades or downgrades a table, and nothing was "
            f"written. Drop {WRITE_TABLE_VERSION} (the table's version is used), or change the version with Hudi itself.")
    extra[WRITE_TABLE_VERSION] = str(version)
    _refuse_other_key_fields(config, table)
    asked = write_merge_mode(config)
    stored = table.record_merge_mode
    if stored:
        if asked is not None and asked.value != stored:
            raise HoodieConfigError(
                f"The table's merge mode is {stored} but the write asks for {MERGE_MODE}={asked.value}; a table keeps "
                f"its merge mode. Drop {MERGE_MODE} from the write; nothing was written.")
        extra[MERGE_MODE] = stored
    # the time-based key generator's settings a 1.x table persists (Hudi's PERSISTED_CONFIG_LIST)
    given = config.as_dict()
    for key, old_key in _PERSISTED_KEYGEN_KEYS:
        if key in table and key not in given and old_key not in given:
            extra[key] = table[key]
    ordering = table.ordering_fields
    _refuse_other_ordering_fields(config, ordering)
    # (the write client fills the precombine field with the table's first ordering field)
    own = config.get(PRECOMBINE_FIELD) if PRECOMBINE_FIELD in config else None
    if len(ordering) > 1 and ORDERING_FIELDS not in config and own in (None, "", ordering[0]):
        extra[ORDERING_FIELDS] = ",".join(ordering)
    return config.with_values(extra)
