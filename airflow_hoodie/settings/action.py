"""What every action that completes an instant takes from its job, besides its own keys.

The lock and heartbeats it runs under, and the commit-metadata options it records: Hudi copies
every option whose key starts with ``hoodie.datasource.write.commitmeta.key.prefix`` (``_`` by default) into the completed
instant's ``extraMetadata``, which is also where a task's write identity travels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.write import COMMIT_META_PREFIX
from airflow_hoodie.settings.change import ChangeSettings
from airflow_hoodie.settings.lock import LockSettings

#: the identity's key after the prefix, e.g. ``_airflow.write.id``
WRITE_ID_SUFFIX = "airflow.write.id"


def write_id_key(config: HoodieConfig) -> str:
    """The extra-metadata key of a task's write identity under ``config``'s prefix."""
    return (config.get(COMMIT_META_PREFIX) or "_") + WRITE_ID_SUFFIX


@dataclass(frozen=True)
class ActionSettings:
    lock: LockSettings
    #: the options Hudi copies into the completed instant's ``extraMetadata``
    extra_metadata: Mapping[str, str] = field(default_factory=dict)
    #: the extra-metadata key of a write identity
    write_id_key: str = "_" + WRITE_ID_SUFFIX
    #: the caller's write identity, when its job was given one
    write_id: str | None = None
    #: what the change tells the table: metadata-table settings, expected clock skew
    change: ChangeSettings = field(default_factory=ChangeSettings.default)

    @classmethod
    def from_config(cls, config: HoodieConfig | None) -> ActionSettings:
        config = config or HoodieConfig({})
        prefix = config.get(COMMIT_META_PREFIX) or "_"
        extra = {k: str(v) for k, v in config.as_dict().items() if k.startswith(prefix)}
        key = prefix + WRITE_ID_SUFFIX
        return cls(LockSettings.from_config(config), extra, key, config.get(key) or None,
                   ChangeSettings.from_config(config))

    @classmethod
    def default(cls) -> ActionSettings:
        """A single writer's settings with Hudi's defaults (an action no job configured, such as
        the metadata table's own services)."""
        return cls.from_config(None)
