"""What a change (a write or a table service) tells the table it changes, parsed once per change.

Whether it keeps the metadata table, with which settings (:class:`MetadataTableSettings`; None
with ``hoodie.metadata.enable=false``), and how long its instant times wait out the expected
clock skew of Hudi 1.x's time generator. ``actions.commit`` hands these to the table; the
table stores the parsed values, never the job's options.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.time_generator import MAX_EXPECTED_CLOCK_SKEW_MS
from airflow_hoodie.settings.metadata_table import MetadataTableSettings


@dataclass(frozen=True)
class ChangeSettings:
    #: the metadata table's settings; None when the change runs with hoodie.metadata.enable=false
    metadata: MetadataTableSettings | None
    #: hoodie.time.generator.max_expected_clock_skew_ms
    clock_skew_ms: int

    @classmethod
    def from_config(cls, config: HoodieConfig | None) -> ChangeSettings:
        config = config or HoodieConfig({})
        return cls(MetadataTableSettings.for_change(config), config.get_int(MAX_EXPECTED_CLOCK_SKEW_MS))

    @classmethod
    def default(cls) -> ChangeSettings:
        """A change no job configured: Hudi's defaults (the metadata table kept)."""
        return cls.from_config(None)
