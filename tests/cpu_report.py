"""Where the suite's CPU goes: ``pytest --cpu-report=FILE`` appends one JSON line per test (its
file, id, wall seconds and CPU seconds of the pytest process and every process it started and
reaped: Streamlit servers, Chromium, Ray clusters, CLI runs), and ``python tests/cpu_report.py
FILE`` sums them per file. The suite is CPU-bound on two cores, so CPU seconds, not a test's wall
time under load, say what a change saves (issue 56; docs/results/suite-time.md).

A process is counted when it is reaped, so a module-scoped server shows in the test whose teardown
stops it: per-file sums are right, single tests can be off. Processes nobody reaps (Ray's workers,
the workers of a SIGKILLed sweep) are not counted that way; where the cgroup v1 ``cpuacct``
controller can be written (root on a cgroup-v1 machine), each test process moves itself into a
cgroup of its own first, and every process it starts, reaped or not, is counted while it runs
(``"by": "cgroup"`` on each line).
"""
from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict

import pytest

CPUACCT = "/sys/fs/cgroup/cpuacct"


def _reaped_cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def own_cgroup(root: str = CPUACCT) -> str | None:
    """Move this process into a new cpuacct cgroup of its own; its usage file, or None where the
    controller is not there or not writable (the reaped-process count is used then)."""
    group = os.path.join(root, f"qax-pytest-{os.getpid()}")
    try:
        os.makedirs(group, exist_ok=True)
        with open(os.path.join(group, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    except OSError:
        return None
    return os.path.join(group, "cpuacct.usage")


class CpuReport:
    def __init__(self, path: str):
        self.path = path
        self.usage: str | None = None
        self.started = False

    def _cpu(self) -> float:
        if self.usage is None:
            return _reaped_cpu()
        with open(self.usage) as f:
            return int(f.read()) / 1e9

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if not self.started:   # here, in the process that runs the tests (an xdist worker), not its parent
            self.started, self.usage = True, own_cgroup()
        cpu, wall = self._cpu(), time.monotonic()
        yield
        line = {"file": item.path.name, "test": item.nodeid, "wall": round(time.monotonic() - wall, 2),
                "cpu": round(self._cpu() - cpu, 2), "by": "reaped" if self.usage is None else "cgroup"}
        with open(self.path, "a", encoding="utf-8") as f:   # one short append per test: whole lines
            f.write(json.dumps(line) + "\n")

    def pytest_sessionfinish(self):
        """Back to the root cgroup, and the own one removed once no process is left in it."""
        if self.usage is None:
            return
        group = os.path.dirname(self.usage)
        try:
            with open(os.path.join(CPUACCT, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            os.rmdir(group)
        except OSError:
            pass   # a process it started still runs there; the empty group costs nothing


def per_file(lines: list[dict]) -> list[tuple[str, float, float, int]]:
    """(file, CPU seconds, wall seconds, tests), the most CPU first.

    >>> per_file([{"file": "a.py", "cpu": 1.0, "wall": 2.0}, {"file": "b.py", "cpu": 3.0, "wall": 1.0},
    ...           {"file": "a.py", "cpu": 1.5, "wall": 0.5}])
    [('b.py', 3.0, 1.0, 1), ('a.py', 2.5, 2.5, 2)]
    """
    sums: dict[str, list] = defaultdict(lambda: [0.0, 0.0, 0])
    for line in lines:
        s = sums[line["file"]]
        s[0] += line["cpu"]
        s[1] += line["wall"]
        s[2] += 1
    return sorted(((f, round(c, 2), round(w, 2), n) for f, (c, w, n) in sums.items()), key=lambda r: -r[1])


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tests/cpu_report.py FILE", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        rows = per_file([json.loads(line) for line in f if line.strip()])
    total = sum(r[1] for r in rows)
    print(f"{'file':48} {'CPU s':>8} {'share':>6} {'wall s':>8} {'tests':>6}")
    for name, cpu, wall, n in rows:
        print(f"{name:48} {cpu:8.1f} {cpu / total:6.1%} {wall:8.1f} {n:6d}")
    print(f"{'all':48} {total:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
