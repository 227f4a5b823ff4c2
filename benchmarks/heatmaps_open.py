"""Heatmaps first-open benchmark: how long the Heatmaps page takes to open a large stored sweep,
computing its aggregates live versus reading the ones stored when the sweep finished.

1. Builds (once; reused with --db) a large sweep over XQuAD-en: three fast deterministic
   "models" (each answers with a span chosen from the question's words, so answers differ between
   models and perturbations like a real model's would) x 25 perturbation runs; no neural model,
   because the page's cost depends on the rows stored, not on who answered them.
2. Opens pages/heatmaps.py in Streamlit's AppTest, as a first visitor does (Streamlit's caches
   empty): once with no stored aggregates (everything computed from the result rows), once after
   core.sweeps.analysis.aggregates.store() has stored them (what a sweep does when it finishes).
3. Prints the rows, the two wall times, and the machine's load average.

    python benchmarks/heatmaps_open.py                     # ~64k result rows (900 questions)
    python benchmarks/heatmaps_open.py --sample 200        # smaller
    python benchmarks/heatmaps_open.py --db runs/big.sqlite --json out.json
        # keeps the built sweep (runs/ is git-ignored)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core import cli  # noqa: E402  (the project on the path first)
from core.budgets import MAX_QUESTIONS  # noqa: E402
from core.perturb.spec import parse_specs  # noqa: E402
from core.sweeps.analysis import aggregates as sweep_aggregates  # noqa: E402
from core.sweeps.config import SweepConfig  # noqa: E402
from core.sweeps.running.run import run_sweep  # noqa: E402
from core.types import Prediction, Span  # noqa: E402

PERTURBATIONS = "TUQ,TLQ,drop_qmark_Q,keyboard_Q,DCRQ:n_chars=1..4,DRQ:n_words=1..3"


class WordPicker:
    """Answers with the context word at a position hashed from the question (and the model's
    salt), extended by the next word when the hash says so: fast, deterministic, and moved by
    any change to the question."""

    def __init__(self, salt: str):
        self.salt = salt
        self.fingerprint = f"word-picker-{salt}"

    def predict(self, questions, contexts, n_best=5, progress=None, skip_invalid=False):
        out = []
        for q, c in zip(questions, contexts):
            words = [(m.start(), m.end()) for m in re.finditer(r"\S+", c)]
            h = int(hashlib.sha256((self.salt + q).encode()).hexdigest(), 16)
            i = h % min(len(words), 40) if words else 0
            if not words:
                out.append(Prediction())
                continue
            start, end = words[i][0], words[min(i + h // 7 % 2, len(words) - 1)][1]
            out.append(Prediction([Span(c[start:end], start, end, 1.0)]))
        return out


def build(db: Path, sample: int) -> str:
    engines = {f"model-{k}": WordPicker(str(k)) for k in "abc"}
    config = SweepConfig("xquad/xquad.en", parse_specs(PERTURBATIONS), list(engines), repeats=3, seed=0,
                         sample=sample, name=f"benchmark-{sample}")
    t0 = time.perf_counter()
    run = run_sweep(config, engines, db, chunk_size=512)
    print(f"sweep {run.name!r} ready: {run.done_units:,} result rows ({run.resumed_units:,} already stored) "
          f"in {time.perf_counter() - t0:.1f} s")
    return run.name


def refuse_foreign_store(db: Path) -> None:
    """The benchmark writes its sweep into ``db`` (and drops and stores its aggregates): only a
    new file or a store of this benchmark's own sweeps, never one it was given to read."""
    if not db.exists():
        return
    from core.sweeps.analysis.stored import list_sweeps

    # read-only: a folder or a non-SQLite file is refused untouched
    others = sorted(s["name"] for s in list_sweeps(db) if not re.fullmatch(r"benchmark-\d+", s["name"]))
    if others:
        shown = ", ".join(repr(n) for n in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise cli.CLIError(f"--db {db} holds other sweeps ({shown}): the benchmark writes its own sweep; "
                           "name a new file, or leave --db out for a temporary one")


def open_page(db: Path) -> float:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    # a first visitor's open: no cached read handle (components.loaders.stored_sweep) or data left over
    st.cache_data.clear()
    st.cache_resource.clear()
    os.environ["QAX_SWEEP_DB"] = str(db)
    at = AppTest.from_file(str(ROOT / "pages" / "heatmaps.py"), default_timeout=600)
    t0 = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - t0
    if at.exception:
        raise SystemExit(f"the page failed: {at.exception[0].message}")
    return seconds


@cli.command("benchmarks/heatmaps_open.py")
def main(argv: list[str] | None = None) -> None:
    ap = cli.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=cli.Count(MAX_QUESTIONS), default=900,
                    help="XQuAD-en questions in the sweep (default 900)")
    ap.add_output("--db", also_input=True, type=Path,
                  help="the benchmark's own sweep database, built on the first run and reused after (default: "
                       "a temporary one); a database holding any other sweep is refused")
    ap.add_output("--json", type=Path, help="write the figures here too")
    args = ap.parse_args(argv)
    if args.db is not None:
        refuse_foreign_store(args.db)
    db = args.db or Path(tempfile.mkdtemp()) / "heatmaps_bench.sqlite"
    name = build(db, args.sample)
    sweep_aggregates.drop(db, name)
    live = open_page(db)
    t0 = time.perf_counter()
    sweep_aggregates.store(db, name)
    stored_in = time.perf_counter() - t0
    stored = open_page(db)
    from core.sweeps.analysis.stored import list_sweeps

    [sweep] = [s for s in list_sweeps(db) if s["name"] == name]
    figures = {"result_rows": sweep["done_units"], "examples": sweep["n_examples"], "models": len(sweep["models"]),
               "specs": len(sweep["perturbations"]), "first_open_live_s": round(live, 2),
               "aggregates_store_s": round(stored_in, 2), "first_open_stored_s": round(stored, 2),
               "load_average_1min": os.getloadavg()[0], "cpus": os.cpu_count()}
    for k, v in figures.items():
        print(f"{k:>22}: {v}")
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(figures, indent=1))


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
