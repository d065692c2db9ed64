"""One write's settings, parsed once from its effective options (the job's options over the
table's ``hoodie.properties``) and passed to every step: key preparation, dedupe, index
lookup, bucketing, the file-group tasks, the commit and its callback.

The parsers it calls (:mod:`write_config`, :mod:`merge_settings`) hold Hudi's inference rules
(key generator class, ordering fields, merge mode); this object is where a write asks them,
so the table type and the operation are checked once and no step below reads an option.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from airflow_hoodie.actions.index import validate_index_type
from airflow_hoodie.actions.merge_settings import (
    dedupe_ordering_fields,
    ordering_fields_for_merge,
    write_ordering_fields,
)
from airflow_hoodie.actions.write_config import (
    OPERATIONS,
    PARTITION_FIELD,
    RECORD_KEY_FIELD,
    TABLE_TYPE,
    checked_ordering_field,
    dedupe_enabled,
    key_generator_props,
)
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.record_index import RECORD_INDEX_UPDATE_PARTITION_PATH
from airflow_hoodie.config_keys.write import (
    ALLOW_COLUMN_DROP,
    LOG_TO_PARQUET_RATIO,
    ORDERING_FIELDS,
    PARQUET_MAX_FILE_SIZE,
    PARQUET_SMALL_FILE_LIMIT,
    PRECOMBINE_FIELD,
    SET_NULL_FOR_MISSING_COLUMNS,
    SMALL_FILE_GROUP_CANDIDATES_LIMIT,
)
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.settings.base_file import BaseFileSettings
from airflow_hoodie.settings.log_file import LogFileSettings

CALLBACK_ON = "hoodie.write.commit.callback.on"
CALLBACK_URL = "hoodie.write.commit.callback.http.url"
CALLBACK_API_KEY = "hoodie.write.commit.callback.http.api.key"
CALLBACK_HEADERS = "hoodie.write.commit.callback.http.custom.headers"
CALLBACK_TIMEOUT = "hoodie.write.commit.callback.http.timeout.seconds"


@dataclass(frozen=True)
class SizingSettings:
    """How Hudi's UpsertPartitioner sizes file groups: small files, record size, insert splits."""

    small_file_limit: int = 104857600
    max_file_size: int = 125829120
    record_size_estimate: int = 1024
    #: a commit counts for the record size once it wrote more than this many bytes
    record_size_threshold_bytes: float = 104857600.0
    log_to_parquet_ratio: float = 0.35
    small_file_group_candidates_limit: int = 1
    insert_auto_split: bool = True
    insert_split_size: int = 500000

    @classmethod
    def from_config(cls, config: HoodieConfig) -> SizingSettings:
        small = config.get_int(PARQUET_SMALL_FILE_LIMIT)
        return cls(small, config.get_int(PARQUET_MAX_FILE_SIZE), config.get_int("hoodie.copyonwrite.record.size.estimate"),
                   config.get_float("hoodie.record.size.estimation.threshold") * small,
                   config.get_float(LOG_TO_PARQUET_RATIO), config.get_int(SMALL_FILE_GROUP_CANDIDATES_LIMIT),
                   config.get_bool("hoodie.copyonwrite.insert.auto.split"),
                   config.get_int("hoodie.copyonwrite.insert.split.size"))


@dataclass(frozen=True)
class CommitCallbackSettings:
    """Hudi's HTTP commit callback (HoodieWriteCommitHttpCallback)."""

    enabled: bool = False
    url: str | None = None
    api_key: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float = 3.0

    @classmethod
    def from_config(cls, config: HoodieConfig) -> CommitCallbackSettings:
        headers = tuple((k.strip(), v.strip()) for k, _, v in
                        (pair.partition(":") for pair in (config.get(CALLBACK_HEADERS) or "").split(";") if ":" in pair))
        return cls(config.get_bool(CALLBACK_ON, False), config.get(CALLBACK_URL) or None,
                   config.get(CALLBACK_API_KEY) or "", headers, config.get_float(CALLBACK_TIMEOUT))


def _update_partition_path(config: HoodieConfig, index_type: str) -> bool:
    """Whether a global index moves a record whose partition changed (delete + insert)."""
    if index_type == "RECORD_INDEX":
        return config.get_bool(RECORD_INDEX_UPDATE_PARTITION_PATH)
    return config.get_bool("hoodie.bloom.index.update.partition.path" if "BLOOM" in index_type
                           else "hoodie.simple.index.update.partition.path")


@dataclass(frozen=True)
class WriteSettings:
    operation: str
    table_type: str
    index_type: str
    record_key_fields: tuple[str, ...]
    #: the partition path fields as configured (``field`` or ``field:type``)
    partition_fields: tuple[str, ...]
    #: the key generator's properties (class resolved)
    key_generator: Mapping[str, str]
    #: the write's ordering fields (``hoodie.table.ordering.fields`` or the precombine field)
    ordering_fields: tuple[str, ...]
    #: whether the job named its ordering fields (else the table's, or Hudi's default, apply)
    ordering_named: bool
    #: the fields an incoming record must beat the stored one by; empty: the latest write wins
    merge_ordering_fields: tuple[str, ...]
    #: combine the batch's records of one key first (hoodie.combine.before.*), and by what
    dedupe: bool
    dedupe_ordering_fields: tuple[str, ...]
    #: the ordering fields every record must carry a value of
    required_ordering_fields: tuple[str, ...]
    update_partition_path: bool
    bloom_prune_by_ranges: bool
    bloom_use_metadata: bool
    fill_missing_columns: bool
    drop_missing_columns: bool
    sizing: SizingSettings
    callback: CommitCallbackSettings
    file: BaseFileSettings
    log: LogFileSettings
    action: ActionSettings
    #: the effective options as strings: what table creation records and what Spark tasks receive
    options: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: HoodieConfig, operation: str) -> WriteSettings:
        if operation not in OPERATIONS:
            raise HoodieConfigError(f"--operation {operation!r} is not one of {', '.join(OPERATIONS)}.")
        index_type = validate_index_type(config.get("hoodie.index.type") or "SIMPLE")
        table_type = config.get(TABLE_TYPE) or "COPY_ON_WRITE"
        if table_type not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
            raise HoodieConfigError(
                f"hoodie.table.type={table_type!r} is not a table type; use COPY_ON_WRITE or MERGE_ON_READ.")
        return cls(
            operation=operation, table_type=table_type, index_type=index_type,
            record_key_fields=tuple(config.get_list(RECORD_KEY_FIELD)),
            partition_fields=tuple(config.get_list(PARTITION_FIELD)),
            key_generator=key_generator_props(config),
            ordering_fields=tuple(write_ordering_fields(config)),
            ordering_named=PRECOMBINE_FIELD in config or ORDERING_FIELDS in config,
            merge_ordering_fields=tuple(ordering_fields_for_merge(config)),
            dedupe=dedupe_enabled(config, operation),
            dedupe_ordering_fields=tuple(dedupe_ordering_fields(config)),
            required_ordering_fields=tuple(checked_ordering_field(config, operation)),
            update_partition_path=_update_partition_path(config, index_type),
            bloom_prune_by_ranges=config.get_bool("hoodie.bloom.index.prune.by.ranges"),
            bloom_use_metadata=config.get_bool("hoodie.bloom.index.use.metadata"),
            fill_missing_columns=operation == "delete" or config.get_bool(SET_NULL_FOR_MISSING_COLUMNS),
            drop_missing_columns=config.get_bool(ALLOW_COLUMN_DROP),
            sizing=SizingSettings.from_config(config), callback=CommitCallbackSettings.from_config(config),
            file=BaseFileSettings.from_config(config), log=LogFileSettings.from_config(config),
            action=ActionSettings.from_config(config), options=config.as_dict())

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    @property
    def delete_ordering_fields(self) -> tuple[str, ...]:
        """The ordering value a log delete block keeps per key: the job's own fields when it
        names them, else the merge's."""
        return self.ordering_fields if self.ordering_named else self.merge_ordering_fields
