"""Server memory with many visitors answering at once, and after they leave (issue 53, items 2 and 4).

    python benchmarks/concurrent_sessions.py                       # 10 sessions, 90 s after they leave
    python benchmarks/concurrent_sessions.py --sessions 3 --after 60 --json out.json

Serves the app as ``./run.sh app`` does (``python -m components.server app.py``: warm start on,
MALLOC_ARENA_MAX=2) on a free port and samples the server's resident memory (RSS, psutil) every
half second. One headless Chromium (Debian's /usr/bin/chromium through Playwright's
``executable_path``) opens Ask in ``--sessions`` tabs, each its own Streamlit session; once every
tab shows its question, Answer is clicked in each in turn and the benchmark waits until every tab
shows its answers (the models the first screen ticks: the English demo item's). Then the browser
closes and sampling goes on ``--after`` seconds (a session without a browser is closed 30-40 s
after it left: components/session_memory.py).

Prints and (``--json``) writes: ``ready_s`` (server start to health check), ``first_answer_s``
(the first tab's Answer click to its answers), ``first_answer_after_ready_s`` (the health check
to those answers: what the warm start saves), ``all_answered_s``, ``rss_ready_mb``,
``rss_before_answers_mb`` (warm start done, tabs open), ``peak_rss_mb``, ``rss_answered_mb``,
``idle_rss_mb`` (the last sample), ``models_mb`` (what the Models page reports: the engine
cache's total), the budget and the per-session allowance, and whether the peak stayed within
``rss_before_answers_mb`` + sessions x allowance.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from core import cli  # noqa: E402  (the project on the path first)


class Sampler:
    """RSS of one process every ``period`` seconds on a daemon thread."""

    def __init__(self, pid: int, period: float = 0.5):
        import psutil

        self.proc, self.period, self.samples = psutil.Process(pid), period, []
        self._stop = threading.Event()
        self.t0 = time.monotonic()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic() - self.t0, self.proc.memory_info().rss / 2**20))
            except Exception:   # the server has gone
                return
            time.sleep(self.period)

    def now(self) -> float:
        return self.proc.memory_info().rss / 2**20

    def peak(self, since: float = 0.0) -> float:
        return max((r for t, r in self.samples if t >= since), default=0.0)

    def stop(self) -> None:
        self._stop.set()


def serve(port: int, env_extra: dict):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2"),
           **env_extra}
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, "-m", "components.server", "app.py", "--server.port", str(port),
                             "--server.headless", "true", "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return proc, log


def stop_server(proc) -> None:
    """Terminate the server, killed if it has not ended within 15 s."""
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def wait_healthy(url: str, proc, log, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            log.seek(0)
            raise RuntimeError(f"the server did not start:\n{log.read()[-3000:]}")
        time.sleep(0.25)


def run(sessions: int, after: int, warm_wait: float) -> dict:
    from browser import click_settled, free_port, launch_chromium

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    t_start = time.monotonic()
    proc, log = serve(port, {})
    out: dict = {"sessions": sessions}
    try:
        sampler = Sampler(proc.pid)
        wait_healthy(url, proc, log)
        t_ready = time.monotonic()
        out["ready_s"] = round(t_ready - t_start, 1)
        out["rss_ready_mb"] = round(sampler.now())
        with launch_chromium() as browser:
            pages = [browser.new_context().new_page() for _ in range(sessions)]
            for page in pages:
                page.goto(url + "/", timeout=300_000, wait_until="commit")
            for page in pages:
                page.locator('textarea[aria-label="Question"]').wait_for(timeout=300_000)
            time.sleep(warm_wait)   # the warm start's loads, if any are left, before the clicks
            out["rss_before_answers_mb"] = round(sampler.now())
            t_click = time.monotonic()
            since = t_click - sampler.t0
            for page in pages:
                click_settled(page.get_by_role("button", name="Answer", exact=True), timeout=300_000)
            marks = [page.locator("div.qax-context mark.qax-span").first for page in pages]
            marks[0].wait_for(timeout=600_000)
            out["first_answer_s"] = round(time.monotonic() - t_click, 1)
            out["first_answer_after_ready_s"] = round(time.monotonic() - t_ready, 1)
            for m in marks[1:]:
                m.wait_for(timeout=600_000)
            out["all_answered_s"] = round(time.monotonic() - t_click, 1)
            out["peak_rss_mb"] = round(sampler.peak(since))
            time.sleep(2)
            out["rss_answered_mb"] = round(sampler.now())
            pages[0].goto(url + "/models", timeout=300_000, wait_until="commit")
            pages[0].get_by_text("model memory budget").first.wait_for(timeout=120_000)
            out["models_line"] = pages[0].get_by_text("model memory budget").first.inner_text()
        t_closed = time.monotonic()
        time.sleep(after)
        out["idle_rss_mb"] = round(sampler.now())
        out["idle_after_s"] = round(time.monotonic() - t_closed)
        out["samples"] = [(round(t, 1), round(r)) for t, r in sampler.samples[::4]]
        sampler.stop()
    finally:
        stop_server(proc)
    from core.budgets import MODEL_MEMORY_MB, SESSION_MEMORY_MB

    out["budget_mb"], out["session_allowance_mb"] = MODEL_MEMORY_MB.value(), SESSION_MEMORY_MB.value()
    out["per_session_mb"] = round((out["peak_rss_mb"] - out["rss_before_answers_mb"]) / sessions, 1)
    out["within_allowance"] = out["per_session_mb"] <= out["session_allowance_mb"]
    return out


@cli.command("benchmarks/concurrent_sessions.py")
def main(argv: list[str] | None = None) -> int:
    ap = cli.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=cli.Bounded(1, 50), default=10, help="browser sessions answering at once")
    ap.add_argument("--after", type=cli.Bounded(1, 3600), default=90, help="seconds to sample after the browser closed")
    ap.add_argument("--warm-wait", type=float, default=0.0,
                    help="seconds to wait after the tabs opened, before the clicks")
    ap.add_output("--json", help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    target = cli.writable_file(args.json, "--json") if args.json else None
    out = run(args.sessions, args.after, args.warm_wait)
    for k, v in out.items():
        if k != "samples":
            print(f"{k}: {v}")
    if target:
        from core.io.outputs import write_text_atomic

        write_text_atomic(target, json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
