"""HoodieHook: one Hudi table action = one spark-submit of one ``spark_jobs/*.py`` script.

The hook owns everything between an operator's intent ("compact this table") and the
job's JSON result: resolving the ``hoodie`` connection (table location, storage options,
default ``hoodie.*`` settings, which Spark connection to use), building the job's
arguments, shipping our package to a cluster, and reading the result back. The actual
process is started by the apache-spark provider's :class:`SparkSubmitHook`, so Spark
connections, Kerberos, YARN/Kubernetes tracking and ``on_kill`` behave exactly as with
``SparkSubmitOperator``.

Connection ``hoodie`` (all optional; a fresh install needs no connection at all):

- extra ``base_path``: default table path or URI (operators may override it);
- login / password: storage access key and secret, added to the storage options as
  ``access_key`` / ``secret_key`` (what ``pyarrow.fs.S3FileSystem`` expects). Secrets never
  go on the spark-submit command line: they reach the job in its environment
  (``HOODIE_STORAGE_SECRETS``, JSON), are masked in task logs, and are not sent to a
  cluster-mode driver (give it the cluster's own credentials or that variable there);
- extra ``storage_options``: JSON object of pyarrow filesystem options;
- extra ``aws_conn_id``: an Amazon provider connection whose credentials, region,
  ``endpoint_url``, profile or role give the S3 storage options (resolved by the provider's
  ``AwsBaseHook``; ``storage_options`` and login/password above override what it gives);
- extra ``spark_conn_id``: Spark connection used for spark-submit (default ``spark_default``;
  when that connection does not exist the job runs on ``local[*]``);
- extra ``hoodie_conf``: JSON object (or ``key=value`` lines) of default ``hoodie.*`` settings;
- extra ``spark_conf``: JSON object of ``spark.*`` settings for every job;
- extra ``python``: interpreter Spark's Python workers run (default: this interpreter);
- extra ``jobs_dir``: directory holding the ``spark_jobs/*.py`` scripts.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import psutil
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException
from airflow.sdk.log import mask_secret

from airflow_hoodie.actions.write_identity import FoundWrite, find_write, result_of
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieJobError,
    HoodieTableNotFoundError,
)
from airflow_hoodie.hooks.aws_connection import aws_storage_options
from airflow_hoodie.hooks.spark_submit import (
    DEFAULT_SPARK_LOG_LEVEL,
    LOCAL_FALLBACK_MASTER,
    CapturingSparkSubmitHook,
    build_package_zip,  # noqa: F401 - part of this module's API since the first release
    find_jobs_dir,
    is_local_master,  # noqa: F401 - part of this module's API since the first release
    make_submit_hook,
)
from airflow_hoodie.provider_info import (
    CONNECTION_FIELDS,
    DEFAULT_SPARK_CONN_ID,
    UI_FIELD_BEHAVIOUR,
)
from airflow_hoodie.storage_secrets import (
    SOURCE_STORAGE_SECRETS_ENV,
    STORAGE_SECRETS_ENV,
    is_secret_option,
)
from airflow_hoodie.table.hoodie_table import HoodieTable
from airflow_hoodie.hooks.driver_tracking import NO_WAIT_CONF, submitted_driver


def _parse_mapping(value: Any, what: str) -> dict[str, str]:
    """A JSON object, a dict, or ``key=value`` lines -> dict of strings."""
    if value is None or value == "":
        return {}
    if isinstance(value, Mapping):
        return {str(k): _to_str(v) for k, v in value.items()}
    text = str(value).strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HoodieConfigError(f"The connection's {what} is not valid JSON: {exc}") from exc
        return {str(k): _to_str(v) for k, v in parsed.items()}
    out: dict[str, str] = {}
    for line in text.replace(",", "\n").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise HoodieConfigError(f"The connection's {what} entry {line!r} is not key=value or JSON.")
        key, _, val = line.partition("=")
        out[key.strip()] = val.strip()
    return out


def _to_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


#: how long a finished cluster-mode job's instant may take to show on the timeline
TIMELINE_WAIT_SECONDS = 60.0
TIMELINE_POLL_SECONDS = 2.0


@dataclass
class HoodieConnectionConfig:
    """The resolved ``hoodie`` connection: what every job of a table has in common."""

    base_path: str | None = None
    storage_options: dict[str, str] = field(default_factory=dict)
    #: options of the write's source batch when it lives elsewhere (None: ``storage_options``)
    source_storage_options: dict[str, str] | None = None
    spark_conn_id: str = DEFAULT_SPARK_CONN_ID
    hoodie_conf: dict[str, str] = field(default_factory=dict)
    spark_conf: dict[str, str] = field(default_factory=dict)
    python: str | None = None
    jobs_dir: str | None = None


@dataclass
class JobRun:
    """What one spark-submit produced: the job's JSON result and where it ran."""

    job: str
    result: dict[str, Any]
    master: str


class HoodieHook(BaseHook):
    """Runs Hudi timeline actions as spark-submit jobs and reads their JSON results.

    :param hoodie_conn_id: ``hoodie`` connection; a missing ``hoodie_default`` is fine.
    :param base_path: table path or URI; overrides the connection's ``base_path``.
    :param spark_conn_id: Spark connection; overrides the connection's ``spark_conn_id``.
    :param storage_options: pyarrow filesystem options, merged over the connection's.
    :param source_storage_options: options of a write's source batch on another bucket or
        store (default: the table's storage options).
    :param hoodie_conf: ``hoodie.*`` settings, merged over the connection's defaults.
    :param spark_conf: ``spark.*`` settings, merged over the connection's.
    :param ship_package: ``"auto"`` ships a zip of ``airflow_hoodie`` via ``--py-files``
        when the master is not local; ``True``/``False`` force it.
    :param spark_submit_kwargs: passed to :class:`SparkSubmitHook` (``executor_memory``,
        ``num_executors``, ``deploy_mode``, ``verbose``, ...).
    :param spark_log_level: Spark's log level in client mode (default ``WARN``).
    """

    conn_name_attr = "hoodie_conn_id"
    default_conn_name = "hoodie_default"
    conn_type = "hoodie"
    hook_name = "Apache Hudi (airflow-hoodie)"

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Connection form: hide host/schema/port; login/password are storage credentials."""
        return {k: (dict(v) if isinstance(v, dict) else list(v)) for k, v in UI_FIELD_BEHAVIOUR.items()}

    @classmethod
    def get_connection_form_widgets(cls) -> dict[str, Any]:
        """WTForms widgets for UIs that predate declarative ``conn-fields``."""
        from flask_appbuilder.fieldwidgets import (
            BS3TextFieldWidget,  # only in the legacy UI
        )
        from flask_babel import lazy_gettext
        from wtforms import StringField
        from wtforms.validators import Optional

        return {
            name: StringField(
                lazy_gettext(spec["label"]),
                widget=BS3TextFieldWidget(),
                description=spec.get("description", ""),
                validators=[Optional()],
                default=spec["schema"].get("default"),
            )
            for name, spec in CONNECTION_FIELDS.items()
        }

    def __init__(
        self,
        hoodie_conn_id: str | None = default_conn_name,
        *,
        base_path: str | None = None,
        spark_conn_id: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        source_storage_options: Mapping[str, Any] | None = None,
        hoodie_conf: Mapping[str, Any] | None = None,
        spark_conf: Mapping[str, Any] | None = None,
        ship_package: bool | str = "auto",
        spark_submit_kwargs: Mapping[str, Any] | None = None,
        python: str | None = None,
        jobs_dir: str | None = None,
        spark_log_level: str = DEFAULT_SPARK_LOG_LEVEL,
    ) -> None:
        super().__init__()
        self._spark_log_level = spark_log_level
        self.hoodie_conn_id = hoodie_conn_id
        self._base_path = base_path
        self._spark_conn_id = spark_conn_id
        self._storage_options = dict(storage_options or {})
        self._source_storage_options = None if source_storage_options is None else \
            {str(k): _to_str(v) for k, v in source_storage_options.items()}
        self._hoodie_conf = {str(k): _to_str(v) for k, v in (hoodie_conf or {}).items()}
        self._spark_conf = {str(k): _to_str(v) for k, v in (spark_conf or {}).items()}
        self._ship_package = ship_package
        self._spark_submit_kwargs = dict(spark_submit_kwargs or {})
        self._python = python
        self._jobs_dir = jobs_dir
        self._config: HoodieConnectionConfig | None = None
        self._submit_hook: CapturingSparkSubmitHook | None = None
        self._fallback_logged = False

    # ---------------------------------------------------------------- connection
    def get_conn(self) -> HoodieConnectionConfig:
        """The connection resolved and merged with the hook's own arguments."""
        if self._config is None:
            self._config = self._resolve_config()
        return self._config

    def _load_connection(self) -> Any | None:
        if not self.hoodie_conn_id:
            return None
        try:
            return self.get_connection(self.hoodie_conn_id)
        except AirflowNotFoundException:
            if self.hoodie_conn_id == self.default_conn_name:
                return None  # a fresh install has no hoodie_default; defaults are fine
            raise

    def _resolve_config(self) -> HoodieConnectionConfig:
        conn = self._load_connection()
        extra: dict[str, Any] = {}
        if conn is not None:
            raw = conn.extra_dejson or {}
            for key, value in raw.items():
                extra[key.removeprefix(f"extra__{self.conn_type}__")] = value
        storage = aws_storage_options(str(extra["aws_conn_id"])) if extra.get("aws_conn_id") else {}
        storage.update(_parse_mapping(extra.get("storage_options"), "storage_options"))
        if conn is not None and conn.login:
            storage.setdefault("access_key", conn.login)
        if conn is not None and conn.password:
            storage.setdefault("secret_key", conn.password)
        storage.update({str(k): _to_str(v) for k, v in self._storage_options.items()})
        for key, value in {**storage, **(self._source_storage_options or {})}.items():
            if is_secret_option(key):
                mask_secret(value)
        hoodie_conf = _parse_mapping(extra.get("hoodie_conf"), "hoodie_conf")
        hoodie_conf.update(self._hoodie_conf)
        spark_conf = _parse_mapping(extra.get("spark_conf"), "spark_conf")
        spark_conf.update(self._spark_conf)
        return HoodieConnectionConfig(
            base_path=self._base_path or extra.get("base_path") or None,
            storage_options=storage,
            source_storage_options=self._source_storage_options,
            spark_conn_id=self._spark_conn_id or extra.get("spark_conn_id") or DEFAULT_SPARK_CONN_ID,
            hoodie_conf=hoodie_conf,
            spark_conf=spark_conf,
            python=self._python or extra.get("python") or None,
            jobs_dir=self._jobs_dir or extra.get("jobs_dir") or None,
        )

    def require_base_path(self) -> str:
        base_path = self.get_conn().base_path
        if not base_path:
            raise HoodieConfigError(
                f"No table path: pass base_path= to the task or set the base_path extra of "
                f"connection {self.hoodie_conn_id!r}."
            )
        return str(base_path)

    def get_table(self) -> Any:
        """The table as our format layer sees it (for sensors, checks and tests)."""
        cfg = self.get_conn()
        return HoodieTable.load(self.require_base_path(), storage_options=cfg.storage_options or None)

    def test_connection(self) -> tuple[bool, str]:
        """UI "Test" button: the table loads and its timeline reads."""
        try:
            table = self.get_table()
            instants = list(table.timeline.instants)
            return True, f"Hudi table {table.config.table_name!r} ({table.table_type}), {len(instants)} instants"
        except Exception as exc:  # noqa: BLE001 - reported to the UI as text
            return False, f"{type(exc).__name__}: {exc}"

    # ---------------------------------------------------------------- submit
    def _spark_connection_exists(self, conn_id: str) -> bool:
        try:
            self.get_connection(conn_id)
            return True
        except AirflowNotFoundException:
            return False

    def check_write(self, source: str, source_format: str, operation: str, table_name: str | None, *,
                    props_file: str | None = None) -> bool:
        """The write job's checks that need no Spark, run here before spark-submit: a missing
        key column fails in seconds instead of after the JVM started. Settings as the job
        reads them: ``props_file``, then the connection's and the task's ``hoodie_conf``."""
        from airflow_hoodie.config import parse_properties
        from airflow_hoodie.hooks.write_check import check_write

        cfg = self.get_conn()
        values: dict[str, str] = {}
        if props_file and os.path.isfile(props_file):
            with open(props_file, encoding="utf-8") as f:
                values.update(parse_properties(f.read()))
        values.update(cfg.hoodie_conf)
        return check_write(self.require_base_path(), cfg.storage_options, HoodieConfig(values), source,
                           source_format, operation, table_name, cfg.source_storage_options or None)

    def job_arguments(
        self,
        job_args: Sequence[str] = (),
        *,
        result_file: str | None = None,
        props_file: str | None = None,
        hoodie_conf: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Arguments every job script takes (``spark/job.py``'s base parser), then the job's own."""
        cfg = self.get_conn()
        args = ["--base-path", self.require_base_path()]
        merged = dict(cfg.hoodie_conf)
        merged.update({str(k): _to_str(v) for k, v in (hoodie_conf or {}).items()})
        HoodieConfig(merged).check_spelling()  # a typo fails here, before spark-submit
        for key, value in merged.items():
            args += ["--hoodie-conf", f"{key}={value}"]
        for key, value in cfg.storage_options.items():
            if not is_secret_option(key):  # secrets travel in the job's environment, never here
                args += ["--storage-option", f"{key}={value}"]
        for key, value in (cfg.source_storage_options or {}).items():
            if not is_secret_option(key):
                args += ["--source-storage-option", f"{key}={value}"]
        if props_file:
            args += ["--props", props_file]
        if result_file:
            args += ["--result-file", result_file]
        args += [str(a) for a in job_args]
        return args

    def submits_in_cluster_mode(self) -> bool:
        """Whether this hook's jobs run their driver on the cluster (deploy mode ``cluster``)."""
        return self.build_submit_hook("probe", []).deploy_mode == "cluster"

    def build_submit_hook(
        self,
        job: str,
        application_args: list[str],
        *,
        extra_spark_conf: Mapping[str, Any] | None = None,
    ) -> CapturingSparkSubmitHook:
        """The SparkSubmitHook for one job: master, Python, package shipping, env."""
        cfg = self.get_conn()
        spark_conn_id = cfg.spark_conn_id
        fallback = None
        if spark_conn_id == DEFAULT_SPARK_CONN_ID and not self._spark_connection_exists(spark_conn_id):
            fallback = LOCAL_FALLBACK_MASTER
            if not self._fallback_logged:  # once per task, however many submit hooks it builds
                self._fallback_logged = True
                self.log.info("Spark connection %r does not exist; running on %s (the driver runs in this "
                              "worker). Create it to use a cluster.", spark_conn_id, fallback)
        kwargs = dict(self._spark_submit_kwargs)
        conf = dict(cfg.spark_conf)
        conf.update({str(k): _to_str(v) for k, v in (extra_spark_conf or {}).items()})
        conf.update({str(k): _to_str(v) for k, v in (kwargs.pop("conf", None) or {}).items()})
        secret_env = {}
        for env, options in ((STORAGE_SECRETS_ENV, cfg.storage_options),
                             (SOURCE_STORAGE_SECRETS_ENV, cfg.source_storage_options or {})):
            secrets = {k: v for k, v in options.items() if is_secret_option(k)}
            if secrets:
                secret_env[env] = json.dumps(secrets)
        return make_submit_hook(
            conn_id=spark_conn_id,
            secret_env=secret_env or None,
            spark_log_level=self._spark_log_level,
            local_fallback_master=fallback,
            conf=conf,
            python=cfg.python or sys.executable,
            ship_package=self._ship_package,
            env_vars=kwargs.pop("env_vars", None),
            name=kwargs.pop("name", f"airflow-hoodie-{job}"),
            application_args=application_args,
            **kwargs,
        )

    def run_job(
        self,
        job: str,
        job_args: Sequence[str] = (),
        *,
        hoodie_conf: Mapping[str, Any] | None = None,
        props_file: str | None = None,
        spark_conf: Mapping[str, Any] | None = None,
        write_id: str | None = None,
        wait: bool = True,
    ) -> JobRun:
        """spark-submit ``spark_jobs/<job>.py`` and return its JSON result.

        ``write_id`` is stored in the instant's ``extraMetadata``; when the job's own output
        never reaches us (cluster deploy mode) the result is read from the timeline instant
        carrying it. Raises :class:`HoodieJobError` carrying the job's own ``ERROR: ...``
        line when the job fails, so the task log and the exception say what went wrong.
        """
        script = find_jobs_dir(self.get_conn().jobs_dir) / f"{job}.py"
        if not script.is_file():
            raise HoodieJobError(
                f"Job script {script} does not exist; this airflow-hoodie install is missing "
                f"spark_jobs/{job}.py."
            )
        with tempfile.TemporaryDirectory(prefix=f"hoodie-{job}-") as tmp:
            result_file = os.path.join(tmp, "result.json")
            app_args = self.job_arguments(
                job_args, result_file=result_file, props_file=props_file, hoodie_conf=hoodie_conf
            )
            if write_id:
                app_args += ["--write-id", write_id]
            conf = dict(spark_conf or {})
            if not wait:  # deferrable: spark-submit returns once YARN/Kubernetes accepted the driver
                conf = {**NO_WAIT_CONF, **conf}
            hook = self.build_submit_hook(job, app_args, extra_spark_conf=conf or None)
            self._submit_hook = hook
            cluster_mode = hook.deploy_mode == "cluster"
            if cluster_mode:
                # The driver runs on the cluster: a local result file would never be written.
                idx = app_args.index("--result-file")
                del app_args[idx : idx + 2]
            try:
                hook.submit(str(script))
                driver = submitted_driver(hook) if cluster_mode and not wait else None
                if driver is not None:
                    # deferrable: the triggerer tracks the driver and the timeline from here
                    return JobRun(job=job, result={"instant": None, "status": "submitted",
                                                   "driver_id": driver.driver_id,
                                                   "cluster_manager": driver.manager}, master=hook.master)
                final = hook.wait_for_driver() if cluster_mode else None
                if final is not None and final != "FINISHED":
                    raise HoodieJobError(f"Hudi job {job} failed: driver {hook.driver_id} ended {final}")
            except HoodieJobError:
                raise
            except Exception as exc:
                # not chained: the provider's exception repeats the ~1,000-character command
                # (logged above when submitted) and the output tail the job's error is part of
                raise HoodieJobError(self._failure_message(job, hook, exc)) from None
            result = self._read_result(job, hook, result_file, cluster_mode)
        if result.get("status") == "submitted" and write_id:
            result = self.result_from_timeline(write_id, hoodie_conf)
        return JobRun(job=job, result=result, master=hook.master)

    def find_write(self, write_id: str, hoodie_conf: Mapping[str, Any] | None = None) -> FoundWrite:
        """What the table's timeline holds for ``write_id`` right now."""
        cfg = self.get_conn()
        config = HoodieConfig({**cfg.hoodie_conf, **{str(k): _to_str(v) for k, v in (hoodie_conf or {}).items()}})
        try:
            table = self.get_table()
        except HoodieTableNotFoundError:
            return FoundWrite()  # a first write that has not created the table yet
        return find_write(table.timeline, config, write_id)

    def result_from_timeline(self, write_id: str, hoodie_conf: Mapping[str, Any] | None = None,
                             timeout: float = TIMELINE_WAIT_SECONDS) -> dict[str, Any]:
        """The result of the write with ``write_id``, read from its completed instant.

        The driver has ended when this is called; the wait only covers storage listing lag.
        """
        deadline = time.monotonic() + timeout
        while True:
            found = self.find_write(write_id, hoodie_conf)
            if found.completed is not None:
                result = result_of(found, self.require_base_path())
                self.log.info("Found instant %s (%s) of this task on the timeline",
                              result["instant"], result["action"])
                return result
            if time.monotonic() >= deadline:
                raise HoodieJobError(
                    f"The job ended but no completed instant on {self.require_base_path()} carries this task's "
                    f"write identity {write_id}; see the driver's log on the cluster for its error."
                )
            time.sleep(TIMELINE_POLL_SECONDS)

    @staticmethod
    def _failure_message(job: str, hook: CapturingSparkSubmitHook, exc: Exception) -> str:
        if hook.error_lines:
            detail = "\n".join(dict.fromkeys(hook.error_lines))
        else:
            detail = "\n".join(list(hook.output_tail)[-15:]) or str(exc)
        return f"Hudi job {job} failed on {hook.master}: {detail}"

    @staticmethod
    def _read_result(
        job: str, hook: CapturingSparkSubmitHook, result_file: str, cluster_mode: bool
    ) -> dict[str, Any]:
        candidates: list[str] = []
        if os.path.exists(result_file):
            with open(result_file, encoding="utf-8") as f:
                text = f.read().strip()
            if text:
                candidates.append(text.splitlines()[-1])
        candidates += list(reversed(hook.json_lines))
        for text in candidates:
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                continue
            if isinstance(parsed, dict):
                return parsed
        if cluster_mode:
            return {"instant": None, "status": "submitted", "driver_id": hook.driver_id,
                    "message": "ran in cluster deploy mode; the job's result is in the driver's log"}
        raise HoodieJobError(
            f"Hudi job {job} exited 0 but printed no JSON result; last output:\n"
            + "\n".join(list(hook.output_tail)[-15:])
        )

    def on_kill(self) -> None:
        """Stop the running spark-submit, its Python driver, and its driver on a cluster.

        SparkSubmitHook kills only the spark-submit JVM; in client mode our job's Python
        driver is that JVM's child and would otherwise live on, still writing. Whatever
        it left half done is an inflight instant the retry rolls back or finishes.
        """
        hook = self._submit_hook
        if hook is None:
            return
        children: list[Any] = []
        process = hook.submit_process
        if process is not None and process.poll() is None:
            try:
                children = psutil.Process(process.pid).children(recursive=True)
            except psutil.Error:  # already gone
                children = []
        hook.on_kill()
        for child in children:
            try:
                child.kill()
            except Exception:  # noqa: BLE001 - exited on its own
                pass

