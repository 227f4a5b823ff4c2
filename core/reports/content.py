"""What a sweep report holds, collected through the stored sweep's read handle
(core.sweeps.analysis.stored.StoredSweep, the one Heatmaps reads through): the same numbers the page
shows, computed by the same core functions (core.sweeps.analysis: sweep_cells, aggregates, tables,
slices, repair, calibration, curves, backend_axis, drill) and drawn by the same figure builders
(core.render), never recomputed another way.

A :class:`Report` is renderer-neutral: a header, the command that reproduces the sweep, sections
(each a title, a note, tables as lists of dicts and plotly figures) in the order of the Heatmaps
tabs, a section only where its tab would show something for this sweep, and the worst examples
with every model's clean and perturbed span. core.reports.html and core.reports.markdown render it.
"""
from __future__ import annotations

import functools
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from core.compat import FINGERPRINT_TAGS, UNHASHED_BACKEND
from core.perturb.spec import PerturbationSpec
from core.render.curve_figure import curve_figure
from core.render.heatmap import METRICS, heatmap_figure
from core.render.sweep_figures import breakdown_figure, bucket_figure
from core.sweeps.analysis import curves as noise_curves
from core.sweeps.analysis import tables as views
from core.sweeps.analysis.stored import StoredSweep, list_sweeps
from core.sweeps.analysis.sweep_cells import penalty_totals

__all__ = ["Table", "Section", "Example", "Report", "ProgressFn", "WORST_EXAMPLES", "engine_backend", "sweep_command",
           "collect"]

WORST_EXAMPLES = 8          # the report's examples: the largest F1 losses over every cell
ProgressFn = Callable[[int, int, str], None]   # (steps done, steps in all, what runs now)


@dataclass
class Table:
    title: str
    rows: list[dict[str, Any]]


@dataclass
class Section:
    title: str
    note: str = ""
    tables: list[Table] = field(default_factory=list)
    figures: list[go.Figure] = field(default_factory=list)


@dataclass
class Example:
    """One of the worst rows: the cell's model lost ``f1_loss`` (0..1) under ``spec``; ``across``
    is every model's answer on it (core.sweeps.analysis.drill.example_across_models)."""

    model: str
    spec: str
    row: dict[str, Any]              # core.sweeps.analysis.sweep_cells.cell_examples' row
    across: list[dict[str, Any]]


@dataclass
class Report:
    header: dict[str, str]           # label -> value, in order
    command: str                     # the sweep command that reproduces the rows
    sections: list[Section]
    examples: list[Example]
    metric: str = "f1"


def engine_backend(fingerprint: str) -> str:
    """The engine backend a stored model fingerprint was answered with (core.compat: a backend enters
    the fingerprint as ``:backend=TAG`` except the unhashed one).

    >>> engine_backend("abc"), engine_backend("abc:long_from=4000:backend=onnx:fused-v5")
    ('torch', 'onnx')
    >>> engine_backend("x:backend=future-thing")
    'future-thing'
    """
    _, found, tag = fingerprint.partition(":backend=")
    if not found:
        return UNHASHED_BACKEND
    return next((name for name, t in sorted(FINGERPRINT_TAGS.items(), key=lambda kv: -len(kv[1]))
                 if tag == t or tag.startswith(t + ":")), tag)


@functools.lru_cache(maxsize=64)
def model_backend(model: str, fingerprint: str) -> str:
    """The engine backend ``model`` answered a stored sweep with.

    A QAEngine's fingerprint is a hash that holds its backend but does not show it, so for a
    registry model the backend is found the way a resumed sweep finds it: the model loaded with
    torch (nothing exported) gives each backend's fingerprint to compare
    (core.sweeps.running.backends.backend_for). A fingerprint that names its backend (a test
    double's) is read; "unknown" when neither tells (other weights or settings).

    >>> model_backend("not-a-registry-model", "abc:backend=onnx:fused-v5")
    'onnx'
    """
    if ":backend=" in fingerprint:
        return engine_backend(fingerprint)
    from core.compat import backend_of_line
    from core.qa.engine import EngineSettings
    from core.qa.receipts import receipt_for
    from core.qa.registry import ModelLoadError, get_entry, load_engine
    from core.sweeps.running.backends import backend_for

    try:
        entry = get_entry(model)
    except ModelLoadError:   # not a registry model: its fingerprint is all there is
        return engine_backend(fingerprint)
    # first the model's load receipt, where each fingerprint a load here computed is written down with
    # its settings: loading the torch model for this (MPNet: 420 MB) lifted a demo server by a GB
    receipt = receipt_for(entry)
    for line, known in ((receipt.data.get("fingerprints") or {}).items() if receipt is not None else ()):
        if known == fingerprint and backend_of_line(line) is not None:
            return backend_of_line(line)
    try:
        engine = load_engine(model, EngineSettings(backend="torch"))
    except Exception:        # weights missing here: the report still builds, without the backend
        return "unknown"
    return backend_for(engine, fingerprint) or "unknown"


def sweep_command(config: dict[str, Any], name: str, db: str | Path) -> str:
    """The ``python -m core.sweeps`` command that makes (or resumes) this sweep, shell-quoted.

    >>> sweep_command({"dataset": "demo.en", "specs": [["DCRQ", '{"n_chars":1}', 2, ""], ["TUQ", "{}", 1, ""]],
    ...                "models": [["m", "fp"]], "repeats": 2, "seed": 0, "sample": None}, "my sweep", "s.sqlite")
    "python -m core.sweeps --dataset demo.en --perturbations DCRQ:n_chars=1,TUQ --models m --repeats 2 --seed 0 \
--engine-backend torch --name 'my sweep' --db s.sqlite"
    """
    import json

    specs = ",".join(PerturbationSpec.make(pid, json.loads(params)).text for pid, params, *_ in config["specs"])
    models = [m for m, _ in config["models"]]
    parts = ["python -m core.sweeps", "--dataset", config["dataset"], "--perturbations", specs,
             "--models", ",".join(models), "--repeats", str(config["repeats"]), "--seed", str(config["seed"])]
    if config.get("sample") is not None:
        parts += ["--sample", str(config["sample"])]
    for key, flag in (("pair_by", "--pair-by"), ("on_ambiguous", "--on-ambiguous"), ("lang", "--lang")):
        if config.get(key) is not None:
            parts += [flag, str(config[key])]
    backends = {model_backend(m, fp) for m, fp in config["models"]}
    # mixed: each model's default backend made them (no one flag says so); unknown: resuming by
    # name finds each model's stored backend (core.sweeps.running.backends)
    if len(backends) == 1 and "unknown" not in backends:
        parts += ["--engine-backend", backends.pop()]
    parts += ["--name", name, "--db", str(db)]
    return " ".join(parts[:1] + [shlex.quote(p) for p in parts[1:]])


def _header(sweep: dict[str, Any], db: str | Path) -> dict[str, str]:
    config = sweep["config"]
    backends = {m: model_backend(m, fp) for m, fp in config["models"]}
    return {"sweep": sweep["name"], "dataset": sweep["dataset"], "database": str(db),
            "examples": str(sweep["n_examples"]), "models": ", ".join(sweep["models"]),
            "engine backends": ", ".join(f"{m}: {b}" for m, b in backends.items()),
            "perturbation specs": ", ".join(sweep["perturbations"]),
            "repeats · seed": f"{config.get('repeats')} · {config.get('seed')}",
            "result rows": f"{sweep['done_units']:,} of {sweep['total_units']:,} ({sweep['status']})",
            "created · updated": f"{sweep['created_at']} · {sweep['updated_at']}"}


def _heatmap(sweep: dict, cells: list, clean: dict, metric: str) -> Section:
    if not cells:      # a sweep with no model or no spec: what Heatmaps says too
        return Section("Model × perturbation", "This sweep has no cells.")
    fig, _ = heatmap_figure(cells, metric, "pct", totals=penalty_totals(cells, metric),
                            models=sweep["models"])
    return Section(
        "Model × perturbation",
        f"% change of {METRICS[metric]} against the clean questions, coloured by the German paper's bands; each "
        "cell's second line is its penalty, each model's label its penalty total (Σ; lower = more robust).",
        [Table("Penalty total per model", views.penalty_summary(cells, clean, sweep["models"])),
         Table("Clean scores (all examples of the sweep)", views.clean_rows(clean)),
         Table("Every cell: F1 / EM, N examples, repeats", views.cell_rows(cells, sweep["models"]))],
        [fig])


def _model_vs_model(stored: StoredSweep) -> Section | None:
    """Every other model against the first (an LLM reader beside an encoder included; the report
    compared only the first two, and Heatmaps' tab compares any pair)."""
    models = stored.models
    if len(models) < 2:
        return None
    first = models[0]
    return Section("Model vs model",
                   f"Each model − {first} in F1 points on the examples both were scored on, with a 95% "
                   "paired-bootstrap interval over those examples (2,000 resamples, seed 0).",
                   [Table(f"{other} − {first}", stored.model_differences(first, other)) for other in models[1:]])


def _llm_answers(stored: StoredSweep) -> Section | None:
    """Where the generative readers' answers came from, clean and under each spec (Heatmaps' "LLM
    answers" tab)."""
    from core.sweeps.analysis.alignment import CAPTION, generative_models

    readers = generative_models(stored.models)
    if not readers:
        return None
    return Section("LLM answers", CAPTION.replace("**", "").replace("*", ""),
                   [Table(f"{model}: how its answers were found", [r for r in stored.alignment_rates(readers)
                                                                  if r["model"] == model]) for model in readers])


def _penalty_by_n(stored: StoredSweep, cells: list, metric: str) -> Section | None:
    params = views.n_parameters(cells)
    if not params:
        return None
    tables = []
    for param in params:
        table = stored.penalty_table(param, metric)
        tables.append(Table(f"{METRICS[metric]} penalty by {param} ({views.specs_per_n(table)})",
                            views.penalty_rows(table)))
    grid = views.n_grid(cells)
    if grid is not None:
        shared = ", ".join(f"{k}={v}" for k, v in grid.constants.items())
        tables.append(Table(f"{METRICS[metric]} % change per perturbation and {grid.param}"
                            + (f" ({shared} in every row with it)" if shared else ""),
                            views.n_grid_rows(cells, metric, stored.models)))
    return Section("Penalty by number of perturbed words / characters",
                   "Each model's penalties summed over the specs with n = 1, 2, …; then each perturbation's "
                   "% change at every n, its fewest examples scored (N) and its penalties summed.", tables)


def _noiseqa(stored: StoredSweep, cells: list, metric: str) -> Section | None:
    if not any(views.interface_of(c.perturbation, c.family) for c in cells):
        return None
    rates = stored.noise_rates()
    section = Section("NoiseQA: interface noise",
                      "Clean vs noisy EM / F1 (Table 4 layout) with each noisy set's CER / WER / BLEU (Table 3).",
                      [Table("Clean vs noisy", views.noiseqa_table(cells, rates))])
    asr = views.asr_breakdown(cells, rates)
    if asr:
        section.tables.append(Table("ASR noise per voice and engine", asr))
        section.figures.append(breakdown_figure(asr, "voice", METRICS[metric], facet="engine",
                                                title=f"ASR noise: {METRICS[metric]} per voice and ASR engine"))
    mt = stored.mt_breakdown()
    if mt:
        section.tables.append(Table("MT noise per source language", mt))
        section.figures.append(breakdown_figure(mt, "source language", METRICS[metric],
                                                title=f"MT noise: {METRICS[metric]} per language translated "
                                                      "into English"))
    return section


def _dureader(stored: StoredSweep) -> Section:
    specs = stored.specs()
    section = Section("DuReader-robust: over-sensitivity and over-stability",
                      "DPR = share of (original, paraphrased) question pairs whose predictions differ (the "
                      "paraphrase family, as Heatmaps counts it by default); F1 against the similarity of a trap "
                      "sentence to the clean question.")
    dpr = stored.dpr_table(("paraphrase",))
    if dpr:
        section.tables.append(Table("DPR per model (“(all)” pools the model's pairs)", views.dpr_rows(dpr, specs)))
        sim = stored.dpr_by_similarity(("paraphrase",))
        section.tables.append(Table("DPR by question similarity", views.bucket_rows(sim, "DPR %")))
        section.figures.append(bucket_figure(sim, "DPR (%)", "similarity of perturbed to original question "
                                             "(token F1)", title="DPR against question similarity"))
    traps = stored.traps()
    if traps["buckets"]:
        section.tables.append(Table(f"F1 by question-trap similarity (clean questions; {traps['with_trap']} "
                                    f"with a trap sentence, {traps['without_trap']} without)",
                                    views.bucket_rows(traps["buckets"], "F1 %")))
        section.figures.append(bucket_figure(traps["buckets"], "F1 (%)", "similarity of trap sentence to question "
                                             "(token F1)", title="F1 against question-trap similarity (clean)"))
    return section if section.tables else Section(section.title, "No paraphrase pair and no trap sentence in "
                                                  "this sweep.")


def _repair(stored: StoredSweep, cells: list) -> Section | None:
    if not any("repair_Q" in c.perturbation for c in cells):
        return None
    return Section("NoiseQA: question repair", "Noisy and repaired F1 on the same questions; gain with its 95% "
                   "paired-bootstrap interval.", [Table("Repair", stored.repair_table())])


def _slices(stored: StoredSweep) -> Section:
    from core.sweeps.analysis.slices import SLICES

    tables = []
    for name, label in SLICES.items():
        rows = [{k: v for k, v in c.as_dict().items() if k not in ("perturbation", "params")}
                for c in stored.slice_cells(name)]
        if rows:
            tables.append(Table(f"F1 by {label} (N per cell)", rows))
    tables.append(Table("Answer scores and abstention (calibration)", stored.calibration_table()))
    return Section("Slices & calibration", "Every slice of the Heatmaps tab, every model and spec.", tables)


def _curves(stored: StoredSweep, seed: int) -> Section:
    section = Section("F1 against measured noise",
                      "Each question variant at its measured noise against the original question, binned; per model "
                      f"the mean F1 of each bin with a 95% bootstrap band (seed {seed}) and its break point: the "
                      "first bin whose F1 is below 90% of clean.")
    for measure in noise_curves.MEASURES:
        c = stored.curves(measure, seed)
        if not any(b.n for b in c.bins):
            continue
        unit = "BLEU" if measure == "bleu" else f"{measure.upper()} %"
        section.figures.append(curve_figure(c))
        unseen = (f" ({c.unseen:,} variants changed only case or punctuation, which {measure.upper()} does not "
                  "count: they sit in the first bin)") if c.unseen and measure != "bleu" else ""
        section.tables.append(Table(f"{measure.upper()}: break points{unseen}",
                                    [{"model": m, "clean F1": round(c.clean[m], 2) if m in c.clean else None,
                                      "break point (bin)": "none" if bp is None else f"{unit} {c.break_bin(m)}"}
                                     for m, bp in c.breaks.items()]))
        section.tables.append(Table(f"{measure.upper()}: bins", c.rows()))
    return section if section.figures else Section(section.title, "No scored question variant in this sweep.")


def _backend_flips(stored: StoredSweep, others: list[dict]) -> Section | None:
    sweep = stored.info
    section = Section("Backend flips", "Answers that differ between this sweep and another stored sweep of the same "
                      "data, perturbations and seed run with another engine backend.")
    def backends(s: dict) -> dict[str, str]:
        return {m: model_backend(m, fp) for m, fp in s["config"]["models"]}

    for other in others:   # the same data and seed, answered with other backends
        if (other["id"] == sweep["id"] or other["dataset"] != sweep["dataset"]
                or other["config"].get("seed") != sweep["config"].get("seed") or backends(other) == backends(sweep)):
            continue
        try:
            rows = stored.backend_flips(StoredSweep(stored.db, other["id"]))
        except ValueError:      # no shared row: not the same sweep under another backend
            continue
        section.tables.append(Table(f"against {other['name']}", rows))
    return section if section.tables else None


def worst_examples(stored: StoredSweep, cells: list, k: int = WORST_EXAMPLES) -> list[Example]:
    """The ``k`` rows with the largest F1 loss over every cell (a row shared by several models is
    shown once, at its worst), each with every model's answers on it: the handle's reads, so a
    cell the page has drilled into already is not read again."""
    pool = []
    for c in cells:
        for r in stored.cell_examples(c.model, c.perturbation, c.params_json, limit=k):
            if r["f1_loss"] is not None and r["f1_loss"] > 0:
                pool.append((c, r))
    pool.sort(key=lambda cr: -cr[1]["f1_loss"])      # stable: ties keep the sweep's order
    seen, out = set(), []
    for c, r in pool:
        key = (c.perturbation, c.params_json, r["example_hash"], r["repeat"])
        if key in seen:
            continue
        seen.add(key)
        across = stored.example_across_models(c.perturbation, c.params_json, r["example_hash"], r["repeat"])
        out.append(Example(c.model, c.label, r, across))
        if len(out) == k:
            break
    return out


def collect(db: str | Path, sweep: int | str, metric: str = "f1", seed: int = 0,
            progress: ProgressFn | None = None, stored: StoredSweep | None = None,
            shown_db: str | None = None) -> Report:
    """Everything the report shows for ``sweep`` in ``db`` (read-only). ``seed``: the curves'
    bootstrap seed. ``progress(done, total, label)`` is called before each step. ``shown_db``: how
    the header and the reproduce command name the database (a page passes a name that gives away
    no server folder; default ``db`` as given). A sweep name not in ``db`` raises KeyError (from the store)."""
    sweeps = list_sweeps(db)
    # the read handle Heatmaps uses: the same numbers, and what the page has read already is not read again
    stored = stored if stored is not None else StoredSweep(db, sweep)
    info = stored.info
    cells = stored.cells()
    clean = stored.clean_scores()
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("heatmap", lambda: _heatmap(info, cells, clean, metric)),
        ("model vs model", lambda: _model_vs_model(stored)),
        ("LLM answers", lambda: _llm_answers(stored)),
        ("penalty by n", lambda: _penalty_by_n(stored, cells, metric)),
        ("NoiseQA", lambda: _noiseqa(stored, cells, metric)),
        ("DuReader-robust", lambda: _dureader(stored)),
        ("repair", lambda: _repair(stored, cells)),
        ("slices", lambda: _slices(stored)),
        ("noise curves", lambda: _curves(stored, seed)),
        ("backend flips", lambda: _backend_flips(stored, sweeps)),
        ("worst examples", lambda: worst_examples(stored, cells)),
    ]
    sections, examples = [], []
    for i, (label, step) in enumerate(steps):
        if progress:
            progress(i, len(steps), label)
        result = step()
        if isinstance(result, list):
            examples = result
        elif result is not None:
            sections.append(result)
    if progress:
        progress(len(steps), len(steps), "done")
    shown = str(db) if shown_db is None else shown_db
    if shown_db is not None:   # built for a visitor: a data set given by its server path shows its file name
        from core.config import shown_dataset

        info = {**info, "dataset": shown_dataset(info["dataset"]),
                "config": {**info["config"], "dataset": shown_dataset(info["config"]["dataset"])}}
    return Report(_header(info, shown), sweep_command(info["config"], info["name"], shown), sections, examples, metric)
