"""Deferrable writes: wait in the triggerer for a cluster-mode driver and its instant.

The operator submits the job in cluster deploy mode and defers; this trigger polls the
driver's status with the apache-spark provider's own tracking (the standalone master's
status API, the YARN ResourceManager REST API, the Kubernetes driver pod's phase) and the table's
timeline for the instant carrying the task's write identity. No worker slot is held
meanwhile. Its kwargs hold connection ids, never credentials.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, AsyncIterator

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_hoodie.actions.write_identity import result_of
from airflow_hoodie.hooks.hoodie import HoodieHook
from airflow_hoodie.hooks.driver_tracking import STANDALONE, DriverRef, driver_state

FAILED_DRIVER_STATES = ("FAILED", "KILLED", "ERROR", "UNKNOWN")
ACTIVE_DRIVER_STATES = ("SUBMITTED", "RUNNING", "RELAUNCHING")
#: polls after the driver FINISHED during which its instant may still be listing
FINISHED_GRACE_POLLS = 5


@dataclass
class WriteWatch:
    """Polls of one cluster-mode write: done when the timeline holds the instant carrying
    the task's write identity, failed when its driver failed (or finished without one).
    The trigger runs it in the triggerer; a durable task on the worker runs it in a loop."""

    base_path: str
    write_id: str
    spark_conn_id: str
    driver: DriverRef
    hoodie_conn_id: str | None = None
    finished_polls: int = 0

    def poll(self) -> tuple[dict[str, Any] | None, str | None]:
        """(result, None) when done, (None, error message) when failed, (None, None) meanwhile."""
        hook = HoodieHook(self.hoodie_conn_id, base_path=self.base_path)
        found = hook.find_write(self.write_id)
        if found.completed is not None:
            return result_of(found, self.base_path), None
        status = driver_state(self.spark_conn_id, self.driver)
        if status in FAILED_DRIVER_STATES:
            return None, f"driver {self.driver.driver_id} ended {status}; its error is in the driver's log on the cluster"
        if status == "FINISHED":
            self.finished_polls += 1
            if self.finished_polls > FINISHED_GRACE_POLLS:
                return None, (f"driver {self.driver.driver_id} finished but no instant on {self.base_path} "
                              f"carries write identity {self.write_id}")
        return None, None


class HoodieWriteTrigger(BaseTrigger):
    """Fires when the instant with ``write_id`` completes, or fails with the driver."""

    def __init__(self, base_path: str, write_id: str, spark_conn_id: str, driver_id: str,
                 hoodie_conn_id: str | None = None, poll_interval: float = 10.0,
                 cluster_manager: str = STANDALONE) -> None:
        super().__init__()
        self.base_path = base_path
        self.write_id = write_id
        self.spark_conn_id = spark_conn_id
        self.driver_id = driver_id
        self.cluster_manager = cluster_manager
        self.hoodie_conn_id = hoodie_conn_id
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "base_path": self.base_path, "write_id": self.write_id, "spark_conn_id": self.spark_conn_id,
            "driver_id": self.driver_id, "hoodie_conn_id": self.hoodie_conn_id, "poll_interval": self.poll_interval,
            "cluster_manager": self.cluster_manager})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        watch = WriteWatch(self.base_path, self.write_id, self.spark_conn_id,
                           DriverRef(self.cluster_manager, self.driver_id), self.hoodie_conn_id)
        while True:
            result, error = await asyncio.to_thread(watch.poll)
            if result is not None:
                yield TriggerEvent({"status": "success", "result": result})
                return
            if error is not None:
                yield TriggerEvent({"status": "error", "message": error})
                return
            await asyncio.sleep(self.poll_interval)
