"""Keys of Hudi 1.x's instant time generator (HoodieTimeGeneratorConfig, Hudi's defaults)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

MAX_EXPECTED_CLOCK_SKEW_MS = "hoodie.time.generator.max_expected_clock_skew_ms"
#: Hudi's default, what a table waits out when no change configured it (a reader taking a time)
DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS = 200

register(
    ConfigKey(MAX_EXPECTED_CLOCK_SKEW_MS, str(DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS),
              "On Hudi 1.x tables (versions 8 and 9), milliseconds a writer waits after taking an instant or "
              "completion time, so a writer on a host whose clock runs up to this far behind still takes a "
              "later one"),
)
