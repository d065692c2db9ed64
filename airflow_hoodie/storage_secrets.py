"""Which storage options are secrets, and how they reach a job: in an environment variable,
never on its command line or in a log.

Shared by the Airflow side (hooks, sensors, in the triggerer too) and the Spark jobs, so it
imports nothing: the triggerer must not load pyspark to mask a credential.
"""

from __future__ import annotations

#: storage credentials reach a job in this environment variable (JSON), never as arguments
STORAGE_SECRETS_ENV = "HOODIE_STORAGE_SECRETS"
#: the same for a write's source batch on another bucket or store (``source_storage_options``)
SOURCE_STORAGE_SECRETS_ENV = "HOODIE_SOURCE_STORAGE_SECRETS"
_SECRET_WORDS = ("secret", "key", "token", "password", "credential", "sas")


def is_secret_option(key: str) -> bool:
    """A storage option that must stay off command lines and out of logs."""
    return any(word in key.lower() for word in _SECRET_WORDS)
