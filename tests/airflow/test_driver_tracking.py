"""Which driver a cluster-mode submission started, and how each manager is asked about it."""

from __future__ import annotations

import pytest

from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.hooks.spark_submit import CapturingSparkSubmitHook
from airflow_hoodie.hooks.driver_tracking import KUBERNETES, STANDALONE, YARN, DriverRef, driver_state, submitted_driver


def _hook(**kw):
    base = dict(_is_yarn=False, _is_kubernetes=False, _yarn_application_id=None, _kubernetes_driver_pod=None,
                _driver_id=None)
    hook = object.__new__(CapturingSparkSubmitHook)  # the provider's state after a submit, no connection
    hook.__dict__.update({**base, **kw})
    return hook


def test_the_driver_is_named_as_its_cluster_manager_names_it():
    assert submitted_driver(_hook(_is_yarn=True, _yarn_application_id="application_1_0001")) == \
        DriverRef(YARN, "application_1_0001")
    assert submitted_driver(_hook(_is_kubernetes=True, _kubernetes_driver_pod="job-driver")) == \
        DriverRef(KUBERNETES, "job-driver")
    assert submitted_driver(_hook(_driver_id="driver-2026-0001")) == DriverRef(STANDALONE, "driver-2026-0001")
    assert submitted_driver(_hook()) is None  # client mode or a manager that named nothing


def test_kubernetes_tracking_without_its_provider_says_what_to_install(airflow_db, monkeypatch):
    import json

    monkeypatch.setenv("AIRFLOW_CONN_SPARK_K8S", json.dumps({"conn_type": "spark", "host": "k8s://https://127.0.0.1",
                                                              "extra": {"deploy-mode": "cluster"}}))
    try:
        import airflow.providers.cncf.kubernetes  # noqa: F401
    except ImportError:
        with pytest.raises(HoodieConfigError, match="apache-airflow-providers-cncf-kubernetes"):
            driver_state("spark_k8s", DriverRef(KUBERNETES, "job-driver"))
    with pytest.raises(HoodieConfigError, match="Unknown cluster manager 'mesos'"):
        driver_state("spark_k8s", DriverRef("mesos", "x"))
