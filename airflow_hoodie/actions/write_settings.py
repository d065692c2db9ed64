"""One write's settings, parsed once from its effective options (the job's options over the
table's ``hoodie.properties``) and passed to every step: key preparation, dedupe, index
lookup, bucketing, the file-group tasks, the commit and its callback.

The parsers it calls (:mod:`write_config`, :mod:`merge_settings`) hold Hudi's inference rules
(key generator class, ordering fields, merge mode); this object is where a write asks them,
so the table type and the operation are checked once and no step below reads an option.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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
    DRIVER_BATCH_MAX_BYTES,
    DRIVER_FILES_MAX_BYTES,
    ORDERING_FIELDS,
    PRECOMBINE_FIELD,
    SET_NULL_FOR_MISSING_COLUMNS,
)
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.settings.base_file import BaseFileSettings
from airflow_hoodie.settings.cdc import CdcSettings
from airflow_hoodie.settings.bucket_index import BucketIndexSettings
from airflow_hoodie.settings.commit_callback import CommitCallbackSettings
from airflow_hoodie.settings.file_sizing import SizingSettings
from airflow_hoodie.settings.log_file import LogFileSettings

BULK_INSERT_SORT_MODE = "hoodie.bulkinsert.sort.mode"
BULK_INSERT_SORT_MODES = ("NONE", "GLOBAL_SORT", "PARTITION_SORT", "PARTITION_PATH_REPARTITION",
                          "PARTITION_PATH_REPARTITION_AND_SORT")
TABLE_TYPE_ALIAS = "hoodie.datasource.write.table.type"


def _check_operation(operation: str) -> str:
    if operation not in OPERATIONS:
        raise HoodieConfigError(f"--operation {operation!r} is not one of {', '.join(OPERATIONS)}.")
    return operation


@dataclass(frozen=True)
class WriteRequest:
    """What a write job asks for, checked once where the job starts (before a JVM or the table
    is touched): the operation, the table type, and how the batch is run (on the driver when
    it is small)."""

    #: None until the write's operation is known (a client opened before it is named)
    operation: str | None
    #: the table type asked for (Hudi's default when the job names none)
    table_type: str = "COPY_ON_WRITE"
    #: whether the job named a table type (a write into an existing table must then match it)
    table_type_named: bool = False
    #: the driver-path keys as the job set them; None: the rule of spark/write_path.py decides
    driver_batch_max_bytes: int | None = None
    driver_files_max_bytes: int | None = None
    #: hoodie.table.name: the name a new table gets (an existing table keeps its own)
    table_name: str | None = None
    #: a new table's instant times in UTC (hoodie.table.timeline.timezone=UTC), else local time
    timeline_utc: bool = False

    @classmethod
    def from_config(cls, config: HoodieConfig, operation: str | None = None) -> WriteRequest:
        if operation is not None:
            _check_operation(operation)
        table_type = config.get(TABLE_TYPE) or "COPY_ON_WRITE"
        if table_type not in ("COPY_ON_WRITE", "MERGE_ON_READ"):
            raise HoodieConfigError(
                f"hoodie.table.type={table_type!r} is not a table type; use COPY_ON_WRITE or MERGE_ON_READ.")
        return cls(operation, table_type, TABLE_TYPE in config or TABLE_TYPE_ALIAS in config,
                   _set_int(config, DRIVER_BATCH_MAX_BYTES), _set_int(config, DRIVER_FILES_MAX_BYTES),
                   config.get("hoodie.table.name") or None,
                   (config.get("hoodie.table.timeline.timezone") or "LOCAL").upper() == "UTC")

    def for_operation(self, operation: str) -> WriteRequest:
        """This request for ``operation`` (checked once, where it is first named)."""
        return self if self.operation == operation else replace(self, operation=_check_operation(operation))


def _set_int(config: HoodieConfig, key: str) -> int | None:
    """``key`` as the job set it, or None where it left it to the default."""
    return config.get_int(key) if config.get(key) is not None else None


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
    #: bulk_insert's row layout (Hudi's BulkInsertSortMode) and shuffle parallelism (0: Spark's)
    bulk_insert_sort_mode: str
    bulk_insert_parallelism: int
    #: whether (and how) the write logs its changes for CDC queries (the table's properties)
    cdc: CdcSettings = field(default_factory=CdcSettings)
    #: the simple bucket index's bucket count and hash fields (hoodie.index.type=BUCKET), else None
    bucket: BucketIndexSettings | None = None

    @classmethod
    def from_config(cls, config: HoodieConfig, request: WriteRequest,
                    table_props: Mapping[str, str] | None = None) -> WriteSettings:
        assert request.operation is not None, "the request names its operation (WriteRequest.for_operation)"
        """``config``: the write's effective options (the job's over the table's properties);
        ``request``: the operation and table type the job asked for, checked already."""
        operation = request.operation
        index_type = validate_index_type(config.get("hoodie.index.type") or "SIMPLE")
        sort_mode = (config.get(BULK_INSERT_SORT_MODE) or "NONE").upper()
        if sort_mode not in BULK_INSERT_SORT_MODES:
            raise HoodieConfigError(f"{BULK_INSERT_SORT_MODE}={sort_mode!r} is not a sort mode; use one of "
                                    f"{', '.join(BULK_INSERT_SORT_MODES)}.")
        return cls(
            operation=operation, table_type=config.get(TABLE_TYPE) or request.table_type, index_type=index_type,
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
            bulk_insert_sort_mode=sort_mode,
            bulk_insert_parallelism=config.get_int("hoodie.bulkinsert.shuffle.parallelism"),
            cdc=CdcSettings.from_config(config, table_props),
            bucket=BucketIndexSettings.from_config(config) if index_type == "BUCKET" else None)

    @property
    def is_mor(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    @property
    def delete_ordering_fields(self) -> tuple[str, ...]:
        """The ordering value a log delete block keeps per key: the job's own fields when it
        names them, else the merge's."""
        return self.ordering_fields if self.ordering_named else self.merge_ordering_fields
