"""Heartbeats of pending instants: ``.hoodie/.heartbeat/<instant>``, an empty file whose
modification time a background thread of the driver refreshes, as Hudi's
HoodieHeartbeatClient does. An instant is failed only when its heartbeat expired, so a
slow but live writer is never rolled back under its feet."""

from __future__ import annotations

import json
import threading
import time
import uuid

from airflow_hoodie.actions.transaction.local_process import owner_is_gone, this_process
from airflow_hoodie.settings.lock import LockSettings
from airflow_hoodie.table.storage.storage import Storage

HEARTBEAT_FOLDER = ".heartbeat"
# Hudi reads only a heartbeat's modification time; the owner lets a retry on the same host
# see at once that the writer it replaces is dead, and the token tells an executor whose
# plan was taken over (after it stalled past the expiry) that it no longer owns the plan.


def _owner(token: str) -> bytes:
    return json.dumps({**this_process(), "token": token}).encode()


class Heartbeats:
    """The heartbeats of one table: start/stop ours, judge everybody's."""

    def __init__(self, storage: Storage, base_path: str, settings: LockSettings) -> None:
        self.storage = storage
        self.folder = storage.join(base_path, ".hoodie", HEARTBEAT_FOLDER)
        self.interval_s = settings.heartbeat_interval_s
        self.expiry_s = settings.heartbeat_expiry_s
        self._threads: dict[str, tuple[threading.Thread, threading.Event]] = {}
        self._tokens: dict[str, str] = {}

    def path(self, instant_time: str) -> str:
        return self.storage.join(self.folder, instant_time)

    def beat(self, instant_time: str) -> None:
        token = self._tokens.setdefault(instant_time, uuid.uuid4().hex)
        self.storage.write_bytes(self.path(instant_time), _owner(token))

    def start(self, instant_time: str) -> None:
        """First beat now, then one every interval until :meth:`stop`, or until the
        heartbeat names another owner (our plan was taken over: we must not revive it)."""
        self.beat(instant_time)
        token = self._tokens[instant_time]
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(self.interval_s):
                try:
                    if not self.owns(instant_time, token):
                        return
                    self.beat(instant_time)
                except Exception:  # noqa: BLE001 - a missed beat is what expiry tolerates
                    pass

        thread = threading.Thread(target=run, name=f"hoodie-heartbeat-{instant_time}", daemon=True)
        thread.start()
        self._threads[instant_time] = (thread, stop)

    def claim(self, instant_time: str) -> str | None:
        """Start heartbeating ``instant_time`` only if nobody live does (one executor per
        plan). Returns our ownership token, None when a fresh heartbeat of someone else exists."""
        token = uuid.uuid4().hex
        if not self.storage.create_if_absent(self.path(instant_time), _owner(token)):
            if not self.is_expired(instant_time):
                return None
            self.storage.delete(self.path(instant_time))
            if not self.storage.create_if_absent(self.path(instant_time), _owner(token)):
                return None
        self._tokens[instant_time] = token
        self.start(instant_time)
        return token

    def owns(self, instant_time: str, token: str) -> bool:
        """The heartbeat of ``instant_time`` is still the one ``token`` claimed."""
        try:
            data = self.storage.read_bytes(self.path(instant_time))
            return json.loads(data or b"{}").get("token") == token
        except Exception:  # noqa: BLE001 - gone, or an empty heartbeat written by a Hudi writer
            return False

    def stop(self, instant_time: str) -> None:
        """Stop beating and remove the heartbeat (the instant completed or was rolled back)."""
        entry = self._threads.pop(instant_time, None)
        if entry is not None:
            entry[1].set()
            entry[0].join()
        token = self._tokens.pop(instant_time, None)
        if token is not None and self.storage.exists(self.path(instant_time)) and not self.owns(instant_time, token):
            return  # taken over: the heartbeat is the new owner's
        self.storage.delete(self.path(instant_time))

    def stop_all(self) -> None:
        for instant_time in list(self._threads):
            self.stop(instant_time)

    def last_beat(self, instant_time: str) -> float | None:
        info = self.storage.info(self.path(instant_time))
        return None if info is None or info.mtime_ns is None else info.mtime_ns / 1e9

    def _owner_is_gone(self, instant_time: str) -> bool:
        """The heartbeat names a process on this host that no longer exists: a killed try
        whose retry runs here need not wait out the expiry window."""
        try:
            owner = json.loads(self.storage.read_bytes(self.path(instant_time)) or b"{}")
        except Exception:  # noqa: BLE001 - Hudi's empty heartbeat files carry no owner
            return False
        return owner_is_gone(owner)

    def is_expired(self, instant_time: str) -> bool:
        """Expired heartbeat, its process gone, or no heartbeat at all. Hudi's rule
        (HoodieHeartbeatUtils: a missing file's last beat is 0): every writer starts beating
        before its instant exists and stops only once the instant completed or was rolled
        back, so a pending write without a heartbeat is one whose writer died mid-cleanup."""
        last = self.last_beat(instant_time)
        if last is None:
            return True
        return time.time() - last > self.expiry_s or self._owner_is_gone(instant_time)
