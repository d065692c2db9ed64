"""Compare-and-swap of one small local file: the local counterpart of S3's ``If-Match``.

The storage-based lock renews its lease by replacing the lock file only if it still holds
what we last read. Locally the "ETag" is the SHA-256 of the file's bytes (each lease carries
its owner and expiry, so two leases never hash alike), and the compare and the replace run
under an exclusive ``flock`` of a sidecar file, so two processes on this host cannot both
win. Creation needs no sidecar: ``Storage.create_if_absent``'s hard link is atomic already.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import uuid

from airflow_hoodie.errors import HoodieIOError


def etag_of(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest() + '"'


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to a temp file beside ``path``, sync it and rename it into place, so a
    reader sees the old bytes or the new ones, never a part."""
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_versioned(path: str) -> tuple[bytes, str] | None:
    """The file's bytes and ETag; None when it does not exist."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HoodieIOError(f"Cannot read {path!r}: {exc}") from exc
    return data, etag_of(data)


def replace_if_match(path: str, data: bytes, etag: str) -> str | None:
    """Replace ``path`` with ``data`` if it still has ``etag``; the new ETag, or None."""
    try:
        with open(path + ".cas", "a+b") as guard:
            fcntl.flock(guard.fileno(), fcntl.LOCK_EX)
            try:
                current = read_versioned(path)
                if current is None or current[1] != etag:
                    return None
                write_atomically(path, data)
                return etag_of(data)
            finally:
                fcntl.flock(guard.fileno(), fcntl.LOCK_UN)
    except OSError as exc:
        raise HoodieIOError(f"Cannot replace {path!r}: {exc}") from exc
