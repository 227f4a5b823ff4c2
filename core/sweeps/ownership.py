"""Who owns a running sweep, and whether that process is still alive.

Interrupted sweeps: a sweep's row records its owner, the process running it (``owner_pid``,
``owner_host``, ``owner_start``: the process start time, so a recycled pid is not mistaken for
it), and ``updated_at`` is a heartbeat rewritten with every committed chunk. A sweep stored as
'running' whose owner is gone is *interrupted* (:func:`effective_status`); when the owner cannot
be checked (another host, another OS, a database written before these columns existed) a
heartbeat older than :data:`STALE_AFTER_S` says the same. Nothing is stored for 'interrupted':
it is what 'running' means once its process died, and resuming sets a new owner. Databases
written before the owner columns existed get them on their next write (``ALTER TABLE ... ADD
COLUMN``, NULL for old rows); nothing else changes, so stored sweeps keep their meaning and keys.
"""
from __future__ import annotations

import os
import socket
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["STALE_AFTER_S", "process_identity", "owner_alive", "effective_status"]

#: A 'running' sweep whose owner cannot be checked is interrupted after this long without a chunk.
STALE_AFTER_S = 3600.0


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started, as "<boot id>:<clock ticks since boot>" (Linux /proc), or
    None where that cannot be read. With the pid it names one process, even after pid reuse."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()   # after "pid (comm)": state is field 3, starttime 22
    if len(fields) < 20 or fields[0] in ("Z", "X"):   # a zombie has exited: it owns nothing
        return "exited"
    return f"{boot}:{fields[19]}"


def process_identity() -> tuple[int, str, str | None]:
    """(pid, host name, start time) of this process: the owner recorded for a running sweep."""
    pid = os.getpid()
    return pid, socket.gethostname(), _process_start(pid)


def owner_alive(pid: int | None, host: str | None, start: str | None) -> bool | None:
    """True when the recorded owner process still runs, False when it is gone, None when this
    machine cannot tell (another host, no pid recorded, not a POSIX system).

    >>> owner_alive(*process_identity())
    True
    >>> owner_alive(None, socket.gethostname(), None) is None
    True
    """
    if pid is None or host != socket.gethostname() or os.name != "posix":
        return None   # (on Windows os.kill(pid, 0) would send CTRL_C_EVENT, not probe)
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass          # it exists, under another user
    except (OverflowError, ValueError):
        return False
    now = _process_start(int(pid))
    if now == "exited":
        return False
    if start is not None and now is not None and now != start:
        return False  # the pid was recycled by another process
    return True


def _age_s(iso: str | None, now: datetime | None = None) -> float:
    try:
        then = datetime.fromisoformat(str(iso))
    except ValueError:
        return float("inf")
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    return ((now or datetime.now(timezone.utc)) - then).total_seconds()


def effective_status(row: Any, now: datetime | None = None) -> str:
    """A sweep row's status as a reader should show it: 'interrupted' for a 'running' sweep whose
    owner process is gone (or, when that cannot be checked, whose last chunk is older than
    STALE_AFTER_S); the stored status otherwise. ``row``: a sweeps row or a dict of one."""
    status = row["status"]
    if status != "running":
        return status
    keys = row.keys()

    def get(k):
        return row[k] if k in keys else None

    alive = owner_alive(get("owner_pid"), get("owner_host"), get("owner_start"))
    if alive is False:
        return "interrupted"
    if alive is None and _age_s(row["updated_at"], now) > STALE_AFTER_S:
        return "interrupted"
    return "running"
