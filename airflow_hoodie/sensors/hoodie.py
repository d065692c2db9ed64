"""Sensors that wait on a Hudi table's timeline.

Both sensors evaluate the same condition in all three modes (poke, reschedule,
deferrable) through :mod:`airflow_hoodie.triggers.timeline_condition`; a deferrable sensor
checks once in the worker (no deferral when the condition already holds), then hands
the wait to :class:`HoodieTimelineTrigger`. The matched instant is the task's XCom.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any, Iterable, Mapping, Sequence

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowException

from airflow_hoodie.health.due_condition import due_condition
from airflow_hoodie.hooks.hoodie import HoodieHook
from airflow_hoodie.storage_secrets import is_secret_option
from airflow_hoodie.triggers import timeline_condition
from airflow_hoodie.triggers.hoodie import HoodieTimelineTrigger
from airflow_hoodie.triggers.maintenance import HoodieMaintenanceDueTrigger, check_due

LAST_SEEN = "last_seen"


class _HoodieTimelineSensor(BaseSensorOperator):
    """Shared plumbing: where the table is, one probe, deferral."""

    template_fields: Sequence[str] = ("base_path", "storage_options")

    def __init__(
        self,
        *,
        base_path: str | None = None,
        hoodie_conn_id: str = HoodieHook.default_conn_name,
        storage_options: Mapping[str, Any] | None = None,
        deferrable: bool = False,
        hoodie_table_missing_timeout: float = 600.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.base_path = base_path
        self.hoodie_conn_id = hoodie_conn_id
        self.storage_options = storage_options
        self.deferrable = deferrable
        #: seconds a missing table is waited for before the sensor fails (a typo in the path
        #: would otherwise wait out ``timeout``); the sensor's own timeout still bounds the wait
        self.hoodie_table_missing_timeout = float(hoodie_table_missing_timeout)
        self._missing_since: float | None = None

    # subclasses build the condition (possibly from context, e.g. the last seen instant)
    def condition(self, context: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _location(self) -> tuple[str, dict[str, str]]:
        hook = HoodieHook(self.hoodie_conn_id, base_path=self.base_path,
                          storage_options=self.storage_options)
        cfg = hook.get_conn()
        return hook.require_base_path(), dict(cfg.storage_options)

    def _missing_deadline(self, context: Any) -> float:
        """Epoch seconds at which a still-missing table fails the wait: from the first poke
        (the first try's start in reschedule mode, where each poke is a new task run)."""
        ti = context.get("ti") if context else None
        first = None
        if ti is not None and self.reschedule:
            try:
                first = ti.get_first_reschedule_date(context)
            except Exception:  # noqa: BLE001 - no reschedule history: this poke is the first
                first = None
        if first is not None:
            return first.timestamp() + self.hoodie_table_missing_timeout
        if self._missing_since is None:
            self._missing_since = time.time()
        return self._missing_since + self.hoodie_table_missing_timeout

    def _probe(self, context: Any) -> tuple[dict[str, Any] | None, str, dict[str, str], dict[str, Any]]:
        base_uri, storage_options = self._location()
        condition = self.condition(context)
        views = timeline_condition.load_views(base_uri, storage_options)
        if views is None:
            deadline = self._missing_deadline(context)
            timeline_condition.check_table_appeared(base_uri, deadline)
            self.log.info("No Hudi table at %s yet; waiting (failing at %s if none appears: "
                          "hoodie_table_missing_timeout=%ss).", base_uri,
                          time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(deadline)),
                          int(self.hoodie_table_missing_timeout))
            return None, base_uri, storage_options, condition
        outcome = timeline_condition.evaluate(condition, views)
        if outcome is None:
            timeline_condition.check_not_futile(base_uri, storage_options, condition, views)
            self.log.info("Waiting on %s for %s", base_uri, self.describe(condition, views))
        return outcome, base_uri, storage_options, condition

    def describe(self, condition: Mapping[str, Any], views: list[timeline_condition.InstantView]) -> str:
        return str(condition)

    def poke(self, context: Any) -> bool | PokeReturnValue:
        outcome, *_ = self._probe(context)
        if outcome is None:
            return False
        self.log.info("Timeline condition met: %s", outcome)
        return PokeReturnValue(is_done=True, xcom_value=outcome)

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        outcome, base_uri, storage_options, condition = self._probe(context)
        if outcome is not None:
            self.log.info("Timeline condition met: %s", outcome)
            return outcome
        self.defer(
            trigger=self.trigger(base_uri, condition, {k: v for k, v in storage_options.items()
                                                       if not is_secret_option(k)}, context),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout) if self.timeout else None,
        )

    def trigger(self, base_uri: str, condition: dict[str, Any], storage_options: dict[str, str],
                context: Any) -> HoodieTimelineTrigger:
        """The trigger that waits in the triggerer (``storage_options`` without secrets: the
        triggerer resolves those from the connection)."""
        return HoodieTimelineTrigger(base_uri=base_uri, condition=condition, storage_options=storage_options,
                                     hoodie_conn_id=self.hoodie_conn_id, poll_interval=self.poke_interval,
                                     missing_deadline=self._missing_deadline(context))

    def execute_complete(self, context: Any, event: Mapping[str, Any] | None = None) -> Any:
        if not event or event.get("status") != "success":
            message = (event or {}).get("message", "the trigger ended without an event")
            raise AirflowException(f"{self.task_id}: {message}")
        outcome = {k: v for k, v in event.items() if k != "status"}
        self.log.info("Timeline condition met (deferred): %s", outcome)
        return outcome


class HoodieInstantSensor(_HoodieTimelineSensor):
    """Wait until an instant of the given actions reaches the given state.

    :param actions: e.g. ``["deltacommit"]``, ``["compaction"]`` (a compaction completes
        as a ``commit``; asking for ``compaction`` matches only compactions), ``["clustering"]``.
        None matches every action.
    :param state: ``"completed"`` (default), ``"inflight"`` or ``"requested"``; an instant
        that went further (e.g. completed while waiting for inflight) also matches.
    :param instant_time: wait for this very instant.
    :param after: match only instants past this one (its instant time) or past this
        checkpoint (an XCom's ``checkpoint``); ``"last_seen"`` means past the instant this
        sensor matched in its previous DAG run (any instant on the first run). On Hudi 1.x
        tables (versions 8, 9) a wait for completed instants goes by *completion* time, so a
        commit that completes after a newer one is still matched once, after it; on version 6
        and for requested/inflight waits it goes by instant time.

    :param fail_if_nothing_planned: when waiting only for compactions, clusterings or cleans
        (no ``instant_time``), fail at once with the planning run's reason if its latest run
        scheduled none and none is pending, instead of waiting for a later planning run.

    Every sensor also takes ``hoodie_table_missing_timeout`` (seconds, default 600): a path
    with no table fails then, not at the sensor's own ``timeout``.

    XCom: ``{"instant", "action", "kind", "state", "timestamp", "completion_time",
    "checkpoint", "matched": [...]}`` for the newest matching instant; pass ``checkpoint``
    as ``start=`` of an incremental :func:`~airflow_hoodie.table.read.read_table`.
    """

    template_fields: Sequence[str] = (*_HoodieTimelineSensor.template_fields, "instant_time", "after", "actions")

    def __init__(
        self,
        *,
        actions: Iterable[str] | None = ("commit", "deltacommit"),
        state: str = timeline_condition.COMPLETED,
        instant_time: str | None = None,
        after: str | None = None,
        fail_if_nothing_planned: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.actions = list(actions) if actions else None
        self.state = timeline_condition.normalize_state(state)
        self.instant_time = instant_time
        self.after = after
        self.fail_if_nothing_planned = fail_if_nothing_planned

    def _last_seen(self, context: Any) -> Mapping[str, Any] | None:
        ti = context.get("ti") if context else None
        if ti is None:
            return None
        try:
            previous = ti.xcom_pull(task_ids=self.task_id, key="return_value", include_prior_dates=True)
        except Exception as exc:  # noqa: BLE001 - no history is a valid answer
            self.log.info("No previous match to start after (%s)", exc)
            return None
        if isinstance(previous, list):  # some backends return one value per run
            previous = next((p for p in reversed(previous) if p), None)
        return previous if isinstance(previous, Mapping) else None

    def condition(self, context: Any) -> dict[str, Any]:
        after = self.after
        if after == LAST_SEEN:
            previous = self._last_seen(context) or {}
            # an XCom of an older release has no checkpoint: go on after the instant it named
            after = previous.get("checkpoint") or previous.get("instant")
        return timeline_condition.instant_condition(
            actions=self.actions, state=self.state, instant_time=self.instant_time, after=after,
            fail_if_nothing_planned=self.fail_if_nothing_planned,
        )

    def describe(self, condition: Mapping[str, Any], views: list[timeline_condition.InstantView]) -> str:
        latest = views[-1] if views else None
        what = "/".join(condition["actions"] or ["any action"])
        where = f"instant {condition['instant_time']}" if condition["instant_time"] else (
            f"an instant after {condition['after']}" if condition["after"] else "an instant")
        return f"{where} of {what} to reach {condition['state']} (latest on the timeline: " \
               f"{latest.timestamp + ' ' + latest.action + ' ' + latest.state if latest else 'none'})"


class HoodiePendingServiceSensor(_HoodieTimelineSensor):
    """Wait until no table service (compaction, clustering, ...) is pending.

    :param services: any of ``compaction``, ``logcompaction``, ``clustering``.

    XCom: ``{"pending": [], "services": [...], "instant": <latest completed instant>,
    "completion_time", "checkpoint"}``.
    """

    def __init__(
        self,
        *,
        services: Iterable[str] = ("compaction", "clustering"),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.services = list(services)
        timeline_condition.no_pending_condition(self.services)  # fail at parse time on a typo

    def condition(self, context: Any) -> dict[str, Any]:
        return timeline_condition.no_pending_condition(self.services)

    def describe(self, condition: Mapping[str, Any], views: list[timeline_condition.InstantView]) -> str:
        pending = timeline_condition.pending_services(views, condition["services"])
        return "pending " + ", ".join(f"{v.kind} {v.timestamp} ({v.state})" for v in pending)


class HoodieMaintenanceDueSensor(_HoodieTimelineSensor):
    """Wait until the table's services are due by the table's own figures, instead of cron.

    :param compaction_due: compaction's own trigger holds (strategy and delta commits).
    :param services_due: any of ``compaction``, ``clustering``, ``clean``, ``archival`` due.
    :param delta_commits: at least this many delta commits since the last compaction.
    :param log_bytes: the latest slices' log files hold at least this many bytes.
    :param small_file_groups: at least this many base files under the small-file limit.
    :param pending_older_than: a pending instant (a stuck writer or service) at least this
        many seconds old.
    :param match: ``"any"`` (default) or ``"all"`` of the thresholds given.
    :param hoodie_conf: the write settings the services run with (keep.min/max, cleaner,
        compaction trigger), which their due rules use.

    XCom: ``{"met": [<each threshold that holds, in words>], "health": <table_health()>}``.
    """

    template_fields: Sequence[str] = (*_HoodieTimelineSensor.template_fields, "hoodie_conf")

    def __init__(self, *, compaction_due: bool = False, services_due: Iterable[str] = (),
                 delta_commits: int | None = None, log_bytes: int | None = None, small_file_groups: int | None = None,
                 pending_older_than: float | None = None, match: str = "any",
                 hoodie_conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._condition = due_condition(compaction_due=compaction_due, services_due=services_due,
                                        delta_commits=delta_commits, log_bytes=log_bytes,
                                        small_file_groups=small_file_groups, pending_older_than=pending_older_than,
                                        match=match)  # a bad threshold fails at parse time
        self.hoodie_conf = dict(hoodie_conf or {})

    def condition(self, context: Any) -> dict[str, Any]:
        return dict(self._condition)

    def _settings(self) -> dict[str, str]:
        hook = HoodieHook(self.hoodie_conn_id, base_path=self.base_path, storage_options=self.storage_options,
                          hoodie_conf=self.hoodie_conf)
        return {str(k): str(v) for k, v in hook.get_conn().hoodie_conf.items()}

    def _probe(self, context: Any) -> tuple[dict[str, Any] | None, str, dict[str, str], dict[str, Any]]:
        base_uri, storage_options = self._location()
        condition = self.condition(context)
        outcome = check_due(base_uri, storage_options, condition, self._settings(), self._missing_deadline(context))
        if outcome is None:
            self.log.info("Waiting on %s for maintenance to be due: %s", base_uri, condition)
        return outcome, base_uri, storage_options, condition

    def trigger(self, base_uri: str, condition: dict[str, Any], storage_options: dict[str, str],
                context: Any) -> HoodieTimelineTrigger:
        return HoodieMaintenanceDueTrigger(base_uri=base_uri, condition=condition, hoodie_conf=self._settings(),
                                           storage_options=storage_options, hoodie_conn_id=self.hoodie_conn_id,
                                           poll_interval=self.poke_interval,
                                           missing_deadline=self._missing_deadline(context))
