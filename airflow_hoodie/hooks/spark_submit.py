"""Everything about starting one job with the apache-spark provider's ``SparkSubmitHook``.

Where the job scripts are (inside the installed package, or beside it in a checkout),
the zip of the package shipped with ``--py-files``, which ``spark-submit`` runs, and the
``SparkSubmitHook`` itself, built through its constructor with every argument known up
front so its own YARN / Kubernetes / standalone tracking, Kerberos and ``on_kill`` apply
unchanged.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections import deque
from pathlib import Path
from typing import Any, Iterator, Mapping

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

import airflow_hoodie
from airflow_hoodie.errors import HoodieConfigError

LOCAL_FALLBACK_MASTER = "local[*]"
JOBS_DIR_ENV = "AIRFLOW_HOODIE_JOBS_DIR"
SPARK_SUBMIT = "spark-submit"
#: Spark's logging in client mode: WARN keeps the task log readable (operators' spark_log_level)
LOG4J2_FILE = Path(__file__).resolve().parent.parent / "spark" / "log4j2.properties"
DEFAULT_SPARK_LOG_LEVEL = "WARN"


def is_local_master(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster")


def find_jobs_dir(explicit: str | None = None) -> Path:
    """Where the ``spark_jobs/*.py`` scripts are.

    In order: an explicit directory, ``$AIRFLOW_HOODIE_JOBS_DIR``, ``airflow_hoodie/spark_jobs``
    (a pip-installed wheel: setup.py maps the repository's top-level ``spark_jobs/`` there),
    then ``spark_jobs/`` beside the package (a source checkout).
    """
    candidates: list[Path] = []
    if explicit:
        candidates.append(Path(explicit))
    if os.environ.get(JOBS_DIR_ENV):
        candidates.append(Path(os.environ[JOBS_DIR_ENV]))
    package_dir = Path(airflow_hoodie.__file__).resolve().parent
    candidates += [package_dir / "spark_jobs", package_dir.parent / "spark_jobs"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise HoodieConfigError(
        "Cannot find the airflow-hoodie job scripts (spark_jobs/*.py); looked in "
        + ", ".join(str(c) for c in candidates)
        + f". Set the {JOBS_DIR_ENV} environment variable or the connection's jobs_dir extra."
    )


def _package_fingerprint(package_dir: Path) -> tuple[str, list[Path]]:
    files = sorted(
        p for p in package_dir.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    )
    digest = hashlib.sha256()
    for p in files:
        stat = p.stat()
        digest.update(f"{p.relative_to(package_dir)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16], files


def build_package_zip(target_dir: str | None = None) -> str:
    """Zip the imported ``airflow_hoodie`` (the installed package) for ``--py-files``.

    Executors on a cluster cannot import the package from the Airflow worker's
    site-packages, so it travels with every job (Spark puts the zip on the executors'
    ``sys.path``). The zip is content-addressed, so concurrent tasks share it safely, and
    rebuilt only when the sources change.
    """
    package_dir = Path(airflow_hoodie.__file__).resolve().parent
    fingerprint, files = _package_fingerprint(package_dir)
    out_dir = Path(target_dir or tempfile.gettempdir())
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"airflow_hoodie-{airflow_hoodie.__version__}-{fingerprint}.zip"
    if target.exists():
        return str(target)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for p in files:
            zf.write(p, arcname=str(Path("airflow_hoodie") / p.relative_to(package_dir)))
    os.replace(tmp, target)
    return str(target)


def spark_submit_path_dirs() -> list[str]:
    """Directories to put before ``PATH`` so ``spark-submit`` is found on a plain pip install.

    ``pip install pyspark`` puts ``spark-submit`` in the environment's ``bin/`` (next to the
    interpreter) and always inside the pyspark package (``pyspark/bin``); an Airflow image
    whose PATH holds neither still runs the jobs. A ``spark-submit`` already on PATH (a
    Spark distribution) comes after the interpreter's own.
    """
    dirs = [os.path.dirname(sys.executable)]
    if shutil.which(SPARK_SUBMIT, path=os.pathsep.join(dirs + [os.environ.get("PATH", "")])) is None:
        # located, not imported: the Airflow side never loads pyspark itself
        spec = importlib.util.find_spec("pyspark")
        if spec is not None and spec.origin:
            dirs.append(str(Path(spec.origin).resolve().parent / "bin"))
    return dirs


class CapturingSparkSubmitHook(SparkSubmitHook):
    """SparkSubmitHook that also keeps the job's output, and runs locally without a connection.

    The provider's hook logs every output line but keeps only a 20-line tail, which Spark's
    shutdown chatter can push our ``ERROR: ...`` line out of; we keep what we need to
    report the job's own error, its progress lines and its JSON result line.
    """

    def __init__(self, *, local_fallback_master: str | None = None, **kwargs: Any) -> None:
        self._local_fallback_master = local_fallback_master
        self.output_tail: deque[str] = deque(maxlen=400)
        self.error_lines: list[str] = []
        self.json_lines: deque[str] = deque(maxlen=5)
        super().__init__(**kwargs)

    def _resolve_connection(self) -> dict[str, Any]:
        data = super()._resolve_connection()
        if self._local_fallback_master:
            data["master"] = self._local_fallback_master
        return data

    def get_connection(self, conn_id: str | None) -> Any:
        """The local fallback as a connection: the caller already knows the Spark connection
        does not exist, so the provider need not look it up again (and log, for every hook
        built, that it defaults to yarn, which it then does not)."""
        if self._local_fallback_master and conn_id == self._conn_id:
            from airflow.sdk import Connection

            return Connection(conn_id=conn_id, conn_type="spark", host=self._local_fallback_master)
        return super().get_connection(conn_id)

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        def tee() -> Iterator[Any]:
            for raw in itr:
                line = raw.rstrip("\n")
                self.output_tail.append(line)
                stripped = line.strip()
                if stripped.startswith("ERROR:"):
                    # the job's cause: it becomes the task's exception, which Airflow logs once
                    self.error_lines.append(stripped)
                    continue
                if stripped.startswith("{") and stripped.endswith("}"):
                    self.json_lines.append(stripped)
                yield raw

        super()._process_spark_submit_log(tee())

    @property
    def master(self) -> str:
        return self._connection["master"]

    @property
    def deploy_mode(self) -> str | None:
        return self._connection.get("deploy_mode")

    @property
    def runs_on_cluster_manager(self) -> bool:
        """YARN or Kubernetes: environment variables travel as Spark conf, not the process env."""
        return self._is_yarn or self._is_kubernetes

    # The provider keeps what it learns of a submission in private attributes; these are
    # the one place that reads them, so a provider upgrade changes one class.
    @property
    def kubernetes_namespace(self) -> str:
        return self._connection.get("namespace") or "default"

    @property
    def driver_id(self) -> str | None:
        """The standalone submission id (cluster deploy mode), once spark-submit printed it."""
        return self._driver_id

    @property
    def yarn_application_id(self) -> str | None:
        return self._yarn_application_id if self._is_yarn else None

    @property
    def kubernetes_driver_pod(self) -> str | None:
        return self._kubernetes_driver_pod if self._is_kubernetes else None

    @property
    def submit_process(self) -> Any:
        """The running spark-submit process (None before submit)."""
        return self._submit_sp

    def wait_for_driver(self) -> str | None:
        """Track a standalone cluster-mode driver to its end with the provider's own
        polling; returns its final state (None when the provider does not track it)."""
        if not self._should_track_driver_status:
            return None
        self._start_driver_status_tracking()
        return self._driver_status

    def poll_driver_state(self, driver_id: str) -> str | None:
        """One ``spark-submit --status`` call for a standalone driver, parsed by the provider."""
        self._driver_id = driver_id
        process = subprocess.Popen(self._build_track_driver_status_command(), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, universal_newlines=True)
        self._process_spark_status_log(iter(process.stdout))  # type: ignore[arg-type]
        process.wait()
        return self._driver_status


def make_submit_hook(
    *,
    conn_id: str,
    local_fallback_master: str | None,
    conf: Mapping[str, str],
    python: str,
    ship_package: bool | str,
    env_vars: Mapping[str, str] | None = None,
    secret_env: Mapping[str, str] | None = None,
    spark_log_level: str = DEFAULT_SPARK_LOG_LEVEL,
    **kwargs: Any,
) -> CapturingSparkSubmitHook:
    """Build the SparkSubmitHook for one job through its constructor.

    The master and deploy mode decide the rest (Python pinning, package shipping, the
    process environment), so a first hook resolves only the connection and the second is
    built with every argument final.
    """
    probe = CapturingSparkSubmitHook(local_fallback_master=local_fallback_master, conn_id=conn_id,
                                     deploy_mode=kwargs.get("deploy_mode"))
    cluster = probe.deploy_mode == "cluster"
    conf = dict(conf)
    conf.setdefault("spark.pyspark.python", python)
    if not cluster:
        conf.setdefault("spark.pyspark.driver.python", python)
        # the driver JVM starts here: its log4j2 file is on this machine
        conf.setdefault("spark.driver.extraJavaOptions",
                        f"-Dlog4j2.configurationFile=file:{LOG4J2_FILE} -Dhoodie.spark.log.level={spark_log_level}")
    py_files = kwargs.pop("py_files", None)
    ship = (not is_local_master(probe.master)) if ship_package == "auto" else bool(ship_package)
    if ship:
        zip_path = build_package_zip()
        py_files = f"{py_files},{zip_path}" if py_files else zip_path
    env = dict(env_vars or {})
    if not cluster and not probe.runs_on_cluster_manager:
        # spark-submit ships with pyspark inside the environment: find it, pin Python workers.
        env.setdefault("PATH", os.pathsep.join(spark_submit_path_dirs() + [os.environ.get("PATH", "")]))
        env.setdefault("PYSPARK_PYTHON", python)
        env.setdefault("PYSPARK_DRIVER_PYTHON", python)
        env.update(secret_env or {})  # the driver is this process's child: its environment only
    elif secret_env:
        probe.log.warning(
            "Storage credentials are not sent to a driver running on the cluster (they would travel as "
            "spark-submit --conf); give the driver the cluster's own credentials or set %s in its "
            "environment there.", ", ".join(secret_env))
    return CapturingSparkSubmitHook(
        local_fallback_master=local_fallback_master,
        conn_id=conn_id,
        conf=conf,
        py_files=py_files,
        env_vars=env or None,
        **kwargs,
    )
