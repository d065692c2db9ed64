"""HoodieMaintenanceDueTrigger: waits in the triggerer until a table's health meets a
maintenance-due condition (:mod:`airflow_hoodie.health.due_condition`).

The same loop as :class:`~airflow_hoodie.triggers.hoodie.HoodieTimelineTrigger` (each poll
in a worker thread, flaky-store tolerance, a deadline for a missing table); only the check
differs: a health computation instead of a timeline condition.
"""

from __future__ import annotations

from typing import Any, Mapping

from airflow_hoodie.health.due_condition import met
from airflow_hoodie.health.table_health import table_health
from airflow_hoodie.table.storage.storage import Storage
from airflow_hoodie.table.timeline.timeline_paths import meta_path
from airflow_hoodie.triggers import timeline_condition
from airflow_hoodie.triggers.hoodie import HoodieTimelineTrigger


def check_due(base_uri: str, storage_options: Mapping[str, Any] | None, condition: Mapping[str, Any],
              hoodie_conf: Mapping[str, str] | None, missing_deadline: float | None = None) -> dict[str, Any] | None:
    """Blocking: the health object with the condition's parts that hold, or None (no table yet,
    or not due). A table still missing at ``missing_deadline`` raises, as timeline waits do."""
    storage, base = Storage.for_uri(base_uri, storage_options)
    if not storage.exists(Storage.join(meta_path(base), "hoodie.properties")):
        timeline_condition.check_table_appeared(base_uri, missing_deadline)
        return None
    health = table_health(base_uri, storage_options, hoodie_conf)
    held = met(condition, health)
    return None if held is None else {"met": held, "health": health}


class HoodieMaintenanceDueTrigger(HoodieTimelineTrigger):
    """Poll a table's health until ``condition`` holds; the event carries the health object.

    :param hoodie_conf: the write settings the services run with (their due rules use them).
    The other parameters are :class:`HoodieTimelineTrigger`'s.
    """

    def __init__(self, base_uri: str, condition: Mapping[str, Any], hoodie_conf: Mapping[str, str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(base_uri, condition, **kwargs)
        self.hoodie_conf = dict(hoodie_conf or {})

    def serialize(self) -> tuple[str, dict[str, Any]]:
        path, kwargs = super().serialize()
        return f"{type(self).__module__}.{type(self).__qualname__}", {**kwargs, "hoodie_conf": self.hoodie_conf}

    def _check(self) -> dict[str, Any] | None:
        return check_due(self.base_uri, self._storage_options(), self.condition, self.hoodie_conf,
                         self.missing_deadline)
