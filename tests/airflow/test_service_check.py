"""A table service refuses a bad call before spark-submit, as writes do (issue 36, item 4):
a mistyped base path was found only once the JVM had started, 7.6 s in."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from airflow_hoodie.errors import (
    HoodieConfigError,
    HoodieTableNotFoundError,
    HoodieTimelineError,
)
from airflow_hoodie.operators.hoodie import (
    HoodieArchiveOperator,
    HoodieCleanOperator,
    HoodieCompactionPlanOperator,
)
from tests.airflow.conftest import write_timeline


class _NoSubmit:
    def __init__(self) -> None:
        self.submitted = []

    def __call__(self, *args, **kwargs):
        self.submitted.append(args)
        raise AssertionError("spark-submit must not start")


@pytest.fixture
def no_submit(monkeypatch):
    spy = _NoSubmit()
    monkeypatch.setattr("airflow_hoodie.hooks.hoodie.HoodieHook.run_job", spy)
    return spy


@pytest.mark.parametrize("operator", [HoodieCompactionPlanOperator, HoodieCleanOperator, HoodieArchiveOperator])
def test_a_service_on_a_path_with_no_table_fails_before_submit(tmp_path: Path, no_submit, operator) -> None:
    op = operator(task_id="svc", base_path=str(tmp_path / "ordrs2"))
    started = time.monotonic()
    with pytest.raises(HoodieTableNotFoundError, match="ordrs2"):
        op.execute({})
    assert time.monotonic() - started < 5 and no_submit.submitted == []


def test_a_half_restored_table_and_bad_archival_settings_fail_before_submit(tmp_path: Path, no_submit) -> None:
    base = write_timeline(tmp_path / "t", ["20240101000000000.commit", "20240102000000000.restore.inflight"])
    with pytest.raises(HoodieTimelineError, match="did not finish"):
        HoodieCleanOperator(task_id="c", base_path=str(base)).execute({})
    fine = write_timeline(tmp_path / "u", ["20240101000000000.commit"])
    with pytest.raises(HoodieConfigError, match="hoodie.keep.max.commits"):
        HoodieArchiveOperator(task_id="a", base_path=str(fine),
                              hoodie_conf={"hoodie.keep.min.commits": "12", "hoodie.keep.max.commits": "11"}).execute({})
    assert no_submit.submitted == []


def test_a_version_we_do_not_write_fails_before_submit(tmp_path: Path, no_submit) -> None:
    base = write_timeline(tmp_path / "t", ["20240101000000000.commit"])
    props = base / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.version=6", "hoodie.table.version=5"))
    with pytest.raises(Exception, match="version 5"):
        HoodieCompactionPlanOperator(task_id="p", base_path=str(base)).execute({})
    assert no_submit.submitted == []
