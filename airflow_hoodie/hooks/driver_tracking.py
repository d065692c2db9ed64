"""Where a cluster-mode driver runs and how its state is read, for every cluster manager.

A deferred task watches its driver from the triggerer. Each cluster manager names the
driver differently (a standalone submission id, a YARN application id, a Kubernetes driver
pod) and reports its state through a different API; the apache-spark provider already
speaks all three (the standalone REST ``--status`` call, the YARN ResourceManager REST
API, the Kubernetes pod phase), so this module only picks the right one and maps its
answer onto Spark standalone's driver states, which the trigger understands.

It lives with the hooks because the hook that submits a job names its driver
(:func:`submitted_driver`) and the triggers and operators that watch it read its state
(:func:`driver_state`): hooks import nothing from triggers, operators or sensors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.hooks.spark_submit import CapturingSparkSubmitHook

STANDALONE, YARN, KUBERNETES = "standalone", "yarn", "kubernetes"
#: spark-submit returns once the driver is accepted, instead of waiting for it to end
NO_WAIT_CONF = {"spark.yarn.submit.waitAppCompletion": "false",
                "spark.kubernetes.submission.waitAppCompletion": "false"}
_YARN_STATES = {"SUCCEEDED": "FINISHED", "FAILED": "FAILED"}
_POD_PHASES = {"Succeeded": "FINISHED", "Failed": "FAILED", "Pending": "SUBMITTED", "Running": "RUNNING"}


@dataclass(frozen=True)
class DriverRef:
    """The driver of one cluster-mode submission."""

    manager: str
    driver_id: str


def submitted_driver(hook: CapturingSparkSubmitHook) -> DriverRef | None:
    """The driver a cluster-mode ``submit()`` just started, if the manager named it."""
    if hook.yarn_application_id:
        return DriverRef(YARN, hook.yarn_application_id)
    if hook.kubernetes_driver_pod:
        return DriverRef(KUBERNETES, hook.kubernetes_driver_pod)
    if hook.driver_id:
        return DriverRef(STANDALONE, hook.driver_id)
    return None


def _standalone_state(spark_conn_id: str, driver_id: str) -> str | None:
    return CapturingSparkSubmitHook(conn_id=spark_conn_id, deploy_mode="cluster").poll_driver_state(driver_id)


def _yarn_state(spark_conn_id: str, application_id: str) -> str:
    hook = CapturingSparkSubmitHook(conn_id=spark_conn_id, deploy_mode="cluster", yarn_track_via_rm_api=True)
    state = hook.query_yarn_application_status(application_id)
    return _YARN_STATES.get(state, "RUNNING")


def _kubernetes_state(spark_conn_id: str, pod: str) -> str:
    try:
        from airflow.providers.cncf.kubernetes.kube_client import get_kube_client
    except ImportError as exc:
        raise HoodieConfigError("Tracking a Kubernetes driver needs apache-airflow-providers-cncf-kubernetes "
                                "(the apache-spark provider's Kubernetes support); install it in the "
                                "triggerer's environment.") from exc
    namespace = CapturingSparkSubmitHook(conn_id=spark_conn_id, deploy_mode="cluster").kubernetes_namespace
    phase = get_kube_client().read_namespaced_pod(pod, namespace).status.phase
    return _POD_PHASES.get(phase, "UNKNOWN")


def driver_state(spark_conn_id: str, ref: DriverRef | Any) -> str | None:
    """One poll of the driver's state, in Spark standalone's words (RUNNING, FINISHED, FAILED...)."""
    if ref.manager == STANDALONE:
        return _standalone_state(spark_conn_id, ref.driver_id)
    if ref.manager == YARN:
        return _yarn_state(spark_conn_id, ref.driver_id)
    if ref.manager == KUBERNETES:
        return _kubernetes_state(spark_conn_id, ref.driver_id)
    raise HoodieConfigError(f"Unknown cluster manager {ref.manager!r}; expected {STANDALONE}, {YARN} or {KUBERNETES}.")
