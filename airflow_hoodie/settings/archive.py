"""The archival settings (Hudi's HoodieArchivalConfig and the bounds it takes from the
cleaner and the compaction trigger), parsed and validated once per archival.

One object serves both timeline layouts: version 6 merges small archive files (the
``merge_*`` keys), versions 8 and 9 compact the LSM timeline (:class:`LsmSettings`). The lock
and commit options an archival runs with are its :class:`ActionSettings`, parsed beside it;
a metadata table's archival (:meth:`ArchiveSettings.of_metadata_table`) runs inside its data
table's change and has none of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.archive import (
    BATCH,
    BEYOND_SAVEPOINT,
    MAX_COMMITS,
    MERGE_ENABLE,
    MERGE_FILES_BATCH,
    MERGE_SMALL_FILE_LIMIT,
    MIN_COMMITS,
)
from airflow_hoodie.config_keys.clean import COMMITS_RETAINED, HOURS_RETAINED
from airflow_hoodie.config_keys.compaction import MAX_DELTA_COMMITS, TRIGGER_STRATEGY
from airflow_hoodie.config_keys.metadata_table import (
    CLEANER_COMMITS_RETAINED as METADATA_CLEANER_COMMITS_RETAINED,
)
from airflow_hoodie.config_keys.metadata_table import (
    COMPACT_MAX_DELTA_COMMITS as METADATA_COMPACT_MAX_DELTA_COMMITS,
)
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.settings.clean_policy import KEEP_LATEST_COMMITS, policy_of
from airflow_hoodie.table.timeline.lsm_timeline_writer import LsmSettings


def validate_archive_config(config: HoodieConfig) -> None:
    """Hudi's write-config checks: max > min > cleaner.commits.retained."""

    min_c, max_c = config.get_int(MIN_COMMITS), config.get_int(MAX_COMMITS)
    retained = config.get_int(COMMITS_RETAINED)
    if min_c <= 0:
        raise HoodieConfigError(f"{MIN_COMMITS}={min_c} must be positive.")
    if max_c <= min_c:
        raise HoodieConfigError(
            f"Increase {MAX_COMMITS}={max_c} to be greater than {MIN_COMMITS}={min_c}."
        )
    if min_c <= retained:
        raise HoodieConfigError(
            f"Increase {MIN_COMMITS}={min_c} to be greater than {COMMITS_RETAINED}={retained}. "
            "Otherwise, there is risk of incremental pull missing data from few instants "
            "(the cleaner may keep file slices of commits that are no longer on the active timeline)."
        )


@dataclass(frozen=True)
class ArchiveSettings:
    """What the archiver reads: its own keys plus the cleaning and compaction settings that
    Hudi's archiver takes its bounds from."""

    min_commits: int
    max_commits: int
    batch: int
    beyond_savepoint: bool
    cleaner_policy: str = KEEP_LATEST_COMMITS
    cleaner_commits_retained: int = 10
    cleaner_hours_retained: int = 24
    compaction_trigger: str = "NUM_COMMITS"
    max_delta_commits: int = 5
    #: ``hoodie.metadata.compact.max.delta.commits``: why the metadata table holds archival back
    metadata_max_delta_commits: int = 10
    #: version 6: merge small archive files
    merge_enable: bool = False
    merge_small_file_limit: int = 20 * 1024 * 1024
    merge_files_batch: int = 10
    #: versions 8 and 9: how the LSM timeline compacts
    lsm: LsmSettings = field(default_factory=LsmSettings)

    @classmethod
    def from_config(cls, config: HoodieConfig) -> ArchiveSettings:
        validate_archive_config(config)
        return cls(config.get_int(MIN_COMMITS), config.get_int(MAX_COMMITS), config.get_int(BATCH),
                   config.get_bool(BEYOND_SAVEPOINT), policy_of(config), config.get_int(COMMITS_RETAINED),
                   config.get_int(HOURS_RETAINED), (config.get(TRIGGER_STRATEGY) or "NUM_COMMITS").upper(),
                   config.get_int(MAX_DELTA_COMMITS), config.get_int(METADATA_COMPACT_MAX_DELTA_COMMITS),
                   config.get_bool(MERGE_ENABLE), config.get_int(MERGE_SMALL_FILE_LIMIT),
                   config.get_int(MERGE_FILES_BATCH), LsmSettings.from_config(config))

    @classmethod
    def of_metadata_table(cls, config: HoodieConfig) -> ArchiveSettings:
        """The archival settings of a metadata table, as Hudi derives its write config from the
        data table's (HoodieMetadataWriteUtils): keep.min/max one above the data table's, its
        own cleaner (KEEP_LATEST_COMMITS, 20 commits) and compaction trigger, the other keys at
        their defaults."""
        defaults = HoodieConfig({})
        max_deltas = config.get_int(METADATA_COMPACT_MAX_DELTA_COMMITS)
        return cls(config.get_int(MIN_COMMITS) + 1, config.get_int(MAX_COMMITS) + 1,
                   defaults.get_int(BATCH), defaults.get_bool(BEYOND_SAVEPOINT), KEEP_LATEST_COMMITS,
                   METADATA_CLEANER_COMMITS_RETAINED, defaults.get_int(HOURS_RETAINED),
                   "NUM_COMMITS", max_deltas, max_deltas, lsm=LsmSettings.from_config(config))
