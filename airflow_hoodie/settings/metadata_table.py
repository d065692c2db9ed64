"""The settings the metadata-table writer and its services read, parsed once per change.

Built from the data table's write options (Hudi's HoodieMetadataConfig keys are data-table
write options) where a change starts keeping the metadata table (``actions.commit``), then
passed down: nothing in ``actions.metadata_table`` reads a ``hoodie.*`` key itself. Defaults
and error messages are those of the config registry (and of ``int()``/``float()`` for the
keys Hudi parses that way), as before; the same settings serve table versions 6, 8 and 9.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys import metadata_table as keys
from airflow_hoodie.config_keys.record_index import (
    RECORD_INDEX_ENABLE,
    RECORD_INDEX_GROWTH_FACTOR,
    RECORD_INDEX_MAX_FILE_GROUP_SIZE,
    RECORD_INDEX_MAX_FILE_GROUPS,
    RECORD_INDEX_MIN_FILE_GROUPS,
)
from airflow_hoodie.config_keys.write import METADATA_ENABLE
from airflow_hoodie.settings.archive import ArchiveSettings
from airflow_hoodie.settings.base_file import BloomSettings


def _flag(config: HoodieConfig, key: str) -> bool | None:
    """A ``hoodie.metadata.index.*.enable`` key: True for "true", False for "false", None
    when unset (or anything else): unset keeps an existing partition and builds none."""
    raw = (config.get(key) or "").lower()
    return True if raw == "true" else False if raw == "false" else None


@dataclass(frozen=True)
class RecordIndexSizing:
    """How a new record index sizes its file groups (Hudi's estimateFileGroupCount inputs)."""

    min_file_groups: int
    max_file_groups: int
    max_file_group_bytes: int
    growth_factor: float

    @classmethod
    def from_config(cls, config: HoodieConfig) -> RecordIndexSizing:
        return cls(int(config.get(RECORD_INDEX_MIN_FILE_GROUPS)), int(config.get(RECORD_INDEX_MAX_FILE_GROUPS)),
                   int(config.get(RECORD_INDEX_MAX_FILE_GROUP_SIZE)), float(config.get(RECORD_INDEX_GROWTH_FACTOR)))


@dataclass(frozen=True)
class MetadataTableSettings:
    """``hoodie.metadata.*``, record-index and statistics-index settings of one change that
    keeps the metadata table (``hoodie.metadata.enable=true``)."""

    #: hoodie.metadata.compact.max.delta.commits
    compact_max_delta_commits: int
    #: hoodie.metadata.max.deltacommits.when_pending
    max_delta_commits_when_pending: int
    #: the metadata table's archival rules, derived from the data table's (ArchiveSettings.of_metadata_table)
    archive: ArchiveSettings
    #: hoodie.metadata.record.index.enable: build the record index when missing
    record_index_enabled: bool
    #: how to size a new record index; None when it is not enabled (its keys are then not read)
    record_index_sizing: RecordIndexSizing | None
    #: hoodie.metadata.index.{column.stats,partition.stats,bloom.filter}.enable (None: unset)
    column_stats_enabled: bool | None
    partition_stats_enabled: bool | None
    bloom_filter_enabled: bool | None
    #: hoodie.metadata.index.secondary.enable: keep the secondary indexes (false: delete them)
    secondary_index_enabled: bool
    #: hoodie.metadata.index.column.stats.column.list
    column_stats_columns: tuple[str, ...]
    #: hoodie.metadata.index.column.stats.max.columns.to.index
    column_stats_max_columns: int
    #: hoodie.metadata.index.*.file.group.count of new statistics partitions
    column_stats_file_groups: int
    partition_stats_file_groups: int
    bloom_filter_file_groups: int
    #: spark.sql.session.timeZone: the zone expression indexes' datetime functions run in
    session_time_zone: str = "UTC"
    #: the bloom filter an expression index of type bloom_filters starts from (Hudi takes the
    #: data table's hoodie.index.bloom.* keys, then the index's own options)
    expression_bloom: BloomSettings = field(default_factory=BloomSettings)
    #: hoodie.metadata.index.expression.file.group.count of a new expression index
    expression_index_file_groups: int = 2

    @classmethod
    def for_change(cls, config: HoodieConfig) -> MetadataTableSettings | None:
        """The settings of a change run with ``config``; None when it runs with
        ``hoodie.metadata.enable=false`` (its other metadata keys are then not read)."""
        if not config.get_bool(METADATA_ENABLE):
            return None
        record_index = config.get_bool(RECORD_INDEX_ENABLE)
        return cls(
            compact_max_delta_commits=config.get_int(keys.COMPACT_MAX_DELTA_COMMITS),
            max_delta_commits_when_pending=config.get_int(keys.MAX_DELTA_COMMITS_WHEN_PENDING),
            archive=ArchiveSettings.of_metadata_table(config),
            record_index_enabled=record_index,
            record_index_sizing=RecordIndexSizing.from_config(config) if record_index else None,
            column_stats_enabled=_flag(config, keys.COLUMN_STATS_ENABLE),
            partition_stats_enabled=_flag(config, keys.PARTITION_STATS_ENABLE),
            bloom_filter_enabled=_flag(config, keys.BLOOM_FILTER_ENABLE),
            secondary_index_enabled=config.get_bool(keys.SECONDARY_INDEX_ENABLE),
            column_stats_columns=tuple(c.strip() for c in (config.get(keys.COLUMN_STATS_COLUMN_LIST) or "").split(",")
                                       if c.strip()),
            column_stats_max_columns=int(config.get(keys.COLUMN_STATS_MAX_COLUMNS) or 32),
            column_stats_file_groups=int(config.get(keys.COLUMN_STATS_FILE_GROUP_COUNT) or 2),
            partition_stats_file_groups=int(config.get(keys.PARTITION_STATS_FILE_GROUP_COUNT) or 1),
            bloom_filter_file_groups=int(config.get(keys.BLOOM_FILTER_FILE_GROUP_COUNT) or 4),
            session_time_zone=str(config.get(keys.SESSION_TIME_ZONE) or "UTC"),
            expression_bloom=BloomSettings.from_config(config),
            expression_index_file_groups=int(config.get(keys.EXPRESSION_INDEX_FILE_GROUP_COUNT) or 2),
        )

    @classmethod
    def defaults(cls) -> MetadataTableSettings:
        """Every key at its default (a caller that builds or services a metadata table with
        no write options of its own: tests, benchmarks, the CLI)."""
        settings = cls.for_change(HoodieConfig({METADATA_ENABLE: "true"}))
        assert settings is not None
        return settings
