"""What the job session fills in when nobody set it."""

from __future__ import annotations

import os

from airflow_hoodie.spark.session import _local_cores


def test_local_masters_get_a_few_shuffle_partitions_per_core_clusters_none():
    assert _local_cores("local[4]") == 4
    assert _local_cores("local") == 1
    assert _local_cores("local[*]") == (os.cpu_count() or 1)
    assert _local_cores("local[2,3]") == 2  # local[N,maxFailures]
    assert _local_cores("spark://host:7077") is None
    assert _local_cores("yarn") is None
    assert _local_cores(None) is None


def test_the_shared_session_starts_adaptive_execution_from_few_partitions(spark):
    # the test session sets spark.sql.shuffle.partitions itself, so nothing else is filled in
    conf = spark.conf
    assert conf.get("spark.sql.adaptive.enabled") == "true"
    assert conf.get("spark.sql.shuffle.partitions") != "200"
