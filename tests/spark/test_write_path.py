"""The rule that picks a Spark write's path when the job sets no driver-path key
(airflow_hoodie/spark/write_path.py): measured limits for a local master, the earlier ones on
a cluster, and the job's own values over both."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from airflow_hoodie.actions.write_config import DRIVER_BATCH_MAX_BYTES, DRIVER_FILES_MAX_BYTES
from airflow_hoodie.actions.write_settings import WriteRequest
from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.spark.write_path import CLUSTER_LIMITS, LOCAL_LIMITS, driver_limits

MB = 1 << 20


def _spark(master: str) -> SimpleNamespace:
    return SimpleNamespace(sparkContext=SimpleNamespace(master=master))


@pytest.mark.parametrize("master,limits", [("local[2]", (64 * MB, 1 << 62)), ("local", LOCAL_LIMITS),
                                           ("spark://127.0.0.1:7077", (32 * MB, 128 * MB)),
                                           ("yarn", CLUSTER_LIMITS), ("k8s://https://api:443", CLUSTER_LIMITS)])
def test_unset_keys_take_the_measured_limits_of_where_spark_runs(master, limits):
    request = WriteRequest.from_config(HoodieConfig({}), "upsert")
    assert (request.driver_batch_max_bytes, request.driver_files_max_bytes) == (None, None)
    assert driver_limits(_spark(master), request) == limits


@pytest.mark.parametrize("master", ["local[2]", "spark://127.0.0.1:7077"])
def test_the_jobs_own_values_win(master):
    request = WriteRequest.from_config(HoodieConfig({DRIVER_BATCH_MAX_BYTES: "0", DRIVER_FILES_MAX_BYTES: "5"}),
                                       "upsert")
    assert driver_limits(_spark(master), request) == (0, 5)
    only_batch = WriteRequest.from_config(HoodieConfig({DRIVER_BATCH_MAX_BYTES: str(MB)}), "upsert")
    assert driver_limits(_spark(master), only_batch)[0] == MB
    assert driver_limits(_spark(master), only_batch)[1] == (LOCAL_LIMITS if master.startswith("local")
                                                             else CLUSTER_LIMITS)[1]
