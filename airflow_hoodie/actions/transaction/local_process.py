"""Who owns a heartbeat or a lock file, in a form that lets a later task on the same host
tell that the owner is dead: its host, its process-id space, its pid and the pid's start
time. A task killed with ``kill -9`` cannot release what it held; a retry on the same host
must not wait out an expiry (or, for a lock that never expires, wait forever) for a process
that is gone.

A pid alone does not name a process: once the owner died, the kernel hands its pid to the
next process started (containers start few processes, so a pid comes back soon). A live
process with the owner's pid but another start time (Linux: field 22 of
``/proc/<pid>/stat``, clock ticks since boot) is not the owner.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Mapping

HOST = socket.gethostname()
#: how much later than a lock file's write a process may have started and still be its
#: writer (the mtime and the start time are read from different clocks and rounded)
START_SLACK_S = 2.0


def _pid_namespace() -> str | None:
    """Which process-id space our pid belongs to: containers sharing the host's name
    (host networking) each have their own, where another's pid means nothing."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


PID_NAMESPACE = _pid_namespace()


def process_start_ticks(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat`` field
    22); None where there is no procfs or the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: fields 3.. follow the last ")"
    fields = stat[stat.rfind(")") + 2:].split()
    try:
        return int(fields[19])  # field 22 overall
    except (IndexError, ValueError):
        return None


def _boot_time_s() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as f:
            for line in f:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def process_started_at(pid: int) -> float | None:
    """When process ``pid`` started, as epoch seconds; None when it cannot be told."""
    ticks, boot = process_start_ticks(pid), _boot_time_s()
    if ticks is None or boot is None:
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def this_process() -> dict[str, Any]:
    """The owner fields naming the running process (``pidStart`` where procfs tells it)."""
    owner: dict[str, Any] = {"host": HOST, "pidns": PID_NAMESPACE, "pid": os.getpid()}
    start = process_start_ticks(os.getpid())
    if start is not None:
        owner["pidStart"] = start
    return owner


def owner_is_gone(owner: Mapping[str, Any], written_at: float | None = None) -> bool:
    """``owner`` names a process on this host, in our pid space, that no longer exists, or
    whose pid now belongs to another process: one with another start time than the owner
    recorded, or (an owner recorded without one) one that started after ``written_at``,
    the epoch time the owner's file was written. Anything else (another host, a foreign
    writer's owner without a pid) is not known dead."""
    if owner.get("host") != HOST or owner.get("pidns") != PID_NAMESPACE or not isinstance(owner.get("pid"), int):
        return False
    pid = owner["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's: its start time still tells whether it is the owner
    recorded = owner.get("pidStart")
    if isinstance(recorded, int) and not isinstance(recorded, bool):
        now = process_start_ticks(pid)
        return now is not None and now != recorded
    if written_at is not None:
        started = process_started_at(pid)
        return started is not None and started > written_at + START_SLACK_S
    return False
