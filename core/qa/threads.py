"""How many CPU threads a forward pass may use: one budget shared by everything that answers.

Measured on the 2-core machine (docs/results/backends.md): one asker alone is fastest
with every core, but two askers at once that each take every core oversubscribe them and both
collapse (torch MiniLM 11 + 11 questions/s against 37 alone), while with one thread each they
keep most of it (21 + 21). Hence the policy, used whenever ``EngineSettings.threads`` is None (the
default):

* the budget is ``QAX_THREADS`` when set, else the CPUs this process may run on;
* a batch that runs while no other batch runs (in this process: another Streamlit session, a sweep
  job; or in another process using the same cache folder: a CLI sweep, a second app) gets the whole
  budget; a batch that runs beside others gets one thread.

Who is running is known through lock files, ``<cache>/threads/slot-<k>.lock``: a running
``predict`` call holds one slot (an exclusive ``flock``, released by the kernel even when the
process dies), and before each batch it looks whether any other slot is held. An engine with a
fixed ``threads`` setting holds a slot too (others see it) but keeps its own count.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

SLOTS = 32  # more concurrent callers than this run with one thread and without a slot


def budget() -> int:
    """The threads one forward pass may use when it runs alone: ``QAX_THREADS`` or the CPUs here.

    >>> os.environ["QAX_THREADS"] = "3"; budget()
    3
    >>> os.environ["QAX_THREADS"] = "none"; budget() >= 1
    True
    >>> del os.environ["QAX_THREADS"]
    """
    env = os.environ.get("QAX_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _folder() -> Path:
    from core.config import cache_dir

    d = cache_dir() / "threads"
    d.mkdir(parents=True, exist_ok=True)
    return d


class Slot:
    """One running ``predict`` call's place in the budget (a context manager); ``threads()`` says
    how many threads its next batch may use."""

    def __init__(self, fixed: int | None = None):
        self.fixed = fixed
        self.index: int | None = None
        self._fd: int | None = None
        self._folder: Path | None = None

    def __enter__(self) -> Slot:
        try:
            self._folder = _folder()
        except OSError:  # an unwritable cache: no coordination, the whole budget
            return self
        for k in range(SLOTS):
            try:
                fd = os.open(self._folder / f"slot-{k}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                self._folder = None  # cannot coordinate here: the whole budget
                return self
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.index, self._fd = k, fd
            return self
        return self  # every slot taken: surely not alone

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = self.index = None

    def others_running(self) -> bool:
        """Whether another caller holds a slot now (in this process or another)."""
        if self._folder is None:
            return False
        if self.index is None:
            return True
        for k in range(SLOTS):
            if k == self.index:
                continue
            path = self._folder / f"slot-{k}.lock"
            with contextlib.suppress(FileNotFoundError):
                fd = os.open(path, os.O_RDONLY)
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except OSError:
                    return True  # held
                finally:
                    os.close(fd)  # closing also drops the probe's own shared lock
        return False

    def threads(self) -> int:
        """The setting when fixed; else the budget alone, one thread beside others."""
        if self.fixed:
            return self.fixed
        return 1 if self.others_running() else budget()
