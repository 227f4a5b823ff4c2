"""What each model costs in memory once loaded, and what the app's models cost together per language.

    python benchmarks/model_memory.py                         # every installed model, default backend
    python benchmarks/model_memory.py --models minilm-squad,e5-qa-multi --backend torch
    python benchmarks/model_memory.py --card                  # and write each figure on its card
    python benchmarks/model_memory.py --languages en,de,zh --json walk.json   # the budget at work

Per model (each in a fresh process, so one model's leftovers are not the next one's cost): the
process imports what a load needs and answers nothing yet; then it loads the model
(core.qa.registry.build_engine) with ``--backend`` (default: the model's own, from its card),
lets go of the torch copy where another backend answers (QAEngine.release_torch, what the app's
engine cache does), answers ``--answers`` questions of the demo set in the model's first language,
and drops the engine. Resident memory (RSS, psutil) is read after each step, after collecting
garbage and giving freed heap back to the system (core.memory.trim). Printed, in MB:

* ``resident_mb``: RSS after the answers minus RSS after the engine was dropped: what the model
  holds while loaded, and what the engine cache gets back by letting go of it;
* ``torch_copy_mb``: what the torch weights added beside the graph before they were let go of
  (the copy the app kept before the engine cache);
* ``load_s``: the load's wall time; ``kept_after_drop_mb``: RSS the first load leaves behind
  for good (libraries' lazily made globals), counted once per process, not per model.

``--card`` writes ``memory.backends.<backend>`` on each model's card (core.models.cards,
``write_memory``), which the engine cache reads to make room before a load, and the Models page
shows. ``--languages`` instead walks the app's path in one process: for each language, the
models the pickers tick for it (core.qa.registry.models_for_language) are taken from the engine
cache (within QAX_MODEL_MEMORY_MB) and answer that language's first demo question; RSS after
each language. ``--unbounded`` runs that walk as the app did before the cache: no budget and the
torch copy kept beside each graph.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core import cli  # noqa: E402  (the project on the path first)
from core.budgets import MAX_QUESTIONS  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def rss() -> float:
    from core import memory
    from core.qa.engine_cache import rss_mb

    memory.trim()
    return rss_mb()


def measure_one(name: str, backend: str, answers: int) -> dict:
    """The figures of one model, in this process (meant to be a fresh one)."""
    import onnxruntime  # noqa: F401  (imports are the process's, not the model's)
    import transformers  # noqa: F401

    from core.datasets import demo_dataset
    from core.qa import registry
    from core.qa.engine import EngineSettings

    entry = registry.get_entry(name)
    lang = entry.languages[0] if entry.languages[0] in ("en", "de", "zh") else "en"
    examples = demo_dataset(lang).examples[:answers]
    before = rss()
    t0 = time.perf_counter()
    engine = registry.build_engine(entry, EngineSettings(backend=backend))
    load_s = time.perf_counter() - t0
    with_torch = rss()
    released = engine.release_torch()
    without_torch = rss()
    engine.predict([e.question for e in examples], [e.context for e in examples])
    answered = rss()
    answering = engine.backend_name
    del engine
    dropped = rss()
    return {"model": name, "backend": answering, "resident_mb": round(answered - dropped, 1),
            "torch_copy_mb": round(with_torch - without_torch, 1) if released else 0.0,
            "load_s": round(load_s, 1), "kept_after_drop_mb": round(dropped - before, 1),
            "answers": len(examples), "lang": lang}


def in_fresh_process(name: str, backend: str, answers: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", name, "--backend", backend, "--answers", str(answers)],
                         capture_output=True, text=True, cwd=ROOT, env={**os.environ, "MALLOC_ARENA_MAX": "2"})
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{name}: the measuring process failed ({out.returncode}): {out.stderr.strip()[-400:]}")
    return json.loads(lines[-1])


def language_walk(langs: list[str], unbounded: bool) -> list[dict]:
    """RSS after each language's default models answered, through the app's engine cache."""
    from core.datasets import demo_dataset
    from core.qa import engine_cache, registry
    from core.qa.engine import EngineSettings, QAEngine

    if unbounded:   # the app before the engine cache: every model kept, each with its torch copy
        QAEngine.release_torch = lambda self: False
        cache = engine_cache.EngineCache(budget_mb=lambda: 1e9, entry_for=registry.get_entry,
                                             build=registry.build_engine)
    else:
        cache = registry.engines()
    installed = registry.installed_models()
    rows, start = [], rss()
    peak = start
    for lang in langs:
        names = registry.models_for_language(lang, installed)
        ex = demo_dataset(lang).examples[0]
        t0 = time.perf_counter()
        for name in names:
            cache.get(name, EngineSettings()).answer(ex.question, ex.context)
            peak = max(peak, rss())
        rows.append({"lang": lang, "models": names, "seconds": round(time.perf_counter() - t0, 1),
                     "rss_mb": round(rss(), 1), "models_mb": round(cache.total_mb(), 1),
                     "loaded": [h.name for h in cache.loaded()]})
    for r in rows:
        r.update(start_mb=round(start, 1), peak_mb=round(peak, 1), budget_mb=cache.budget_mb())
    return rows


def hardware() -> str:
    """The machine in a few words: architecture, CPU model, CPUs, memory."""
    import psutil

    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").is_file() else ""
    return (f"{platform.machine()}, {cpu or platform.system()}, {os.cpu_count()} CPUs, "
            f"{psutil.virtual_memory().total / 2**30:.0f} GiB")


@cli.command("benchmarks/model_memory.py")
def main(argv: list[str] | None = None) -> int:
    ap = cli.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="", help="comma-separated model names (default: every installed one)")
    ap.add_argument("--backend", default="default", help="the backend to load each with (default: its own)")
    ap.add_argument("--answers", type=cli.Count(MAX_QUESTIONS), default=12,
                    help="demo questions answered before measuring")
    ap.add_argument("--card", action="store_true", help="write each model's figure on its card")
    ap.add_argument("--languages", default="", help="instead: the app's walk over these languages, one process")
    ap.add_argument("--unbounded", action="store_true", help="with --languages: no budget, torch copies kept")
    ap.add_output("--json", help="write the figures to this JSON file")
    ap.add_argument("--one", help=argparse_hidden())
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure_one(args.one, args.backend, args.answers)))
        return 0
    out = cli.writable_file(args.json, "--json") if args.json else None
    if args.languages:
        rows = language_walk([x for x in args.languages.split(",") if x], args.unbounded)
        for r in rows:
            print(f"{r['lang']}: {', '.join(r['models'])} in {r['seconds']} s; RSS {r['rss_mb']:,.0f} MB "
                  f"(models {r['models_mb']:,.0f} MB of {r['budget_mb']:,.0f}; loaded: {', '.join(r['loaded'])})")
        print(f"RSS at start {rows[0]['start_mb']:,.0f} MB, peak {rows[0]['peak_mb']:,.0f} MB")
    else:
        from core.qa import registry

        names = [x for x in args.models.split(",") if x] or [m.name for m in registry.installed_models()]
        rows = []
        for name in names:
            entry = registry.get_entry(name)
            backend = entry.default_backend() if args.backend == "default" else args.backend
            row = in_fresh_process(name, backend, args.answers)
            rows.append(row)
            print(f"{name:20} {row['backend']:10} resident {row['resident_mb']:7.1f} MB   torch copy "
                  f"{row['torch_copy_mb']:6.1f} MB   load {row['load_s']:5.1f} s   left by the first load "
                  f"{row['kept_after_drop_mb']:6.1f} MB", flush=True)
            if args.card:
                write_on_card(entry, row, argv)
    if out:
        from core.io.outputs import write_text_atomic

        write_text_atomic(out, json.dumps(rows, indent=1) + "\n")
    return 0


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


def card_command(argv: list[str]) -> list[str]:
    """The flags a card records: the output file is wherever this run wrote it, not part of the
    measurement (and a path of the measuring machine).

    >>> card_command(["--models", "a,b", "--card", "--json", "walk.json"])
    ['--models', 'a,b', '--card']
    >>> card_command(["--json=walk.json", "--card"])
    ['--card']
    """
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--json":
            skip = True
        elif not arg.startswith("--json="):
            out.append(arg)
    return out


def write_on_card(entry, row: dict, argv: list[str] | None) -> None:
    from core.models.cards import write_memory

    command = "python benchmarks/model_memory.py " + " ".join(card_command(argv if argv is not None else sys.argv[1:]))
    write_memory(entry.local_dir(), row["backend"], {
        "resident_mb": row["resident_mb"], "torch_copy_mb": row["torch_copy_mb"], "load_s": row["load_s"],
        "answers": row["answers"], "date": date.today().isoformat(), "command": command.strip(),
        "hardware": hardware()})


if __name__ == "__main__":
    sys.exit(main())
