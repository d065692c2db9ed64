"""Keys of the concurrency model: the mode, the failed-writes policy and the heartbeats of
pending instants (Hudi's HoodieWriteConfig, HoodieCleanConfig, HoodieHeartbeatClient)."""

from __future__ import annotations

from airflow_hoodie.config import ConfigKey, register

CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
FAILED_WRITES_POLICY = "hoodie.cleaner.policy.failed.writes"
#: Hudi 1.x's name of the same setting (HoodieCleanConfig.FAILED_WRITES_CLEANER_POLICY)
FAILED_WRITES_POLICY_1X = "hoodie.clean.failed.writes.policy"
SINGLE_WRITER = "SINGLE_WRITER"
OCC = "OPTIMISTIC_CONCURRENCY_CONTROL"
#: Hudi 1.x's non-blocking concurrency control (RFC-66): MERGE_ON_READ + simple bucket index
NBCC = "NON_BLOCKING_CONCURRENCY_CONTROL"
#: the modes with several writers on one table (Hudi's WriteConcurrencyMode.supportsMultiWriter)
MULTI_WRITER_MODES = (OCC, NBCC)
EAGER, LAZY = "EAGER", "LAZY"
INTERVAL_MS = "hoodie.client.heartbeat.interval_in_ms"
TOLERABLE_MISSES = "hoodie.client.heartbeat.tolerable.misses"

register(
    ConfigKey(CONCURRENCY_MODE, SINGLE_WRITER, "SINGLE_WRITER, OPTIMISTIC_CONCURRENCY_CONTROL or "
              "NON_BLOCKING_CONCURRENCY_CONTROL (MERGE_ON_READ tables with the simple bucket index, version 8+)"),
    ConfigKey(FAILED_WRITES_POLICY, EAGER, "EAGER: a writer rolls back failed writes at start; LAZY: clean does, "
              "after their heartbeat expired (required with several writers)", (FAILED_WRITES_POLICY_1X,)),
    ConfigKey(INTERVAL_MS, "60000", "How often a pending instant's heartbeat is refreshed"),
    ConfigKey(TOLERABLE_MISSES, "2", "Missed heartbeats after which a pending instant counts as failed"),
)
