"""Misspelled hoodie.* keys are refused with a suggestion before anything runs; real Hudi
keys airflow-hoodie does not read are let through."""

from __future__ import annotations

import subprocess
import sys

import pytest

from airflow_hoodie.config import HoodieConfig, suggestion_for
from airflow_hoodie.errors import HoodieConfigError
from airflow_hoodie.hudi_config_keys import hudi_config_keys


@pytest.mark.parametrize(("typo", "meant"), [
    ("hoodie.tabel.type", "hoodie.table.type"),
    ("hoodie.datasource.write.recordkey.feild", "hoodie.datasource.write.recordkey.field"),
    ("hoodie.cleaner.commits.retaind", "hoodie.cleaner.commits.retained"),
    ("hoodie.write.lock.zookeper.url", "hoodie.write.lock.zookeeper.url"),
])
def test_a_typo_is_refused_with_the_key_it_meant(typo, meant):
    with pytest.raises(HoodieConfigError, match=f"{typo} is not a setting airflow-hoodie knows: did you mean {meant}"):
        HoodieConfig({typo: "x"}).check_spelling()


def test_real_hudi_keys_and_unrelated_keys_pass():
    assert {"hoodie.clean.async", "hoodie.upsert.shuffle.parallelism", "hoodie.metadata.enable"} <= hudi_config_keys()
    HoodieConfig({"hoodie.clean.async": "true", "hoodie.metrics.on": "false", "hoodie.my.own.marker": "1",
                  "hoodie.table.type": "MERGE_ON_READ"}).check_spelling()
    assert suggestion_for("hoodie.something.entirely.different") is None


def test_the_check_does_not_depend_on_what_was_imported_before():
    """A fresh interpreter that imported nothing but the config module refuses the same typo."""
    code = ("from airflow_hoodie.config import HoodieConfig\n"
            "try:\n    HoodieConfig({'hoodie.cleaner.polcy': 'x'}).check_spelling()\n"
            "except Exception as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "did you mean hoodie.cleaner.policy" in out


def test_a_job_refuses_a_typo_before_its_session(tmp_path):
    from airflow_hoodie.spark.job import load_config

    import argparse
    args = argparse.Namespace(props=None, hoodie_conf=["hoodie.datasource.write.precombine.feild=ts"])
    with pytest.raises(HoodieConfigError, match="did you mean hoodie.datasource.write.precombine.field"):
        load_config(args)
