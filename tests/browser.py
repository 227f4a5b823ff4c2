"""Helpers for end-to-end tests in real headless Chromium (Debian's /usr/bin/chromium).

``serve_app`` starts ``streamlit run app.py`` on a free port and waits for its health check;
``launch_chromium`` starts Playwright's Chromium with the flags this closed network needs.
Playwright is used with ``executable_path`` only: never ``playwright install``.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A first answer with the shipped models loads them cold (no warm start in tests): 40 s on a quiet
# 2-core machine, past 180 s for a third language's models with three test workers beside it, and
# past 240 s for the demo walk's three English defaults at the suite's end (load average 10).
FIRST_ANSWER_MS = 420_000
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(env_extra: dict | None = None, timeout: float = 90):
    port = free_port()
    # no warm start unless a test asks for it: most tests never answer with the shipped models
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "QAX_WARM_START": "0", **(env_extra or {})}
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                log.seek(0)
                raise RuntimeError(f"streamlit did not start:\n{log.read()[-3000:]}")
            time.sleep(0.5)
        try:
            yield url
        except BaseException as failed:
            # What the server said, and whether it still runs, is the first thing a failure needs
            # (a disabled page in CI: was the server gone, or busy?)
            log.seek(0)
            state = "running" if proc.poll() is None else f"exited with {proc.returncode}"
            failed.add_note(f"streamlit server: {state}; the end of its log:\n{log.read()[-4000:]}")
            raise
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        os.unlink(log.name)


@contextlib.contextmanager
def launch_chromium(extra_args: list[str] | None = None):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=CHROMIUM_ARGS + (extra_args or []))
        try:
            yield browser
        finally:
            browser.close()


def click_settled(locator, timeout: int = 90_000) -> None:
    """Click a Streamlit control once exactly one element matches it. While a rerun redraws the
    page, the old copy of a widget can stay in the DOM beside the new one for a moment (seen
    under the full suite's load: two "Answer" buttons), and Playwright's strict click refuses two."""
    from playwright.sync_api import expect

    try:
        expect(locator).to_have_count(1, timeout=timeout)
        locator.click(timeout=timeout)
    except Exception as failed:
        # what the page showed instead (an intermittent "no Answer button" under CI's load, 2 of
        # 8 clean-clone runs, was never reproduced: this says what was there)
        page = locator.page
        status = page.get_by_test_id("stStatusWidget")
        failed.add_note("Streamlit's status widget: "
                        + (repr(status.inner_text(timeout=5_000)) if status.count() else "not shown"))
        try:
            failed.add_note("the page's text: " + repr(page.inner_text("body", timeout=5_000)[-3000:]))
        except Exception as unread:   # the page itself gone: say so, keep the first failure
            failed.add_note(f"the page's text could not be read: {unread}")
        raise
