"""The clean service's settings (Hudi's HoodieCleanConfig), parsed once per clean.

Archival reads the cleaner's retention too (its bounds follow what the cleaner keeps), so
the policy is parsed here, once, for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.clean import (
    COMMITS_RETAINED,
    FILE_VERSIONS_RETAINED,
    HOURS_RETAINED,
)
from airflow_hoodie.config_keys.metadata_table import (
    CLEANER_COMMITS_RETAINED as METADATA_CLEANER_COMMITS_RETAINED,
)
from airflow_hoodie.settings.action import ActionSettings
from airflow_hoodie.settings.clean_policy import (  # noqa: F401 - the policies, for callers
    KEEP_LATEST_BY_HOURS,
    KEEP_LATEST_COMMITS,
    KEEP_LATEST_FILE_VERSIONS,
    POLICIES,
    policy_of,
)
from airflow_hoodie.settings.lock import LockSettings


@dataclass(frozen=True)
class CleanSettings:
    policy: str = KEEP_LATEST_COMMITS
    commits_retained: int = 10
    hours_retained: int = 24
    file_versions_retained: int = 3
    #: the lock and commit options of the clean (a metadata table's clean takes the defaults)
    action: ActionSettings = field(default_factory=ActionSettings.default)

    @classmethod
    def from_config(cls, config: HoodieConfig | None) -> CleanSettings:
        config = config or HoodieConfig({})
        return cls(policy_of(config), config.get_int(COMMITS_RETAINED), config.get_int(HOURS_RETAINED),
                   config.get_int(FILE_VERSIONS_RETAINED), ActionSettings.from_config(config))

    @property
    def lock(self) -> LockSettings:
        return self.action.lock

    @classmethod
    def of_metadata_table(cls) -> CleanSettings:
        """A metadata table's cleaner: fixed by Hudi, not by the data table's keys."""
        return cls(KEEP_LATEST_COMMITS, METADATA_CLEANER_COMMITS_RETAINED)
