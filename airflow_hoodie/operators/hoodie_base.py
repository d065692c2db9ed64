"""The one base of the provider's operators: :class:`HoodieBaseOperator` runs a
``spark_jobs/*.py`` script through :class:`HoodieHook` (spark-submit) and returns the job's
JSON result, so it lands in XCom as ``return_value``; the instant is also pushed under the
key ``instant``. In cluster deploy mode it can defer to the triggerer, which watches the
driver and the timeline; a retry finds a committed write's result on the timeline.

Nothing to do (the job answered ``{"instant": null, ...}``): the task succeeds and logs
why, or raises AirflowSkipException with ``on_nothing_to_do="skip"``. Either way no
Asset event is emitted, so downstream DAGs scheduled on the table only run when the
table really changed.

Writing operators (upsert, compaction execute, clustering, rollback) put the table's
Asset in ``outlets`` automatically when ``base_path`` is a literal, as a reference by its
canonical URI (``Asset.ref(uri=...)``): the event lands on the one Asset with that URI,
however the DAG scheduled on it spelled it (``Asset("hudi+s3a://b/t/")`` with its raw
name, ``hoodie_table_asset("s3://b/t")``, a name of its own), instead of on a second Asset
of the same table that nobody schedules on. The event's ``extra`` carries the instant,
action and operation so consumers know what changed. With a templated ``base_path``, pass
``outlets=[hoodie_table_asset(...)]`` or an ``AssetAlias`` (the operator then attaches the
table's Asset to the alias at run time).
"""
from __future__ import annotations

import os
import time
from typing import Any, ClassVar, Mapping, Sequence

from airflow.providers.common.compat.sdk import ResumableJobMixin
from airflow.providers.openlineage.extractors import OperatorLineage
from airflow.sdk import Asset, AssetAlias, BaseOperator, conf
from airflow.sdk.exceptions import AirflowSkipException

from airflow_hoodie.actions.write_identity import format_write_id
from airflow_hoodie.assets import hoodie_table_asset, is_table_asset, table_asset_uri
from airflow_hoodie.config import HoodieConfig, parse_properties
from airflow_hoodie.errors import HoodieError, HoodieJobError, HoodieTableNotFoundError
from airflow_hoodie.health.table_health import compact as compact_health
from airflow_hoodie.health.table_health import table_health
from airflow_hoodie.hooks.hoodie import HoodieHook
from airflow_hoodie.hooks.service_check import check_service
from airflow_hoodie.hooks.spark_submit import DEFAULT_SPARK_LOG_LEVEL
from airflow_hoodie.lineage import operator_lineage
from airflow_hoodie.links import (
    RAN_HERE_ATTR,
    SPARK_UI_XCOM_KEY,
    HoodieTableHealthLink,
    SparkUILink,
)
from airflow_hoodie.hooks.driver_tracking import STANDALONE, DriverRef, driver_state
from airflow_hoodie.triggers.write import (
    ACTIVE_DRIVER_STATES,
    HoodieWriteTrigger,
    WriteWatch,
)

NOTHING_TO_DO_SUCCESS = "success"
NOTHING_TO_DO_SKIP = "skip"

#: result keys copied onto the Asset event (small, JSON-safe, useful downstream)
ASSET_EXTRA_KEYS = ("instant", "completion_time", "checkpoint", "action", "state", "operation", "table_type",
                    "base_path", "inserts", "updates", "deletes", "files_written", "bytes_written", "num_writes")


#: result keys shown in the task log's summary table, in this order
SUMMARY_KEYS = ("instant", "completion_time", "action", "operation", "state", "inserts", "updates", "deletes", "files_written",
                "bytes_written", "partitions", "compacted_file_groups", "replaced_file_groups", "rolled_back",
                "retry_of_completed_write", "found_on_timeline")


def summary_table(result: Mapping[str, Any]) -> str:
    """The job's result as a short two-column table for the task log; a value the job left
    empty (clean's earliest_commit_to_retain under a policy that keeps file versions) gets no row."""
    rows = [(k, result[k]) for k in SUMMARY_KEYS if k in result and result[k] not in (None, [], "")]
    rows += [(k, v) for k, v in result.items()
             if k not in SUMMARY_KEYS and k not in ("spark", "base_path") and isinstance(v, (str, int, float, bool))
             and v != ""]
    width = max((len(k) for k, _ in rows), default=0)
    return "\n".join(f"| {k.ljust(width)} | {f'{v:,}' if isinstance(v, int) and not isinstance(v, bool) else v}"
                     for k, v in rows)


def is_templated(value: Any) -> bool:
    """A Jinja template, rendered only at run time: not validated when the DAG is parsed."""
    return isinstance(value, str) and "{{" in value


class HoodieBaseOperator(ResumableJobMixin, BaseOperator):
    """Runs one job script; subclasses set ``job`` and implement :meth:`job_args`.

    :param base_path: table path or URI (default: the ``hoodie`` connection's ``base_path``).
    :param hoodie_conn_id: ``hoodie`` connection (a missing ``hoodie_default`` is fine).
    :param spark_conn_id: Spark connection; overrides the ``hoodie`` connection's choice.
    :param hoodie_conf: ``hoodie.*`` settings for this job, over the connection's defaults.
    :param props_file: a ``.properties`` file of ``hoodie.*`` settings (``--props``).
    :param storage_options: pyarrow filesystem options, over the connection's.
    :param spark_conf: ``spark.*`` settings for this job.
    :param spark_submit_kwargs: extra :class:`SparkSubmitHook` arguments
        (``executor_memory``, ``num_executors``, ``deploy_mode``, ``verbose``, ...).
    :param on_nothing_to_do: ``"success"`` (default) or ``"skip"``.
    :param emit_asset: put the table's Asset in ``outlets`` (writing operators default to True).
    :param deferrable: in cluster deploy mode, submit, then free the worker slot while the
        triggerer watches the driver and the timeline (writes with a write identity).
    :param poll_interval: seconds between the trigger's polls.
    :param spark_log_level: Spark's own log level in the task log (default ``WARN``; the job's
        progress lines and the summary are always there).
    """

    job: ClassVar[str] = ""
    writes_data: ClassVar[bool] = False
    #: the job stores the task's write identity in its commit (exactly-once retries,
    #: results found on the timeline in cluster deploy mode)
    records_write_id: ClassVar[bool] = False
    template_fields: Sequence[str] = (
        "base_path", "hoodie_conf", "props_file", "storage_options", "spark_conf",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {
        "hoodie_conf": "json", "storage_options": "json", "spark_conf": "json",
    }
    ui_color = "#dbeafe"
    operator_extra_links = (SparkUILink(), HoodieTableHealthLink())

    def __init__(
        self,
        *,
        base_path: str | None = None,
        hoodie_conn_id: str = HoodieHook.default_conn_name,
        spark_conn_id: str | None = None,
        hoodie_conf: Mapping[str, Any] | None = None,
        props_file: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        spark_conf: Mapping[str, Any] | None = None,
        spark_submit_kwargs: Mapping[str, Any] | None = None,
        on_nothing_to_do: str = NOTHING_TO_DO_SUCCESS,
        emit_asset: bool | None = None,
        spark_log_level: str = DEFAULT_SPARK_LOG_LEVEL,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float = 10.0,
        **kwargs: Any,
    ) -> None:
        if on_nothing_to_do not in (NOTHING_TO_DO_SUCCESS, NOTHING_TO_DO_SKIP):
            raise ValueError(f"on_nothing_to_do must be 'success' or 'skip', not {on_nothing_to_do!r}")
        emit = self.writes_data if emit_asset is None else emit_asset
        if emit and "outlets" not in kwargs and base_path and not is_templated(base_path):
            kwargs["outlets"] = [Asset.ref(uri=table_asset_uri(base_path))]
        super().__init__(**kwargs)
        self.base_path = base_path
        self.hoodie_conn_id = hoodie_conn_id
        self.spark_conn_id = spark_conn_id
        self.hoodie_conf = dict(hoodie_conf or {})
        self.props_file = props_file
        self.storage_options = dict(storage_options or {})
        self.spark_conf = dict(spark_conf or {})
        self.spark_submit_kwargs = dict(spark_submit_kwargs or {})
        self.on_nothing_to_do = on_nothing_to_do
        self.emit_asset = emit
        self.spark_log_level = spark_log_level
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        self._hook: HoodieHook | None = None

    # ------------------------------------------------------------------ hooks for subclasses
    def job_args(self, context: Any) -> list[str]:
        """The job's own arguments (after the common ``--base-path``/``--hoodie-conf``...)."""
        return []

    def write_id(self, context: Any) -> str | None:
        """This task instance's write identity (the same for every try of it)."""
        ti = context.get("ti") if context else None
        if not self.records_write_id or ti is None:
            return None
        return format_write_id(ti.dag_id, ti.run_id, ti.task_id, getattr(ti, "map_index", None))

    def is_nothing_to_do(self, result: Mapping[str, Any]) -> bool:
        return result.get("instant") is None

    def check_before_submit(self, context: Any) -> None:
        """What can be refused before spark-submit starts a JVM: a table service needs a Hudi
        table at a version we write (writing operators check their batch instead)."""
        conn = self._hook.get_conn()
        values: dict[str, str] = {}
        if self.props_file and os.path.isfile(self.props_file):  # as the job reads them: the file, then the conf
            with open(self.props_file, encoding="utf-8") as f:
                values.update(parse_properties(f.read()))
        values.update(conn.hoodie_conf)
        check_service(self.job, self._hook.require_base_path(), conn.storage_options, HoodieConfig(values))

    # ------------------------------------------------------------------ execution
    def get_hook(self) -> HoodieHook:
        return HoodieHook(
            self.hoodie_conn_id,
            base_path=self.base_path,
            spark_conn_id=self.spark_conn_id,
            storage_options=self.storage_options,
            hoodie_conf=self.hoodie_conf,
            spark_conf=self.spark_conf,
            spark_submit_kwargs=self.spark_submit_kwargs,
            spark_log_level=self.spark_log_level,
            **self.hook_kwargs(),
        )

    def hook_kwargs(self) -> dict[str, Any]:
        """What a subclass adds to its :class:`HoodieHook` (a write: its source's storage options)."""
        return {}

    def _watchable(self, write_id: str, pending_plans: Any) -> bool:
        """Whether an execute job with ``write_id`` can be found on the timeline afterwards.

        In cluster deploy mode the task learns its result only from an instant carrying its
        identity. With no plan pending and none committed by an earlier try, the job commits
        nothing, so waiting for an instant would fail a task that had nothing to do.
        """
        if not self._hook.submits_in_cluster_mode() or self._hook.find_write(write_id).completed is not None:
            return True
        try:
            return bool(pending_plans(self._hook.get_table()))
        except HoodieTableNotFoundError:
            return False

    def execute(self, context: Any) -> dict[str, Any]:
        setattr(self, RAN_HERE_ATTR, "")  # the Spark UI link: none until the job reports one
        self._hook = self.get_hook()
        self.check_before_submit(context)
        write_id = self.write_id(context)
        defer = self.deferrable and write_id is not None
        if self.deferrable and write_id is None:
            self.log.info("%s has no write identity to watch for; running without deferring", self.job)
        if not defer and write_id is not None and self.durable and self._hook.submits_in_cluster_mode():
            # the apache-spark provider's durable mode: a retry after a worker crash reconnects
            # to the driver still running on the cluster instead of submitting a second one
            self._durable_write_id = write_id
            return self._finish(context, self.execute_resumable(context))
        run = self._hook.run_job(self.job, self.job_args(context), props_file=self.props_file,
                                 write_id=write_id, wait=not defer)
        if defer and run.result.get("status") == "submitted" and run.result.get("driver_id"):
            self.log.info("Driver %s submitted; deferring until its instant is on the timeline",
                          run.result["driver_id"])
            self.defer(trigger=HoodieWriteTrigger(
                base_path=self._hook.require_base_path(), write_id=write_id,
                spark_conn_id=self._hook.get_conn().spark_conn_id, driver_id=run.result["driver_id"],
                hoodie_conn_id=self.hoodie_conn_id, poll_interval=self.poll_interval,
                cluster_manager=run.result.get("cluster_manager") or STANDALONE),
                method_name="execute_complete")
        if defer:
            self.log.info("Not deferred: the driver ran in this worker (client deploy mode) or the cluster "
                          "manager gave no driver id to track; deferring needs deploy_mode='cluster'")
        return self._finish(context, dict(run.result))

    # ------------------------------------------------------------------ durable (ResumableJobMixin)
    external_id_key = "hoodie_driver"

    def submit_job(self, context: Any) -> Any:
        run = self._hook.run_job(self.job, self.job_args(context), props_file=self.props_file,
                                 write_id=self._durable_write_id, wait=False)
        if run.result.get("status") != "submitted" or not run.result.get("driver_id"):
            self._immediate_result = dict(run.result)  # the cluster manager named no driver to track
            return None
        self.log.info("Driver %s submitted", run.result["driver_id"])
        return {"manager": run.result.get("cluster_manager") or STANDALONE, "driver_id": run.result["driver_id"]}

    def get_job_status(self, external_id: Any, context: Any) -> str:
        return driver_state(self._hook.get_conn().spark_conn_id, DriverRef(external_id["manager"],
                                                                           external_id["driver_id"])) or "UNKNOWN"

    def is_job_active(self, status: str) -> bool:
        return status in ACTIVE_DRIVER_STATES

    def is_job_succeeded(self, status: str) -> bool:
        return status == "FINISHED"

    def poll_until_complete(self, external_id: Any, context: Any) -> dict[str, Any]:
        if external_id is None:
            return self._immediate_result
        watch = WriteWatch(self._hook.require_base_path(), self._durable_write_id,
                           self._hook.get_conn().spark_conn_id,
                           DriverRef(external_id["manager"], external_id["driver_id"]), self.hoodie_conn_id)
        while True:
            result, error = watch.poll()
            if result is not None:
                return result
            if error is not None:
                raise HoodieJobError(f"Hudi job {self.job} failed: {error}")
            time.sleep(self.poll_interval)

    def get_job_result(self, external_id: Any, context: Any) -> dict[str, Any]:
        if external_id is None:
            return self._immediate_result
        return self._hook.result_from_timeline(self._durable_write_id)

    def execute_complete(self, context: Any, event: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Back from the triggerer: the instant's result, or the driver's failure."""
        setattr(self, RAN_HERE_ATTR, "")
        if not event or event.get("status") != "success":
            raise HoodieJobError(f"Hudi job {self.job} failed: {(event or {}).get('message', 'no event')}")
        self._hook = self.get_hook()
        return self._finish(context, dict(event["result"]))

    def _finish(self, context: Any, result: dict[str, Any]) -> dict[str, Any]:
        """Log, XCom, Asset event: the same for a direct run and a deferred one."""
        base_uri = self._hook.require_base_path()
        if not self.is_nothing_to_do(result):
            result = self._with_checkpoint(result)
        self._last_result = result
        if self.is_nothing_to_do(result):
            reason = result.get("reason") or result.get("message") or "the job found nothing to do"
            self._drop_table_outlets()
            message = f"{self.job}: nothing to do on {base_uri}: {reason}"
            if self.on_nothing_to_do == NOTHING_TO_DO_SKIP:
                raise AirflowSkipException(message)
            self.log.info(message)
        else:
            self.log.info("%s on %s:\n%s", self.job, base_uri, summary_table(result))
            if self.emit_asset:
                self._record_asset_event(context, base_uri, result)
        ti = context.get("ti") if context else None
        ui_url = (result.get("spark") or {}).get("ui_url") if isinstance(result.get("spark"), Mapping) else None
        if ui_url:
            self.log.info("Spark UI: %s (application %s)", ui_url, result["spark"].get("app_id"))
            setattr(self, RAN_HERE_ATTR, ui_url)
        if ti is not None:
            ti.xcom_push(key="instant", value=result.get("instant"))
            ti.xcom_push(key="checkpoint", value=result.get("checkpoint"))
            if ui_url:
                ti.xcom_push(key=SPARK_UI_XCOM_KEY, value=ui_url)
        return result

    def _compact_health(self, base_uri: str) -> dict[str, Any] | None:
        """The table's health in the few figures an Asset event carries, for downstream DAGs
        and people reading the event; a report that cannot be made (a table some test job
        stands in for) leaves it out rather than failing a task whose work is done."""
        conn = self._hook.get_conn()
        try:
            return compact_health(table_health(base_uri, conn.storage_options or None, conn.hoodie_conf, rows=False))
        except HoodieError as exc:
            self.log.warning("No health summary for the Asset event of %s: %s", base_uri, exc)
            return None

    def _with_checkpoint(self, result: dict[str, Any]) -> dict[str, Any]:
        """A service's result names its instant by requested time only; downstream readers
        resume incremental reads at its checkpoint, which on Hudi 1.x is the completion time
        the timeline holds (a write's result carries both already)."""
        instant = result.get("instant")
        if not instant or "checkpoint" in result:
            return result
        try:
            completed = self._hook.get_table().timeline.completed().instants
        except HoodieTableNotFoundError:  # a job that answers for a table it did not create
            return result
        done = next((i for i in completed if i.timestamp == str(instant) and i.action != "savepoint"), None)
        if done is None:  # not a completed instant of the active timeline (an archival's last one)
            return result
        return {**result, "completion_time": done.completion_time, "checkpoint": done.checkpoint}

    def lineage_inputs(self, base_uri: str) -> tuple[str, ...]:
        """Datasets the job read: a table service reads the table it rewrites."""
        return (base_uri,) if self.writes_data else ()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> OperatorLineage:
        """OpenLineage: the inputs, and the table with schema, statistics and instant as version."""
        hook = self._hook or self.get_hook()
        base_uri = hook.require_base_path()
        result = getattr(self, "_last_result", None)
        changed = bool(result) and not self.is_nothing_to_do(result)
        return operator_lineage(base_uri, result, hook.get_conn().storage_options, self.lineage_inputs(base_uri),
                                changed=changed)

    def _drop_table_outlets(self) -> None:
        """No change, no event: Airflow emits one per outlet of a successful task."""
        self.outlets = [o for o in (self.outlets or []) if not is_table_asset(o)]

    def _record_asset_event(self, context: Any, base_uri: str, result: Mapping[str, Any]) -> None:
        events = context.get("outlet_events") if context else None
        if events is None:
            return
        extra = {k: result[k] for k in ASSET_EXTRA_KEYS
                 if k in result and isinstance(result[k], (str, int, float, bool, type(None)))}
        extra.setdefault("job", self.job)
        extra["table"] = base_uri
        extra["health"] = self._compact_health(base_uri)
        table_uri = table_asset_uri(base_uri)
        for outlet in self.outlets or []:
            if isinstance(outlet, AssetAlias):
                events[outlet].add(hoodie_table_asset(base_uri), extra=extra)
            elif getattr(outlet, "uri", None) == table_uri:
                # The outlet is Asset.ref(uri=...); an event's details go to the Asset it resolves
                # to, whose name is the one its author gave. Resolving the ref asks for the Asset
                # and makes the API client log an error for every write to a table no DAG
                # declares, so: the Asset named by the table's latest event, else the spelling of
                # hoodie_table_asset() (ignored by Airflow when no DAG declares that Asset).
                target = outlet if isinstance(outlet, Asset) else (
                    self._table_asset_with_events(table_uri) or hoodie_table_asset(base_uri))
                events[target].extra = {**events[target].extra, **extra}

    def _table_asset_with_events(self, table_uri: str) -> Asset | None:
        """The Asset a DAG declared for the table, as its author named it, found through its
        latest event (a query that answers "none" quietly)."""
        try:
            from airflow.sdk.execution_time.context import InletEventsAccessor

            latest = list(InletEventsAccessor(asset_uri=table_uri).limit(1))
        except Exception as exc:  # noqa: BLE001 - outside a task runner (tests), or an API error
            self.log.debug("No asset events for %s: %s", table_uri, exc)
            return None
        if not latest:
            return None
        return Asset(name=latest[0].asset.name, uri=latest[0].asset.uri)

    def on_kill(self) -> None:
        if self._hook is not None:
            self._hook.on_kill()
