"""Whether a write logs its changes for CDC queries, and how: parsed once per write.

``hoodie.table.cdc.*`` are table properties: a new table takes them from its first write's
options (and stores them), an existing table's own properties decide. A write that asks for
something else than its table does is refused, so a consumer never gets fewer changes logged
than it asked for without hearing of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.cdc import CDC_ENABLED, CDC_LOGGING_MODE
from airflow_hoodie.errors import HoodieConfigError

_MODES = ("OP_KEY_ONLY", "DATA_BEFORE", "DATA_BEFORE_AFTER")


def _mode(value: str, where: str) -> str:
    mode = value.strip().upper()
    if mode not in _MODES:
        raise HoodieConfigError(f"{CDC_LOGGING_MODE.key}={value!r} ({where}) is not a supplemental logging mode; "
                                f"use one of {', '.join(_MODES)}.")
    return mode


@dataclass(frozen=True)
class CdcSettings:
    #: the table logs changes (hoodie.table.cdc.enabled)
    enabled: bool = False
    #: HoodieCDCSupplementalLoggingMode, upper case
    mode: str = "DATA_BEFORE_AFTER"

    @classmethod
    def from_config(cls, config: HoodieConfig, table_props: Mapping[str, str] | None) -> CdcSettings:
        """``config``: the write's options; ``table_props``: the existing table's hoodie.properties
        (None for a table the write creates)."""
        asked = config.get_bool(CDC_ENABLED.key) if CDC_ENABLED.key in config else None
        asked_mode = _mode(config.get(CDC_LOGGING_MODE.key), "write option") if CDC_LOGGING_MODE.key in config \
            else None
        if table_props is None:
            return cls(bool(asked), asked_mode or CDC_LOGGING_MODE.default or "DATA_BEFORE_AFTER")
        enabled = (table_props.get(CDC_ENABLED.key) or "false").strip().lower() == "true"
        mode = _mode(table_props.get(CDC_LOGGING_MODE.key) or "DATA_BEFORE_AFTER", "table property")
        if asked is not None and asked != enabled:
            raise HoodieConfigError(
                f"The write sets {CDC_ENABLED.key}={str(asked).lower()} but the table stores "
                f"{str(enabled).lower()}; it is a table property fixed at creation. Nothing was written: drop the option.")
        if enabled and asked_mode is not None and asked_mode != mode:
            raise HoodieConfigError(
                f"The write sets {CDC_LOGGING_MODE.key}={asked_mode} but the table logs {mode}; nothing was written: "
                "drop the option.")
        return cls(enabled, mode)
