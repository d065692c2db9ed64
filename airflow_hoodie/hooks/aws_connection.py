"""An Amazon provider connection (``aws_conn_id``) as our S3 storage options.

Users of the Amazon provider keep their S3 access in an ``aws_default``-style connection:
keys, a session token, a region, an ``endpoint_url``, a profile or a role to assume. A
``hoodie`` connection names it in its ``aws_conn_id`` extra instead of copying it, and we
resolve it with the provider's own :class:`AwsBaseHook`, so profiles, role assumption and
web identity work exactly as they do for the provider's operators. What it resolves to is
turned into the names ``pyarrow.fs.S3FileSystem`` takes (:class:`Storage`'s S3 options).
"""

from __future__ import annotations

from typing import Any

from airflow_hoodie.errors import HoodieConfigError


def _aws_base_hook(aws_conn_id: str) -> Any:
    try:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
    except ImportError as exc:
        raise HoodieConfigError(
            f"The hoodie connection names aws_conn_id={aws_conn_id!r}, which needs the Amazon provider: "
            "pip install 'airflow-hoodie[amazon]' (apache-airflow-providers-amazon), or put the keys in the "
            "hoodie connection's login/password and storage_options instead."
        ) from exc
    return AwsBaseHook(aws_conn_id=aws_conn_id, client_type="s3")


def aws_storage_options(aws_conn_id: str) -> dict[str, str]:
    """S3 storage options (``access_key``, ``secret_key``, ``session_token``, ``region``,
    ``endpoint_override``) from the Amazon connection ``aws_conn_id``.

    Credentials are resolved now (a role is assumed now): a job gets frozen keys, as
    Spark's and pyarrow's S3 clients cannot run the provider's refresh logic. The secret and
    token are masked in task logs by the provider.
    """
    hook = _aws_base_hook(aws_conn_id)
    try:
        config = hook.conn_config
        creds = hook.get_credentials()
    except Exception as exc:  # noqa: BLE001 - the provider raises botocore's and its own errors
        raise HoodieConfigError(
            f"Cannot resolve AWS credentials of connection {aws_conn_id!r} (named by the hoodie connection's "
            f"aws_conn_id): {type(exc).__name__}: {exc}. Check that connection with `airflow connections get "
            f"{aws_conn_id}`."
        ) from exc
    options: dict[str, str] = {}
    if creds.access_key:
        options["access_key"] = creds.access_key
    if creds.secret_key:
        options["secret_key"] = creds.secret_key
    if creds.token:
        options["session_token"] = creds.token
    region = hook.region_name
    if region:
        options["region"] = region
    endpoint = config.get_service_endpoint_url("s3")
    if endpoint:
        options["endpoint_override"] = endpoint
    return options
