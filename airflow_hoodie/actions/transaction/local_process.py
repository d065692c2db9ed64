"""Who owns a heartbeat or a lock file, in a form that lets a later task on the same host
tell that the owner is dead: its host, its process-id space and its pid. A task killed with
``kill -9`` cannot release what it held; a retry on the same host must not wait out an
expiry (or, for a lock that never expires, wait forever) for a process that is gone."""

from __future__ import annotations

import os
import socket
from typing import Any, Mapping

HOST = socket.gethostname()


def _pid_namespace() -> str | None:
    """Which process-id space our pid belongs to: containers sharing the host's name
    (host networking) each have their own, where another's pid means nothing."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


PID_NAMESPACE = _pid_namespace()


def this_process() -> dict[str, Any]:
    """The owner fields naming the running process."""
    return {"host": HOST, "pidns": PID_NAMESPACE, "pid": os.getpid()}


def owner_is_gone(owner: Mapping[str, Any]) -> bool:
    """``owner`` names a process on this host, in our pid space, that no longer exists.
    Anything else (another host, a foreign writer's owner without a pid) is not known dead."""
    if owner.get("host") != HOST or owner.get("pidns") != PID_NAMESPACE or not isinstance(owner.get("pid"), int):
        return False
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
