"""``./run.sh app``'s launcher (components/server.py) as a real server: it serves the app, loads the
first screen's models in the background and says on its output when they are loaded."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser import free_port

from components.server import WARM_LINE
from core.qa import warm

ROOT = Path(__file__).resolve().parents[1]


def test_the_launcher_serves_and_says_when_the_first_screens_models_are_loaded(tmp_path):
    names = warm.default_names()
    if not names:
        pytest.skip("no installed model for the first screen")
    port, log_path = free_port(), tmp_path / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "components.server", "app.py", "--server.port", str(port),
             "--server.headless", "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=log, stderr=subprocess.STDOUT)
    health = f"http://127.0.0.1:{port}/_stcore/health"
    try:
        deadline, healthy, said = time.monotonic() + 240, False, None
        while said is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                healthy = healthy or urllib.request.urlopen(health, timeout=2).read() == b"ok"
            except OSError:
                pass
            said = next((line for line in log_path.read_text().splitlines() if line.startswith(WARM_LINE)), None)
            time.sleep(0.5)
        assert said is not None, log_path.read_text()[-3000:]
        assert said.startswith(f"{WARM_LINE}warm start loaded {len(names)} of {len(names)} models in "), said
        assert healthy or urllib.request.urlopen(health, timeout=5).read() == b"ok"
        assert "Traceback" not in log_path.read_text()
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
