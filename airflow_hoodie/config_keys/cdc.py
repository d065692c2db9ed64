"""Keys of change data capture (Hudi's HoodieTableConfig CDC keys): table properties a table's
first write stores, which every later writer then honours."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

CDC_ENABLED = ConfigKey(
    "hoodie.table.cdc.enabled",
    "false",
    "Log the changes of every write (.cdc log files) so CDC queries need not diff file versions.",
)
CDC_LOGGING_MODE = ConfigKey(
    "hoodie.table.cdc.supplemental.logging.mode",
    "DATA_BEFORE_AFTER",
    "What a CDC log record holds: OP_KEY_ONLY, DATA_BEFORE or DATA_BEFORE_AFTER (before and after images).",
)
register(CDC_ENABLED, CDC_LOGGING_MODE)
