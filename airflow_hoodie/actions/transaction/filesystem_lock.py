"""Hudi's FileSystemBasedLockProvider: a ``lock`` file created atomically under
``hoodie.write.lock.filesystem.path`` (default the table's ``.hoodie``), expiring after
``hoodie.write.lock.filesystem.expire`` minutes (0 = never). The engines' default lock
(Flink's writers, NBCC here, when no provider is named) is the same provider under
``<base>/.hoodie/.aux`` expiring after 1 minute (:meth:`FileSystemLockSettings.engine_default`).

A lock whose holder was killed (``kill -9``) cannot be released by it. A waiter on the same
host breaks a lock whose owner process is gone, as heartbeats judge their owners (a live
process that took over the dead holder's pid is told apart by its start time); any
other holder is named, with the file to delete if the user knows it is dead.

The file's JSON is Hudi's ``LockInfo`` (``lockCreateTime``, ``lockThreadName``; Hudi's
writers only log it, and judge expiry by the file's modification time) plus our owner
fields (host, pid space, pid, pid start time, token), which Hudi ignores.

Correct only where creating a file is atomic create-if-absent. Our local filesystem
does that with a hard link of a fully written file; object stores reached through
pyarrow offer no conditional create, so there the provider refuses to start.
"""

from __future__ import annotations

import datetime as _dt
import json
import threading
import time
import uuid

from airflow_hoodie.actions.transaction.local_process import owner_is_gone, this_process
from airflow_hoodie.actions.transaction.lock_provider import LockProvider
from airflow_hoodie.config_keys.locks import LOCK_EXPIRE_MIN
from airflow_hoodie.errors import HoodieLockError
from airflow_hoodie.settings.lock import FileSystemLockSettings
from airflow_hoodie.table.storage.storage import Storage

LOCK_FILE_NAME = "lock"


class FileSystemBasedLockProvider(LockProvider):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        own = self.settings.provider_settings
        assert isinstance(own, FileSystemLockSettings)
        directory = own.path or self.base_uri.rstrip("/") + "/" + own.default_dir
        self.storage, dir_path = Storage.for_uri(directory, self.storage_options or None)
        if not self.storage.is_local:
            raise HoodieLockError(
                f"FileSystemBasedLockProvider needs an atomic create-if-absent, which {directory} does not "
                "offer through airflow-hoodie; use ZookeeperBasedLockProvider or DynamoDBBasedLockProvider "
                "(hoodie.write.lock.provider) for tables on object stores.")
        self.path = self.storage.join(dir_path, LOCK_FILE_NAME)
        self.expire_s = own.expire_s
        self._token: str | None = None

    def _owner_info(self, token: str) -> bytes:
        now = _dt.datetime.now()
        return json.dumps({
            "lockCreateTime": now.strftime("%Y-%m-%d %H:%M:%S.") + f"{now.microsecond // 1000:03d}",
            "lockThreadName": threading.current_thread().name,
            **this_process(), "token": token,
        }).encode()

    def _owner(self) -> dict:
        try:
            owner = json.loads(self.storage.read_bytes(self.path))
        except Exception:  # noqa: BLE001 - released meanwhile, or a Hudi writer's lock info
            return {}
        return owner if isinstance(owner, dict) else {}

    def _written_at(self, path: str) -> float | None:
        info = self.storage.info(path)
        return None if info is None or info.mtime_ns is None else info.mtime_ns / 1e9

    def _expired(self) -> bool:
        """Older than the configured expiry, or held by a process of this host that is gone."""
        written_at = self._written_at(self.path)
        if written_at is None:
            return False  # released meanwhile
        if owner_is_gone(self._owner(), written_at):
            return True
        return bool(self.expire_s) and time.time() - written_at > self.expire_s

    def try_lock(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + max(timeout_s, 0)
        token = uuid.uuid4().hex
        pause = 0.01
        while True:
            if self._expired():
                self._break_expired()
            if self.storage.create_if_absent(self.path, self._owner_info(token)):
                self._token = token
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(pause, max(deadline - time.monotonic(), 0)))
            pause = min(pause * 2, 0.2)

    def _break_expired(self) -> None:
        """Delete an expired (or dead holder's) lock file. Two waiters that both saw it expired must not both
        delete: the second would delete the fresh lock the first just took, and both would
        hold the lock. So breaking takes its own ``lock.break`` file and re-checks the
        expiry under it."""
        brk = self.path + ".break"
        mine = json.dumps({**this_process(), "token": uuid.uuid4().hex}).encode()
        if not self.storage.create_if_absent(brk, mine) and not self._take_stale_break(brk, mine):
            return
        try:
            if self._expired():
                self.storage.delete(self.path)
        finally:
            try:
                ours = self.storage.read_bytes(brk) == mine
            except Exception:  # noqa: BLE001 - gone: nothing of ours to delete
                ours = False
            if ours:
                self.storage.delete(brk)

    def _take_stale_break(self, brk: str, mine: bytes) -> bool:
        """Take over a ``lock.break`` its breaker left behind: one whose breaker process is
        gone (killed while breaking: it is taken over at once), or, written by a breaker we
        cannot judge (another host, an older writer's empty file), older than the expiry or
        60 s. Taken with a compare-and-swap on the stale file's content, so of two waiters
        that both found it stale only one breaks."""
        current = self.storage.read_versioned(brk)
        if current is None:
            return False  # the breaker finished meanwhile: the next attempt sees its result
        try:
            owner = json.loads(current.data) if current.data else {}
        except ValueError:
            owner = {}
        written_at = self._written_at(brk)
        stale = (isinstance(owner, dict) and owner_is_gone(owner, written_at)) or (
            written_at is not None and time.time() - written_at > max(self.expire_s, 60))
        return stale and self.storage.replace_if_version(brk, mine, current.etag) is not None

    def unlock(self) -> None:
        if self._token is None:
            return
        try:
            held = json.loads(self.storage.read_bytes(self.path)).get("token") == self._token
        except (ValueError, OSError, Exception):  # noqa: BLE001 - gone or unreadable: not ours to delete
            held = False
        if held:
            self.storage.delete(self.path)
        self._token = None

    def ensure_held(self) -> None:
        """With ``hoodie.write.lock.filesystem.expire`` set, a waiter breaks a lock held past
        the expiry, live holder or not: the file must still carry our token."""
        if self._token is not None and self._owner().get("token") != self._token:
            raise HoodieLockError(
                f"The {self.describe()} was taken over by another task while this one held it (held past "
                f"{LOCK_EXPIRE_MIN}={self.expire_s // 60} minutes); nothing was completed. Retry the task, and raise "
                f"{LOCK_EXPIRE_MIN} above the longest commit of this table.")

    def describe(self) -> str:
        return f"lock file {self.storage.uri(self.path)}"

    def holder(self) -> str:
        """The holder as the lock file names it, and what to do when it is known dead."""
        try:
            text = self.storage.read_bytes(self.path).decode(errors="replace")
        except Exception:  # noqa: BLE001 - released meanwhile
            return "nobody"
        owner = self._owner()
        who = (f"pid {owner['pid']} on host {owner.get('host')}, lockCreateTime {owner.get('lockCreateTime')}"
               if "pid" in owner else text)
        return (f"{who}; if that task is dead and no task of this table runs, delete "
                f"{self.storage.uri(self.path)} (or set {LOCK_EXPIRE_MIN} to let a lock expire)")
