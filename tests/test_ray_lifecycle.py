"""Ray from the browser is bounded and leaves nothing behind (issue 46, finding 3): the Workers
field goes no higher than the server's CPUs (QAX_MAX_RAY_WORKERS), a job asking for more is
refused before Ray starts, and a local Ray that the app's sweep started is stopped when that sweep
ends: no Ray process left, none listening."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[1]

# Run in a fresh process: the app's situation (no Ray yet), whatever Ray other test files started.
SCRIPT = r"""
import json, sys, time
import psutil
from core.sweeps.config import SweepConfig
from core.sweeps.running.job import RayOptions, SweepJob
me = psutil.Process()
job = SweepJob(SweepConfig("demo.en", ["TUQ"], ["tiny-a"], sample=2), {}, sys.argv[1], chunk_size=4,
               ray=RayOptions(workers=1), owner="tab-1").start()
seen = []
while job.running:
    seen = [p for p in me.children(recursive=True) if p.is_running()] or seen
    time.sleep(0.2)
deadline = time.time() + 20   # Ray's monitors get SIGTERM and a moment to exit
while time.time() < deadline and any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in seen):
    time.sleep(0.2)
left, listening = [], []
for p in seen:
    try:
        if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
            left.append(" ".join(p.cmdline())[:200])
            listening += [c.laddr.port for c in p.net_connections("inet") if c.status == "LISTEN"]
    except psutil.NoSuchProcess:
        pass
import ray
print(json.dumps({"error": job.error, "status": job.result and job.result.status, "ray_children": len(seen),
                  "left": left, "listening": listening, "initialized": ray.is_initialized()}))
"""


def test_a_local_ray_started_by_an_app_sweep_is_stopped_when_it_ends(tiny_registry, tmp_path):
    import json

    env = {**os.environ, "QAX_MODELS_TOML": str(tiny_registry), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT),
           "QAX_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "s.sqlite")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["error"] is None and got["status"] == "done", got
    assert got["ray_children"] >= 2            # gcs_server, raylet, workers... were running
    assert got["left"] == [] and got["listening"] == [] and got["initialized"] is False, got


def test_workers_are_bounded_by_the_cpus(monkeypatch, tmp_path):
    from core.budgets import BudgetError
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.job import RayOptions, SweepJob

    monkeypatch.delenv("QAX_MAX_RAY_WORKERS", raising=False)
    cpus = os.cpu_count() or 1
    job = SweepJob(SweepConfig("demo.en", ["TUQ"], ["tiny-a"]), {}, tmp_path / "s.sqlite",
                   ray=RayOptions(workers=cpus + 1))
    with pytest.raises(BudgetError, match=rf"this Ray sweep asks for {cpus + 1:,} workers; the limit is {cpus} "
                                          r"\(the server's QAX_MAX_RAY_WORKERS\)"):
        job.start()
    assert not job.running


def test_the_workers_field_refuses_more_than_the_cpus(monkeypatch, tiny_registry, tmp_path):
    """Any whole number may be typed; one over QAX_MAX_RAY_WORKERS is refused under the box with the
    limit and its setting, and Start stays disabled until it is lowered."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("QAX_MODELS_TOML", str(tiny_registry))
    monkeypatch.setenv("QAX_SWEEP_DB", str(tmp_path / "sweeps.sqlite"))
    monkeypatch.setenv("QAX_MAX_RAY_WORKERS", "3")
    at = AppTest.from_file("../pages/sweeps.py", default_timeout=120).run()
    at.radio(key="sw_where").set_value("Ray on this machine").run()
    assert not at.exception, at.exception
    field = at.number_input(key="sw_workers")
    assert (field.min, field.value) == (1, 2)
    assert not [e for e in at.error if "workers" in e.value]
    field.set_value(4).run()
    refusals = [e.value for e in at.error if "workers" in e.value]
    from core.render.text import md_escape

    assert refusals == [md_escape("the sweep asks for 4 workers; the limit is 3 (the server's QAX_MAX_RAY_WORKERS)")]
    assert at.button(key="sw_start").disabled
