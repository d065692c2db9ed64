"""Keys of the concurrency model: the mode, the failed-writes policy and the heartbeats of
pending instants (Hudi's HoodieWriteConfig, HoodieCleanConfig, HoodieHeartbeatClient)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
FAILED_WRITES_POLICY = "hoodie.cleaner.policy.failed.writes"
SINGLE_WRITER = "SINGLE_WRITER"
OCC = "OPTIMISTIC_CONCURRENCY_CONTROL"
EAGER, LAZY = "EAGER", "LAZY"
INTERVAL_MS = "hoodie.client.heartbeat.interval_in_ms"
TOLERABLE_MISSES = "hoodie.client.heartbeat.tolerable.misses"

register(
    ConfigKey(CONCURRENCY_MODE, SINGLE_WRITER, "SINGLE_WRITER or OPTIMISTIC_CONCURRENCY_CONTROL"),
    ConfigKey(FAILED_WRITES_POLICY, EAGER, "EAGER: a writer rolls back failed writes at start; LAZY: clean does, "
              "after their heartbeat expired (required with OPTIMISTIC_CONCURRENCY_CONTROL)"),
    ConfigKey(INTERVAL_MS, "60000", "How often a pending instant's heartbeat is refreshed"),
    ConfigKey(TOLERABLE_MISSES, "2", "Missed heartbeats after which a pending instant counts as failed"),
)
