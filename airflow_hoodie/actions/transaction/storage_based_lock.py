"""Hudi's StorageBasedLockProvider (RFC-91, Hudi 1.0.2+): the table lock as one small JSON
file under the table, taken and renewed with the store's own conditional writes, so an S3
table needs no ZooKeeper or DynamoDB to be written by several tasks.

The file is ``<base>/.hoodie/.locks/table_lock.json`` holding
``{"expired": <bool>, "validUntil": <epoch ms>, "owner": "<uuid>"}``, as Hudi's Java provider
writes it, so our tasks and Hudi's writers exclude each other. A lease:

- is taken when the file is absent (create with ``If-None-Match: *``) or holds a lease that
  is released (``expired``) or ran out more than the clock-drift buffer ago (replace with
  ``If-Match`` on the ETag just read): two takers cannot both win;
- is renewed by a heartbeat thread every ``hoodie.write.lock.storage.heartbeat.poll.secs``,
  each renewal conditioned on the ETag of our last write: a renewal that finds the file
  changed means someone else took it, and the holder stops believing it holds it;
- is checked (renewed once more, synchronously) right before an instant completes
  (:meth:`ensure_held`): a holder that stalled past its lease aborts instead of completing
  beside the new holder;
- is released by writing ``expired: true`` conditioned on our ETag.

On S3 the conditions are PutObject's ``If-None-Match`` / ``If-Match`` (boto3); on a local
path the hard-link create and a flock-guarded compare-and-swap
(:mod:`airflow_hoodie.table.storage.local_conditional`). Other stores are refused.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass

from airflow_hoodie.actions.transaction.lock_provider import LockProvider
from airflow_hoodie.config_keys.locks import STORAGE_VALIDITY_TIMEOUT_SECS
from airflow_hoodie.errors import HoodieConfigError, HoodieError, HoodieLockError
from airflow_hoodie.settings.lock import StorageLockSettings
from airflow_hoodie.table.storage.s3_conditional import Versioned
from airflow_hoodie.table.storage.storage import Storage

log = logging.getLogger(__name__)

LOCKS_FOLDER = ".hoodie/.locks"
LOCK_FILE_NAME = "table_lock.json"
#: Hudi's CLOCK_DRIFT_BUFFER_MS: a lease is deemed dangling only this long after its validUntil
CLOCK_DRIFT_BUFFER_MS = 500
#: Hudi's pause between acquire attempts (LockConfiguration's default retry wait)
RETRY_WAIT_S = 1.0


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class LockData:
    """The lock file's JSON (Hudi's StorageLockData)."""

    expired: bool
    valid_until: int
    owner: str

    def to_bytes(self) -> bytes:
        return json.dumps({"expired": self.expired, "validUntil": self.valid_until, "owner": self.owner},
                          separators=(",", ":")).encode()

    @classmethod
    def parse(cls, data: bytes) -> "LockData":
        try:
            obj = json.loads(data)
            return cls(bool(obj["expired"]), int(obj["validUntil"]), str(obj["owner"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise HoodieLockError(
                f"The storage lock file holds {data[:200]!r}, not Hudi's StorageLockData JSON "
                "(expired, validUntil, owner). Something else writes .hoodie/.locks/table_lock.json; "
                "delete it once no writer runs.") from exc

    def is_live(self, at_ms: int) -> bool:
        """Held by its owner: not released, and not certainly past its validity."""
        return not self.expired and at_ms <= self.valid_until + CLOCK_DRIFT_BUFFER_MS


class StorageBasedLockProvider(LockProvider):
    """The RFC-91 lease on ``.hoodie/.locks/table_lock.json``; see the module docstring."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        own = self.settings.provider_settings
        assert isinstance(own, StorageLockSettings)
        self.validity_s, self.poll_s = own.validity_s, own.poll_s
        self.storage, base_path = Storage.for_uri(self.base_uri, self.storage_options or None)
        if not (self.storage.is_local or self.storage.has_atomic_create):
            raise HoodieConfigError(
                f"StorageBasedLockProvider needs conditional writes, which airflow-hoodie implements for S3 and "
                f"local paths only; {self.base_uri} is neither. Use ZookeeperBasedLockProvider or "
                "DynamoDBBasedLockProvider (hoodie.write.lock.provider).")
        self.storage.mkdirs(Storage.join(base_path, LOCKS_FOLDER))
        self.path = Storage.join(base_path, LOCKS_FOLDER, LOCK_FILE_NAME)
        self.owner = str(uuid.uuid4())  # Hudi: a random UUID per provider
        self._mutex = threading.Lock()  # one write of our lease at a time
        self._held: Versioned | None = None
        self._lost = False
        self._stop = threading.Event()
        self._beater: threading.Thread | None = None

    # ---------------------------------------------------------------- one attempt
    def _read(self) -> tuple[Versioned | None, LockData | None]:
        current = self.storage.read_versioned(self.path)
        return current, None if current is None else LockData.parse(current.data)

    def _try_once(self) -> bool:
        try:
            current, data = self._read()
        except HoodieError as exc:
            log.info("Cannot read %s to take the lock (%s); retrying", self.describe(), exc)
            return False
        if data is not None and data.is_live(now_ms()):
            return False
        lease = LockData(False, now_ms() + self.validity_s * 1000, self.owner).to_bytes()
        try:
            if current is None:
                written = self.storage.create_versioned(self.path, lease)
            else:
                written = self.storage.replace_if_version(self.path, lease, current.etag)
        except HoodieError as exc:
            log.info("Taking %s failed (%s); retrying", self.describe(), exc)
            return False
        if written is None:
            return False  # another writer took it between our read and our write
        with self._mutex:
            self._held, self._lost = written, False
        return True

    # ------------------------------------------------------------------ renewals
    def _renew(self) -> bool | None:
        """Extend our lease. True: renewed; False: no longer ours; None: the store did not
        answer (transient, as Hudi treats it: the next renewal or the lease decides)."""
        with self._mutex:
            held = self._held
            if held is None or self._lost:
                return False
            mine = LockData.parse(held.data)
            if not mine.is_live(now_ms()) or now_ms() > mine.valid_until:
                self._lost = True  # our own lease ran out: someone may be taking it now
                return False
            lease = LockData(False, now_ms() + self.validity_s * 1000, self.owner).to_bytes()
            try:
                written = self.storage.replace_if_version(self.path, lease, held.etag)
            except HoodieError as exc:
                log.warning("Renewing %s failed (%s); the next renewal retries", self.describe(), exc)
                return None
            if written is None:
                self._lost = True
                log.error("%s was taken by another writer: this task no longer holds it", self.describe())
                return False
            self._held = written
            return True

    def _heartbeats(self) -> None:
        while not self._stop.wait(self.poll_s):
            if self._renew() is False:
                return

    # ------------------------------------------------------------------ the lock
    def try_lock(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while True:
            if self._try_once():
                self._stop.clear()
                self._beater = threading.Thread(target=self._heartbeats, name="hoodie-storage-lock-heartbeat",
                                                daemon=True)
                self._beater.start()
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(RETRY_WAIT_S, max(deadline - time.monotonic(), 0.0)) or 0.01)

    def ensure_held(self) -> None:
        """Renew now: if it lands, nobody can take the lock for a whole validity period."""
        if self._held is None or self._renew() is not True:
            raise HoodieLockError(
                f"The {self.describe()} is no longer ours, or the store could not confirm it: our lease ran out "
                f"(this task stalled longer than {STORAGE_VALIDITY_TIMEOUT_SECS}={self.validity_s}s) or another "
                "writer took it. Nothing was completed; retry the task.")

    def unlock(self) -> None:
        """Write our lease back as ``expired: true`` on our ETag; a lease someone else took
        meanwhile is left alone."""
        if self._beater is not None:
            self._stop.set()
            self._beater.join()
            self._beater = None
        with self._mutex:
            held, lost, self._held = self._held, self._lost, None
        if held is None or lost:
            return
        released = LockData(True, LockData.parse(held.data).valid_until, self.owner).to_bytes()
        try:
            self.storage.replace_if_version(self.path, released, held.etag)
        except HoodieError as exc:
            raise HoodieLockError(f"Releasing the {self.describe()} failed: {exc}; it frees itself when its lease "
                                  f"runs out ({self.validity_s}s).") from exc

    def describe(self) -> str:
        return f"storage lock {self.storage.uri(self.path)}"

    def holder(self) -> str:
        try:
            _, data = self._read()
        except HoodieError:
            return "unknown"
        if data is None or not data.is_live(now_ms()):
            return "nobody"
        return data.owner
