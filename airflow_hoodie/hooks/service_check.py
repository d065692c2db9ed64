"""A table service's checks before spark-submit, in the Airflow worker.

A write refuses a bad call in a second or two; a service on a mistyped path used to find out
7 s later, inside a JVM. What needs only the table and the task's settings is checked here:
a Hudi table is at the path, at a version we write, not half restored, and the settings the
job will validate (archival's keep.min/max against the cleaner's retention) hold.
"""

from __future__ import annotations

from typing import Mapping

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.settings.archive import validate_archive_config
from airflow_hoodie.table.hoodie_table import HoodieTable

#: jobs that finish a half-done restore themselves (a restore is a savepoint job)
_RESTORING_JOBS = ("savepoint",)


def check_service(job: str, base_uri: str, storage_options: Mapping[str, str] | None, config: HoodieConfig) -> None:
    """Raise the error the job would raise for a missing table, a version we do not write,
    a half-done restore or invalid archival settings; touches nothing."""
    table = HoodieTable.load(base_uri, storage_options=dict(storage_options or {}) or None)
    table.check_writable()
    if job not in _RESTORING_JOBS:
        table.check_no_pending_restore()
    if job == "archive":
        validate_archive_config(config)
