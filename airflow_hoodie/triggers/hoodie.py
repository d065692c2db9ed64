"""HoodieTimelineTrigger: waits in the triggerer until a timeline condition holds.

The triggerer runs every trigger of the deployment on one asyncio loop, so a trigger
must never block it. Listing ``.hoodie/`` is blocking I/O (local disk or an object
store), hence each poll runs :func:`timeline_condition.check` in a worker thread through
``asyncio.to_thread`` and the loop only ever awaits.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Mapping

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_hoodie.errors import HoodieWaitFutileError
from airflow_hoodie.hooks.hoodie import HoodieHook
from airflow_hoodie.triggers import timeline_condition


class HoodieTimelineTrigger(BaseTrigger):
    """Poll a Hudi table's timeline until ``condition`` holds; one event, then done.

    :param base_uri: table base path or URI.
    :param condition: from :func:`timeline_condition.instant_condition` or
        :func:`timeline_condition.no_pending_condition` (plain JSON, stored with the trigger).
    :param storage_options: pyarrow filesystem options without credentials.
    :param hoodie_conn_id: connection whose storage credentials are resolved in the triggerer.
    :param poll_interval: seconds between two listings.
    :param missing_deadline: epoch seconds after which a path with no table ends the wait
        with an ``error`` event (the sensor's ``hoodie_table_missing_timeout``).
    :param max_consecutive_errors: polls in a row that may fail (a flaky object store)
        before the trigger gives up with an ``error`` event.

    Events: ``{"status": "success", "instant": ..., ...}`` with the probe's outcome, or
    ``{"status": "error", "message": ...}``.
    """

    def __init__(
        self,
        base_uri: str,
        condition: Mapping[str, Any],
        storage_options: Mapping[str, Any] | None = None,
        poll_interval: float = 30.0,
        max_consecutive_errors: int = 3,
        hoodie_conn_id: str | None = None,
        missing_deadline: float | None = None,
    ) -> None:
        super().__init__()
        self.hoodie_conn_id = hoodie_conn_id
        self.base_uri = base_uri
        self.condition = dict(condition)
        self.storage_options = dict(storage_options or {})
        self.poll_interval = float(poll_interval)
        self.max_consecutive_errors = int(max_consecutive_errors)
        self.missing_deadline = missing_deadline

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "base_uri": self.base_uri,
                "condition": self.condition,
                "storage_options": self.storage_options,
                "poll_interval": self.poll_interval,
                "max_consecutive_errors": self.max_consecutive_errors,
                "hoodie_conn_id": self.hoodie_conn_id,
                "missing_deadline": self.missing_deadline,
            },
        )

    def _storage_options(self) -> dict[str, str]:
        """The serialized options plus the connection's credentials, resolved here in the
        triggerer: a secret is never part of the trigger's serialized kwargs."""
        if not self.hoodie_conn_id:
            return dict(self.storage_options)
        hook = HoodieHook(self.hoodie_conn_id, base_path=self.base_uri, storage_options=self.storage_options)
        return dict(hook.get_conn().storage_options)

    def _check(self) -> dict[str, Any] | None:
        return timeline_condition.check(self.base_uri, self._storage_options(), self.condition, self.missing_deadline)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        errors = 0
        while True:
            try:
                outcome = await asyncio.to_thread(self._check)
                errors = 0
            except HoodieWaitFutileError as exc:  # not a flaky store: the wait cannot end
                yield TriggerEvent({"status": "error", "message": str(exc)})
                return
            except Exception as exc:  # noqa: BLE001 - reported through the event
                errors += 1
                self.log.warning("Reading the timeline of %s failed (%d/%d): %s",
                                 self.base_uri, errors, self.max_consecutive_errors, exc)
                if errors >= self.max_consecutive_errors:
                    yield TriggerEvent({
                        "status": "error",
                        "message": f"Cannot read the timeline of {self.base_uri}: {type(exc).__name__}: {exc}",
                    })
                    return
                outcome = None
            if outcome is not None:
                self.log.info("Timeline condition met on %s: %s", self.base_uri, outcome)
                yield TriggerEvent({"status": "success", **outcome})
                return
            await asyncio.sleep(self.poll_interval)
