"""Heatmaps' report downloads: the chosen sweep as a self-contained HTML report and as Markdown
(core.reports, the same report as ``python -m core.sweeps --show NAME --report OUT.html``).

Building it runs every view of the sweep (slices, bootstrap bands: seconds to minutes on a large
sweep), so it is built on request with a progress bar, kept for this sweep version in the session,
and then offered as two downloads.
"""
from __future__ import annotations

import shlex

import streamlit as st

from components.cancellable import progress_with_cancel, say_if_cancelled
from components.export import download, file_stem
from components.frame import run_output
from components.sweep_db_picker import label
from core import config, reports
from core.sweeps.analysis.stored import StoredSweep


def report_downloads(stored: StoredSweep, metric: str = "f1") -> None:
    """A "Build report" button, then "Report (HTML)" and "Report (Markdown)" downloads."""
    db_path, sweep = stored.db, stored.info
    key = (str(db_path), sweep["id"], stored.version, metric)
    built = st.session_state.get("hm_report")
    working = run_output()   # the bar and Cancel: the tabs below keep their place (and the chosen one)
    say_if_cancelled("hm_report", working, "the report was not built.")
    if built is None or built[0] != key:
        if not st.button("Build report (HTML and Markdown)", key="hm_report_build",
                         help="Every view of this sweep in one file to hand on: the heatmap, its tables, the "
                              "papers' views, slices, noise curves and the worst examples with their spans. The "
                              "HTML opens offline: it makes no request."):
            return
        out = f"{file_stem('report', sweep['name'])}.html"
        shown_db = label(str(db_path))   # relative to the repository, else the file's name (QAX_SHOW_PATHS)
        command = " ".join(["python -m core.sweeps", "--show", shlex.quote(sweep["name"]), "--db",
                            shlex.quote(shown_db), "--report", shlex.quote(out), "--metric", metric])
        with progress_with_cancel("hm_report", "Building the report…", working) as bar:
            html, md = reports.build(db_path, sweep["id"], metric=metric, command=command, stored=stored,
                                     shown_db=shown_db, progress=lambda done, total, part: bar(
                                         done / total, f"Building the report: {part} ({done}/{total})"))
        # a dataset or file: spec named by a server path (a CLI sweep) loses its folder too
        built = (key, config.hide_server_paths(html), config.hide_server_paths(md))
        st.session_state["hm_report"] = built
    stem = file_stem("report", sweep["name"])
    row = st.container(horizontal=True)   # side by side where they fit, else one under the other: never cut
    download("⬇ Report (HTML)", built[1].encode("utf-8"), f"{stem}.html", "text/html", "hm_report_html", row)
    download("⬇ Report (Markdown)", built[2].encode("utf-8"), f"{stem}.md", "text/markdown", "hm_report_md", row)
