"""Hudi's three cleaner policies, and ``hoodie.cleaner.policy`` read and checked: the one key
both the cleaner and the archiver (whose bounds follow what the cleaner keeps) depend on."""

from __future__ import annotations

from airflow_hoodie.config import HoodieConfig
from airflow_hoodie.config_keys.clean import POLICY
from airflow_hoodie.errors import HoodieConfigError

KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"
POLICIES = (KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS, KEEP_LATEST_BY_HOURS)


def policy_of(config: HoodieConfig) -> str:
    """``hoodie.cleaner.policy``, refused by name when it is none of Hudi's three."""
    policy = (config.get(POLICY) or KEEP_LATEST_COMMITS).upper()
    if policy not in POLICIES:
        raise HoodieConfigError(f"{POLICY}={policy!r} is not supported; use one of {', '.join(POLICIES)}.")
    return policy
