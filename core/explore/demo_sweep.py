"""The demo sweep: a small sweep of the bundled demo set (assets/demo, demo.en's 12 questions), so
that Heatmaps and Gallery show something real on a fresh clone (issue 43).

It is an ordinary sweep in the chosen database, run with the public sweep API
(core.sweeps.running.run.run_sweep), named :data:`DEMO_NAME` so the pages can label it as a demo and put the
user's own sweeps before it. Its models are the English default's models whose card measured their
CPU time (core.qa.registry.models_for_language; a model measured on a GPU only may be slow here):
with the shipped models, mpnet-squad-v2 and minilm-squad-v2, a strong and a small model. Its
perturbations touch every view that applies to a question sweep: interface noise (keyboard,
misspelling), the German paper's n-parameterised character deletion, a paraphrase (DuReader's DPR)
and a case change; two repeats each.

A fresh clone opens on it without running anything: the sweep is shipped as text, an SQL dump of a
store that holds only it (:data:`SHIPPED_DUMP`, written by ``python -m core.explore.demo_sweep
--write-dump``), and :func:`shipped_store` turns that text into a store in the cache the first time
a page asks. Text keeps the repository free of binary databases and lets a reviewer diff a rebuilt
demo against the shipped one.
"""
from __future__ import annotations

import functools
import hashlib
import os
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from core import cli, config
from core.qa import registry

DEMO_NAME = "demo · demo.en (bundled)"
DEMO_SPECS = "keyboard_Q,misspell_Q,DCRQ:n_chars=1|2,paraphrase_rules_Q,TLQ"
DEMO_REPEATS = 2
DEMO_MODELS_MAX = 2
SHIPPED_DUMP = config.repo_root() / "assets" / "demo" / "demo-sweep.sql"


def is_demo(sweep: dict) -> bool:
    """A stored sweep (core.sweeps.analysis.stored.list_sweeps) that is the demo sweep."""
    return sweep.get("name") == DEMO_NAME


def user_first(sweep_ids: list, by_id: dict) -> list:
    """``sweep_ids`` (newest first) with the demo sweep moved after the user's own sweeps.

    >>> user_first([3, 2, 1], {3: {"name": "mine"}, 2: {"name": DEMO_NAME}, 1: {"name": "older"}})
    [3, 1, 2]
    """
    return [i for i in sweep_ids if not is_demo(by_id[i])] + [i for i in sweep_ids if is_demo(by_id[i])]


def demo_models(installed: list[registry.ModelEntry]) -> list[str]:
    """The demo sweep's models: the English default's with a measured CPU time, at most two (all
    of the default when none is measured: tests' tiny models have no card)."""
    best = registry.models_for_language("en", installed)
    by_name = {m.name: m for m in installed}
    measured = [n for n in best if registry.cpu_ms_per_question(by_name[n], "en") is not None]
    return (measured or best)[:DEMO_MODELS_MAX]


def build_demo_sweep(db: str | Path, engine_for: Callable[[str], object], models: list[str],
                     progress: Callable[[int, int], None] | None = None):
    """Run the demo sweep into ``db`` with ``engine_for(name)`` engines; returns the SweepRun.
    Running it again resumes it (or finds it done): the same configuration, the same name."""
    from core import datasets
    from core.perturb.spec import parse_specs
    from core.sweeps.config import SweepConfig
    from core.sweeps.running.lifecycle import launch

    demo = datasets.demo_dataset("en")
    config = SweepConfig("demo.en", parse_specs(DEMO_SPECS), list(models), repeats=DEMO_REPEATS, seed=0,
                         name=DEMO_NAME)
    return launch(config, db, engines={m: engine_for(m) for m in models}, dataset=demo, progress=progress)


def dump_store(db: str | Path) -> str:
    """The whole store ``db`` as SQL text (SQLite's own dump: schema, then rows in key order)."""
    with sqlite3.connect(f"file:{Path(db).resolve()}?mode=ro", uri=True) as con:
        return "\n".join(con.iterdump()) + "\n"


@functools.lru_cache(maxsize=8)
def _digest(path: str, mtime_ns: int, size: int) -> str:
    """The dump's content digest, read once per version of the file (pages ask on every rerun)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def shipped_store(dump: str | Path = SHIPPED_DUMP) -> Path:
    """The shipped demo sweep as a store to read: ``dump`` executed once into the cache, named by
    its digest so a changed dump makes a new store. Written beside and renamed into place, so two
    pages asking at once never see half a store."""
    stat = Path(dump).stat()
    folder = config.cache_dir() / "demo"
    target = folder / f"demo-sweep-{_digest(str(dump), stat.st_mtime_ns, stat.st_size)}.sqlite"
    if target.is_file():
        return target
    text = Path(dump).read_text(encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".sqlite.tmp")
    os.close(fd)
    try:
        con = sqlite3.connect(tmp)
        try:
            con.executescript(text)
            con.commit()
        finally:
            con.close()
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def write_dump(out: str | Path, models: Sequence[str] | None = None,
               progress: Callable[[int, int], None] | None = None) -> Path:
    """Run the demo sweep with the shipped models into a new store and write its dump to ``out``."""
    from core.io.outputs import write_text_atomic
    from core.qa.registry import installed_models, load_engine

    names = list(models) if models else demo_models(installed_models())
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.sqlite"
        build_demo_sweep(db, load_engine, names, progress=progress)
        with sqlite3.connect(db) as con:   # which process on which host built it is nobody's business
            con.execute("UPDATE sweeps SET owner_pid = NULL, owner_host = NULL, owner_start = NULL")
        write_text_atomic(Path(out), dump_store(db))
    return Path(out)


@cli.command("python -m core.explore.demo_sweep")
def main(argv: Sequence[str] | None = None) -> int:
    ap = cli.ArgumentParser(prog="python -m core.explore.demo_sweep", description=(
        "Rebuild the demo sweep with this machine's models and write it as the SQL text that a fresh "
        "clone's Heatmaps and Gallery open on."))
    ap.add_output("--write-dump", default=str(SHIPPED_DUMP), metavar="OUT",
                    help="where to write the dump (default: the shipped assets/demo/demo-sweep.sql)")
    ap.add_argument("--models", default=None, help="comma-separated models (default: the measured English defaults)")
    args = ap.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None

    with cli.ProgressLine() as line:   # an error mid-way starts on a line of its own
        out = write_dump(args.write_dump, models, progress=lambda done, total: line(done, total, "result rows"))
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
