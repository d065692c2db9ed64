"""Keys of the compaction service (Hudi's HoodieCompactionConfig)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

TRIGGER_STRATEGY = "hoodie.compact.inline.trigger.strategy"
MAX_DELTA_COMMITS = "hoodie.compact.inline.max.delta.commits"
MAX_DELTA_SECONDS = "hoodie.compact.inline.max.delta.seconds"
TARGET_IO_MB = "hoodie.compaction.target.io"
LOGFILE_SIZE_THRESHOLD = "hoodie.compaction.logfile.size.threshold"

register(
    ConfigKey(TRIGGER_STRATEGY, "NUM_COMMITS", "NUM_COMMITS, TIME_ELAPSED, NUM_AND_TIME or NUM_OR_TIME"),
    ConfigKey(MAX_DELTA_COMMITS, "5", "Delta commits since the last compaction that trigger one"),
    ConfigKey(MAX_DELTA_SECONDS, str(60 * 60), "Seconds since the last compaction that trigger one"),
    ConfigKey(TARGET_IO_MB, str(500 * 1024), "IO budget (MB) of one compaction plan"),
    ConfigKey(LOGFILE_SIZE_THRESHOLD, "0", "Only compact file slices whose logs total at least this many bytes"),
    ConfigKey("hoodie.compaction.strategy",
              "org.apache.hudi.table.action.compact.strategy.LogFileSizeBasedCompactionStrategy"),
)
