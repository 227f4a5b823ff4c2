"""End to end in real headless Chromium: a sweep report (core.reports) is self-contained.

A local HTTP server on 127.0.0.1 serves the report and counts every request it gets. The sweep's
names, question and context carry Markdown images, links, raw HTML and bare URLs pointing at that
server. Chromium opens the report at 1400 and 800 px; the plotly figures must draw (an svg in each
``.plotly`` container) with the page no wider than the window, the server must have seen the
report's own request and nothing else, and every other request the page tries (routed through
Playwright) must be none.

On Heatmaps, "Build report" shows its progress and then two downloads, whose labels fit at 800 and
1400 px; the HTML downloaded in the browser is the report of the chosen sweep.
"""
from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest
from browser import CHROMIUM, click_settled, launch_chromium, serve_app
from test_app_heatmaps import LookupEngine, build_sweep

from core import reports
from core.datasets import Dataset
from core.perturb.spec import parse_specs
from core.sweeps.config import SweepConfig
from core.sweeps.running.run import run_sweep
from core.types import Answer, QAExample

pytestmark = pytest.mark.e2e
SHOTS = Path(__file__).resolve().parents[1] / ".pytest_cache"


class _Counting(http.server.BaseHTTPRequestHandler):
    body = b""
    hits: list[str] = []

    def do_GET(self):
        type(self).hits.append(self.path)
        if self.path == "/report.html":
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(self.body)))
            self.end_headers()
            self.wfile.write(self.body)
        else:
            self.send_response(404)
            self.end_headers()

    def log_message(self, *args):
        pass


def _hostile_sweep(db, host: str) -> str:
    bait = (f"![px](http://{host}/img.png) [click](http://{host}/link) <img src='http://{host}/raw.png'> "
            f"http://{host}/bare www.example.com")
    question = f"What is it? {bait}"
    context = f"Paris is it. {bait}"
    data = Dataset("toy", "en", [QAExample("q1", question, context, (Answer("Paris", 0),))])
    name = f"sweep {bait}"
    model = f"model <script src='http://{host}/s.js'></script><a href='http://{host}/a'>a</a>"
    config = SweepConfig("toy", parse_specs("TUQ,drop_qmark_Q"), [model, "plain"], name=name)
    engines = {model: LookupEngine({question: "Paris"}, "h1"), "plain": LookupEngine({question: "Paris"}, "p1")}
    assert run_sweep(config, engines, db, dataset=data).status == "done"
    return name


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed")
def test_report_opens_with_no_request_but_its_own(tmp_path):
    _Counting.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{server.server_address[1]}"
    report_url = f"http://{host}/report.html"
    try:
        db = tmp_path / "sweeps.sqlite"
        name = _hostile_sweep(db, host)
        html, _ = reports.build(db, name)
        _Counting.body = html.encode("utf-8")
        other_requests: list[str] = []

        def route(r):
            if r.request.url == report_url:
                r.continue_()
            else:                      # anything else the page would fetch, local or not
                other_requests.append(r.request.url)
                r.abort()

        with launch_chromium() as browser:
            for width in (1400, 800):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.route("**/*", route)
                page.goto(report_url, wait_until="load")
                page.wait_for_selector(".plotly svg.main-svg", state="attached", timeout=60_000)
                n_plots = page.locator(".js-plotly-plot").count()
                assert n_plots >= 2 and page.locator(".js-plotly-plot .main-svg").count() >= n_plots
                # the heatmap's markers are drawn: one per (model, perturbation)
                assert page.locator(".js-plotly-plot").first.locator("path.point").count() == 4
                assert page.evaluate("document.documentElement.scrollWidth") <= width
                # no link or image anywhere, SVG included (plotly draws <a> from "<a href>" in a label)
                assert page.locator("a[href], [*|href]:not(link), img, image, iframe, script[src]").count() == 0
                assert "[click](http://" in page.inner_text("body").replace("\u2060", "")   # shown literally
                page.close()
        assert _Counting.hits == ["/report.html", "/report.html"]      # one per width, nothing else
        assert other_requests == []
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed")
def test_heatmaps_report_downloads_in_the_browser(tmp_path):
    db = tmp_path / "sweeps.sqlite"
    build_sweep(db)
    with serve_app({"QAX_SWEEP_DB": str(db)}) as url, launch_chromium() as browser:
        for width in (1400, 800):
            page = browser.new_page(viewport={"width": width, "height": 1000}, accept_downloads=True)
            page.goto(url + "/heatmaps")
            click_settled(page.get_by_role("button", name="Build report (HTML and Markdown)"))
            html_button = page.get_by_role("button", name="Report (HTML)")
            html_button.wait_for(timeout=120_000)
            for button in (html_button, page.get_by_role("button", name="Report (Markdown)")):
                # the whole label is shown: no button narrower than its text
                assert button.evaluate("b => [b, ...b.querySelectorAll('*')].every("
                                       "e => e.scrollWidth <= e.clientWidth + 1)"), width
            page.screenshot(path=str(SHOTS / f"e2e_report_buttons_{width}.png"))
            with page.expect_download() as download:
                html_button.click()
            path = download.value.path()
            text = open(path, encoding="utf-8").read()
            assert download.value.suggested_filename == "report_toy-sweep.html"
            assert "<h1>Sweep report&#58; toy&#45;sweep</h1>" in text and "plotly.js v" in text
            page.close()
