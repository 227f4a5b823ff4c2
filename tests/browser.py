"""Helpers for end-to-end tests in real headless Chromium (Debian's /usr/bin/chromium).

``serve`` starts ``streamlit run`` of the app or one page on a free port and waits for its health
check (``serve_app``: the app);
``launch_chromium`` starts Playwright's Chromium with the flags this closed network needs.
Playwright is used with ``executable_path`` only: never ``playwright install``.
"""
from __future__ import annotations

import contextlib
import dataclasses
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


@dataclasses.dataclass
class Server:
    """A Streamlit server a test started: where it answers, its process and its log."""

    url: str
    pid: int
    log_path: Path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextlib.contextmanager
def serve(script: str = "app.py", env_extra: dict | None = None, timeout: float = 90):
    """``streamlit run script`` (a path under the repository: the app or one page on its own) on a
    free port, once its health check answers; stopped at the end. No warm start unless a test asks
    for it (``QAX_WARM_START=1``): most tests never answer with the shipped models, and a warm start
    loads three of them beside the other test workers. A failure inside the block carries the
    server's state and the end of its log."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "QAX_WARM_START": "0", **(env_extra or {})}
    fd, log_name = tempfile.mkstemp(suffix=".log", prefix="streamlit-")
    log_path = Path(log_name)
    with os.fdopen(fd, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / script), "--server.port", str(port),
             "--server.headless", "true", "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    server = Server(f"http://127.0.0.1:{port}", proc.pid, log_path)
    try:
        deadline = time.time() + timeout
        while True:
            try:
                if urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not start:\n{server.log_text()[-3000:]}")
            time.sleep(0.5)
        try:
            yield server
        except BaseException as failed:
            # What the server said, and whether it still runs, is the first thing a failure needs
            # (a disabled page in CI: was the server gone, or busy?)
            state = "running" if proc.poll() is None else f"exited with {proc.returncode}"
            failed.add_note(f"streamlit server: {state}; the end of its log:\n{server.log_text()[-4000:]}")
            raise
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log_path.unlink(missing_ok=True)


@contextlib.contextmanager
def serve_app(env_extra: dict | None = None, timeout: float = 90):
    """The whole app (``app.py``) served as :func:`serve` does; yields its URL."""
    with serve("app.py", env_extra, timeout) as server:
        yield server.url


def note_page(failed: BaseException, page) -> None:
    """Add what ``page`` showed to ``failed``: Streamlit's status widget and the end of the page's
    text (an intermittent failure under CI's load is seldom reproduced: this says what was there)."""
    try:
        status = page.get_by_test_id("stStatusWidget")
        failed.add_note("Streamlit's status widget: "
                        + (repr(status.inner_text(timeout=5_000)) if status.count() else "not shown"))
        failed.add_note("the page's text: " + repr(page.inner_text("body", timeout=5_000)[-3000:]))
    except Exception as unread:   # the page itself gone: say so, keep the first failure
        failed.add_note(f"the page's text could not be read: {unread}")


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
        # an intermittent "no Answer button" under CI's load, 2 of 8 clean-clone runs, was never reproduced
        note_page(failed, locator.page)
        raise


def wait_idle(page, timeout: float = 180_000) -> None:
    """Until Streamlit's "running" indicator has gone twice in a row: the script run a widget
    started has ended, and no rerun followed it at once."""
    for _ in range(2):
        time.sleep(0.5)
        page.get_by_test_id("stStatusWidget").wait_for(state="hidden", timeout=timeout)


def open_tab(page, name: str, timeout: float = 180_000) -> None:
    """Select the tab ``name`` once the page is idle, and again if a rerun still drawing redrew the
    tabs with the first one selected (a Validate tab seen unselected for a whole minute after
    its click, in a full-suite run under load)."""
    tab = page.get_by_role("tab", name=name)
    deadline = time.monotonic() + timeout / 1000
    while True:
        wait_idle(page, timeout)
        tab.click(timeout=timeout)
        time.sleep(0.5)
        if tab.get_attribute("aria-selected") == "true":
            return
        assert time.monotonic() < deadline, f"the tab {name!r} stayed unselected"
