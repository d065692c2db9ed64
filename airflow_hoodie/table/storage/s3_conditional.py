"""S3 conditional writes (``If-None-Match: *`` / ``If-Match: <etag>``) through boto3.

``pyarrow.fs.S3FileSystem`` cannot send preconditions, so the two steps that must be atomic
on S3 go through boto3 instead: creating a timeline (or heartbeat, marker, lock) file only if
it does not exist, and replacing the lock file only if nobody changed it since we read it
(RFC-91's StorageBasedLockProvider). S3 has honoured both headers since 2024 (If-Match on
PutObject since late 2024); a store that ignores them would make these calls unsafe, so the
tests run them against a real endpoint.

The same client also does the small whole-object calls where pyarrow spends extra requests:
a write in one PutObject (pyarrow: a three-request multipart upload), a read in one GetObject
(pyarrow: HEAD first), a delete without re-creating a directory marker.

The client is built from the same pyarrow storage options the rest of the table uses
(``access_key``, ``secret_key``, ``session_token``, ``region``, ``endpoint_override``,
``scheme``, ``connect_timeout``, ``request_timeout``); without keys boto3 finds credentials
the standard AWS way (environment, profile, instance role). Retries use botocore's
``standard`` retry mode, as pyarrow's ``AwsStandardS3RetryStrategy`` does for the other calls.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping

from airflow_hoodie.errors import HoodieIOError

#: retries of one conditional call (botocore ``standard`` mode counts the first attempt)
DEFAULT_MAX_ATTEMPTS = 3
#: attempts of a conditional PUT that S3 answers 409 (a concurrent conditional write of the key)
CONFLICT_ATTEMPTS = 5


@dataclass(frozen=True)
class Versioned:
    """An object's bytes and the ETag a conditional update must name."""

    data: bytes
    etag: str


def _endpoint_url(options: Mapping[str, Any]) -> str | None:
    endpoint = options.get("endpoint_override")
    if not endpoint:
        return None
    endpoint = str(endpoint)
    if "://" in endpoint:
        return endpoint
    return f"{options.get('scheme') or 'https'}://{endpoint}"


def _split(path: str) -> tuple[str, str]:
    bucket, _, key = path.partition("/")
    if not bucket or not key:
        raise HoodieIOError(f"S3 path {path!r} has no bucket or no key; use s3://bucket/key.")
    return bucket, key


#: boto3 clients by their options: building one costs a few hundred ms (botocore loads its
#: service models), and every Storage.for_uri (each table load, each task) makes a writer
_CLIENTS: dict[tuple[tuple[str, str], ...], Any] = {}
_CLIENTS_GUARD = threading.Lock()


class S3ConditionalWriter:
    """Conditional PutObject and GetObject-with-ETag on one S3 endpoint."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._options = dict(options)
        self._client: Any = None

    def _s3(self) -> Any:
        if self._client is None:
            key = tuple(sorted((str(k), str(v)) for k, v in self._options.items()))
            with _CLIENTS_GUARD:
                client = _CLIENTS.get(key)
                if client is None:
                    client = _CLIENTS[key] = self._build()
            self._client = client
        return self._client

    def _build(self) -> Any:
        """A client is thread-safe (boto3's rule); a session is not, so each build has its own."""
        try:
            import boto3
            from botocore.config import Config
        except ImportError as exc:  # pragma: no cover - boto3 is a dependency of the provider
            raise HoodieIOError("Conditional writes on S3 need boto3; pip install boto3.") from exc
        o = self._options
        config = Config(
            retries={"mode": "standard", "max_attempts": int(o.get("retry_max_attempts") or DEFAULT_MAX_ATTEMPTS)},
            connect_timeout=float(o.get("connect_timeout") or 60),
            read_timeout=float(o.get("request_timeout") or 60),
            s3={"addressing_style": "path" if o.get("endpoint_override") else "auto"},
        )
        return boto3.session.Session().client(
            "s3",
            endpoint_url=_endpoint_url(o),
            region_name=o.get("region") or None,
            aws_access_key_id=o.get("access_key") or None,
            aws_secret_access_key=o.get("secret_key") or None,
            aws_session_token=o.get("session_token") or None,
            config=config,
        )

    @staticmethod
    def _code(exc: Any) -> tuple[str, int, int]:
        resp = getattr(exc, "response", None) or {}
        meta = resp.get("ResponseMetadata", {})
        return (str(resp.get("Error", {}).get("Code", "")), int(meta.get("HTTPStatusCode") or 0),
                int(meta.get("RetryAttempts") or 0))

    def _put(self, path: str, data: bytes, **condition: str) -> str | None:
        """PUT with a precondition: the new ETag, or None when the precondition failed."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = _split(path)
        for attempt in range(CONFLICT_ATTEMPTS):
            try:
                resp = self._s3().put_object(Bucket=bucket, Key=key, Body=data, **condition)
                return str(resp["ETag"])
            except ClientError as exc:
                code, status, retries = self._code(exc)
                if status == 409 or code == "ConditionalRequestConflict":
                    # another conditional write of this key was in flight: its outcome decides
                    # ours, so ask again (S3's advice) instead of guessing
                    time.sleep(0.05 * (attempt + 1))
                    continue
                if status == 412 or code == "PreconditionFailed":
                    if retries:
                        # an earlier attempt may have landed and only its answer got lost: the
                        # object then holds exactly our bytes, and the write is ours
                        current = self.get(path)
                        if current is not None and current.data == data:
                            return current.etag
                    return None
                raise HoodieIOError(f"Cannot write s3://{path}: {exc}") from exc
            except BotoCoreError as exc:
                raise HoodieIOError(f"Cannot write s3://{path}: {exc}") from exc
        raise HoodieIOError(f"Cannot write s3://{path}: S3 answered 409 ConditionalRequestConflict "
                            f"{CONFLICT_ATTEMPTS} times (concurrent writes of one key); retry the task.")

    def put_if_absent(self, path: str, data: bytes) -> str | None:
        """Create ``path``; its ETag, or None when it already exists."""
        return self._put(path, data, IfNoneMatch="*")

    def put_if_match(self, path: str, data: bytes, etag: str) -> str | None:
        """Replace ``path`` only if its ETag is still ``etag``; the new ETag, or None."""
        return self._put(path, data, IfMatch=etag)

    def put(self, path: str, data: bytes) -> str:
        """One unconditional PutObject (pyarrow's output stream spends three requests on a
        multipart upload even for a few bytes); the new ETag."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = _split(path)
        try:
            return str(self._s3().put_object(Bucket=bucket, Key=key, Body=data)["ETag"])
        except (ClientError, BotoCoreError) as exc:
            raise HoodieIOError(f"Cannot write s3://{path}: {exc}") from exc

    def head(self, path: str) -> bool:
        """Whether the object exists: one HEAD (pyarrow follows a missing key with a LIST, to
        see whether it is a directory)."""
        return self._head(path, "stat")

    def _head(self, path: str, doing: str) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = _split(path)
        try:
            self._s3().head_object(Bucket=bucket, Key=key)
            return True
        except ClientError as exc:
            code, status, _ = self._code(exc)
            if status == 404 or code in ("NoSuchKey", "404", "NotFound"):
                return False
            raise HoodieIOError(f"Cannot {doing} s3://{path}: {exc}") from exc
        except BotoCoreError as exc:
            raise HoodieIOError(f"Cannot {doing} s3://{path}: {exc}") from exc

    def delete(self, path: str) -> bool:
        """Delete one object; whether it existed (a HEAD, then a DeleteObject). pyarrow's
        delete also re-creates a directory marker for the parent: a PUT nobody needs."""
        from botocore.exceptions import BotoCoreError, ClientError

        if not self._head(path, "delete"):
            return False
        bucket, key = _split(path)
        try:
            self._s3().delete_object(Bucket=bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            raise HoodieIOError(f"Cannot delete s3://{path}: {exc}") from exc
        return True

    def get(self, path: str) -> Versioned | None:
        """The object and its ETag in one GetObject; None when it does not exist."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = _split(path)
        try:
            resp = self._s3().get_object(Bucket=bucket, Key=key)
            return Versioned(resp["Body"].read(), str(resp["ETag"]))
        except ClientError as exc:
            code, status, _ = self._code(exc)
            if status == 404 or code in ("NoSuchKey", "404"):
                return None
            raise HoodieIOError(f"Cannot read s3://{path}: {exc}") from exc
        except BotoCoreError as exc:
            raise HoodieIOError(f"Cannot read s3://{path}: {exc}") from exc
