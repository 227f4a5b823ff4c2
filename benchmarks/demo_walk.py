"""A presenter's walk through the app, timed, with the server's memory watched (issue 53).

    python benchmarks/demo_walk.py                        # prints the figures
    python benchmarks/demo_walk.py --after 60 --json out.json

Serves the app as ``./run.sh app`` does (``python -m components.server app.py``: warm start on,
MALLOC_ARENA_MAX=2; benchmarks/concurrent_sessions.py's ``serve``) and drives one headless Chromium
(Debian's /usr/bin/chromium through Playwright's ``executable_path``) through the walk: Ask on the
English, German and Chinese demo items (Answer each; the English one twice, the second a warm
answer), token attribution of the English answer (Ask's "Colour tokens by attribution" button,
timed until the first model's coloured passage is drawn), a question spoken into Ask through
Chromium's fake microphone (flite saying "what is the capital of france", answered as soon as it
is transcribed), then Variants, Heatmaps, Gallery and Beat the AI opened in turn. The browser
closes and the server's RSS is sampled ``--after`` seconds more.

Prints and (``--json``) writes ``first_answer_s`` (Answer clicked to the first span drawn, the
server having reported ready just before), ``first_answer_after_ready_s``, ``warm_answer_s``,
``answer_s`` per language, ``attribution_first_model_s`` (the button clicked to the first ticked
model's coloured passage), ``speech_answer_s`` (Stop recording clicked to the spoken
question's first span), ``page_s`` per page, ``rss_mb`` after each step, ``peak_rss_mb`` and
``idle_rss_mb`` (``--after`` seconds after the browser closed) with the model memory budget, and
``warm_start_after_ready_s``: when the server said its warm start was done (its ``[qax] warm start
loaded ...`` line), counted from ready, with that line.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from core import cli  # noqa: E402  (the project on the path first)

PAGES = ("variants", "heatmaps", "gallery", "beat_the_ai")
SPOKEN = "what is the capital of france"


def _settled(page, timeout_s: float = 300) -> None:
    """Wait until Streamlit's "Running" indicator has stayed away for a second."""
    deadline, quiet_since = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        running = page.locator('[data-testid="stStatusWidget"]').count() > 0
        quiet_since = None if running else (quiet_since or time.monotonic())
        if quiet_since and time.monotonic() - quiet_since > 1.0:
            return
        time.sleep(0.2)


def _answer(page, url: str, lang: str | None) -> float:
    """Open Ask (the ``lang`` demo set's first item picked; None: the first screen's), click
    Answer, seconds until a span is drawn."""
    from browser import click_settled

    page.goto(url + "/", timeout=300_000, wait_until="commit")
    page.locator('textarea[aria-label="Question"]').wait_for(timeout=300_000)
    if lang:   # the data set picker, as a presenter would: the ticked models follow the language
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Dataset").click()
        page.get_by_role("option", name=f"demo.{lang}").click()
        time.sleep(1.0)
        _settled(page)
    t = time.monotonic()
    click_settled(page.get_by_role("button", name="Answer", exact=True), timeout=300_000)
    page.locator("div.qax-context mark.qax-span").first.wait_for(timeout=600_000)
    return round(time.monotonic() - t, 1)


def _spoken_question_wav(folder: Path) -> Path:
    """flite saying :data:`SPOKEN` at 48 kHz with 0.8 s of silence either side (the clip Chromium's
    fake microphone plays once, as tests/test_e2e_mic.py does)."""
    import numpy as np

    from core.speech import tts
    from core.speech.audio import resample, to_wav_bytes

    samples, rate = tts.synthesize(SPOKEN, "flite:kal16")
    pad = np.zeros(int(0.8 * 48_000), dtype=np.float32)
    path = folder / "question.wav"
    path.write_bytes(to_wav_bytes(np.concatenate([pad, resample(samples, rate, 48_000), pad]), 48_000))
    return path


def _speak(page, url: str) -> float:
    """Ask on a pasted passage, the question spoken: seconds from Stop recording to the first span
    (the transcript becomes the question and is answered at once)."""
    page.goto(url + "/", timeout=300_000, wait_until="commit")
    page.get_by_text("Paste a context").click()
    context = page.get_by_role("textbox", name="Context")
    context.wait_for(timeout=300_000)
    context.fill("paris is the capital of france . berlin is the capital of germany .")
    context.press("Control+Enter")
    time.sleep(1.0)
    _settled(page)
    page.get_by_text("Speak the question").click()
    page.get_by_role("button", name="Record").click()
    stop = page.get_by_role("button", name="Stop recording")
    stop.wait_for(timeout=30_000)
    time.sleep(3.5)                       # the clip lasts 3.4 s
    t = time.monotonic()
    stop.click()
    page.locator("div.qax-context mark.qax-span").first.wait_for(timeout=600_000)
    return round(time.monotonic() - t, 1)


def _watch_warm_line(log_path: str, t_ready: float, out: dict) -> None:
    """On a thread: note when the server's log says the warm start is done (components/server.py)."""
    import threading

    from components.server import WARM_LINE

    def watch() -> None:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            for line in Path(log_path).read_text(errors="replace").splitlines():
                if line.startswith(WARM_LINE + "warm start loaded"):
                    out["warm_start_after_ready_s"] = round(time.monotonic() - t_ready, 1)
                    out["warm_start_line"] = line
                    return
            time.sleep(0.2)

    threading.Thread(target=watch, daemon=True).start()


def run(after: int) -> dict:
    import tempfile

    from browser import click_settled, free_port, launch_chromium
    from concurrent_sessions import Sampler, serve, stop_server, wait_healthy

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc, log = serve(port, {})
    out: dict = {"rss_mb": {}, "answer_s": {}, "page_s": {}}
    clip_dir = tempfile.TemporaryDirectory(prefix="demo_walk_")
    try:
        sampler = Sampler(proc.pid)
        wait_healthy(url, proc, log)
        t_ready = time.monotonic()
        _watch_warm_line(log.name, t_ready, out)
        out["rss_mb"]["ready"] = round(sampler.now())
        clip = _spoken_question_wav(Path(clip_dir.name))
        with launch_chromium([f"--use-file-for-fake-audio-capture={clip}%noloop"]) as browser:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            out["first_answer_s"] = _answer(page, url, None)
            out["first_answer_after_ready_s"] = round(time.monotonic() - t_ready, 1)
            out["rss_mb"]["first answer"] = round(sampler.now())
            out["warm_answer_s"] = _answer(page, url, None)
            for lang in ("de", "zh"):
                out["answer_s"][lang] = _answer(page, url, lang)
                out["rss_mb"][f"answer {lang}"] = round(sampler.now())
            _answer(page, url, None)
            button = page.get_by_role("button", name="Colour tokens by attribution (why this span?)")
            t = time.monotonic()
            click_settled(button, timeout=120_000)
            page.get_by_text("Attributions sum to the score").first.wait_for(timeout=900_000)
            out["attribution_first_model_s"] = round(time.monotonic() - t, 1)
            out["rss_mb"]["attribution"] = round(sampler.now())
            out["speech_answer_s"] = _speak(page, url)
            out["rss_mb"]["speech"] = round(sampler.now())
            for name in PAGES:
                t = time.monotonic()
                page.goto(f"{url}/{name}", timeout=300_000, wait_until="commit")
                page.locator('[data-testid="stMainBlockContainer"]').first.wait_for(timeout=300_000)
                time.sleep(1.0)
                _settled(page)
                out["page_s"][name] = round(time.monotonic() - t, 1)
                out["rss_mb"][name] = round(sampler.now())
        out["peak_rss_mb"] = round(sampler.peak())
        time.sleep(after)
        out["idle_rss_mb"], out["idle_after_s"] = round(sampler.now()), after
        sampler.stop()
    finally:
        stop_server(proc)
        clip_dir.cleanup()
    from core.budgets import MODEL_MEMORY_MB

    out["budget_mb"] = MODEL_MEMORY_MB.value()
    return out


@cli.command("benchmarks/demo_walk.py")
def main(argv: list[str] | None = None) -> int:
    ap = cli.ArgumentParser(prog="benchmarks/demo_walk.py", description=__doc__.splitlines()[0])
    ap.add_argument("--after", type=cli.Bounded(1, 3600), default=60,
                    help="seconds to sample the server after the browser closed (default 60)")
    ap.add_output("--json", help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    out = run(args.after)
    print(json.dumps(out, indent=1))
    if args.json:
        cli.write_bytes_atomic(args.json, json.dumps(out, indent=1).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
