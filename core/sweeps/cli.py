"""The sweep CLI: ``python -m core.sweeps`` (``python -m core.sweeps``, the old name, still works).

    python -m core.sweeps --dataset xquad/xquad.en --perturbations keyboard_Q,DPQ,keyboard_Q+DPQ \\
        --models minilm-squad [--repeats 3 --seed 0 --sample 200] [--backend ray]
    python -m core.sweeps --list | --show NAME [--compare A,B | --repair | --slice wh | --calibration
        | --curve cer|wer|bleu [--curve-csv OUT] | --backend-vs OTHER [--backend-csv OUT] | --report OUT.html]

``--curve``: F1 against each variant's measured question noise, binned, with bootstrap bands
seeded by ``--seed`` and each model's break point (:mod:`core.sweeps.analysis.curves`). ``--backend-vs``:
the answers that differ between NAME and OTHER, the same sweep run with another engine backend
(:mod:`core.sweeps.analysis.backend_axis`). ``--report``: the sweep as one self-contained HTML file and
Markdown beside it (:mod:`core.reports`).

Re-running the same command resumes an interrupted sweep. ``--perturbations`` takes the spec
language of :mod:`core.perturb.spec`.
"""
from __future__ import annotations

import argparse
import dataclasses
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from core import cli, config
from core.budgets import (
    MAX_BATCH_SIZE,
    MAX_CHUNK,
    MAX_PROCESSES,
    MAX_QUESTIONS,
    MAX_RAY_WORKERS,
    MAX_REPEATS,
    MAX_THREADS,
)
from core.datasets import FILE_PREFIX, Dataset, load_dataset
from core.perturb.spec import PerturbationSpec, parse_specs
from core.qa.engine import engine_settings
from core.sweeps.config import DEFAULT_DB, SweepConfig
from core.sweeps.running.resolve import resolve_spec
from core.sweeps.store import Store

__all__ = ["main", "PROG"]


PROG = "python -m core.sweeps"


def _report_files(report: str | None, args: argparse.Namespace) -> list[str] | None:
    """The files ``--report`` writes: the HTML file and the Markdown beside it."""
    from core.reports import markdown_path

    if not report:
        return None
    if Path(report).suffix.lower() == ".md":
        raise cli.CLIError(f"--report {report}: name the HTML file (OUT.html); its Markdown is written beside "
                           "it as OUT.md")
    md = markdown_path(report)
    try:   # the Markdown is not named on the command line: it replaces only an earlier report
        first = md.open(encoding="utf-8", errors="replace").readline() if md.is_file() else "# Sweep report"
    except OSError:
        first = ""
    if not first.startswith("# Sweep report"):
        raise cli.CLIError(f"--report {report} writes its Markdown to {md}, which exists and is not a sweep "
                           "report: name another OUT.html or move that file")
    return [report, str(md)]


def _stored_sweep_files(name: str | None, args: argparse.Namespace) -> list[Path]:
    """The files the stored sweep ``name`` of ``--db`` was made from (its data set and its ``file:``
    challenge sets): with --show, what a --report, --curve-csv or --backend-csv must not write over.
    Nothing when the sweep cannot be read: the command says why when it reads it."""
    if not name or not Path(args.db).is_file() or not (args.report or args.curve_csv or args.backend_csv):
        return []   # nothing written: the store is read once, by the view itself
    from core.sweeps.analysis.stored import StoredSweep

    try:
        sweep = StoredSweep(args.db, name)
        names = [sweep.info["dataset"], *(part for spec in sweep.specs() for part in spec["perturbation"].split("+")
                                          if part.startswith(FILE_PREFIX))]
    except (KeyError, ValueError, OSError, sqlite3.Error):
        return []
    return cli.dataset_files("data_dir")(names, args)


def _build_parser() -> argparse.ArgumentParser:
    ap = cli.ArgumentParser(
        prog=PROG,
        description="Evaluate QA models under question/context perturbations over a data set. "
                    "Re-run the same command to resume an interrupted sweep.")
    ap.add_input("--dataset", paths=cli.dataset_files("data_dir"),
                 help="file path, demo.<lang>, or a path under the data dir (e.g. xquad/xquad.en)")
    ap.add_argument("--perturbations", help="comma-separated: ID, ID:key=1..4, file:PATH, family:NAME")
    ap.add_argument("--models", help="comma-separated model names from the model registry (models.toml)")
    ap.add_argument("--repeats", type=cli.Count(MAX_REPEATS), default=1,
                    help="runs of each randomised perturbation (default 1)")
    ap.add_argument("--seed", type=cli.seed, default=0, help="base seed for sampling and perturbing (default 0)")
    ap.add_argument("--sample", type=cli.Count(MAX_QUESTIONS), default=None, help="use a seeded sample of N examples")
    ap.add_argument("--name", default=None, help="sweep name (default: <dataset>-<config hash>)")
    ap.add_output("--db", default=str(config.sweep_db_default()), also_input=True,
                  help="SQLite results file, written by a sweep, read by --list and --show (default: the app's, "
                       f"QAX_SWEEP_DB, else sweeps.sqlite in QAX_RUNS_DIR, else {DEFAULT_DB} in the repository)")
    ap.add_input("--data-dir", default=None, help="data directory (default: QAX_DATA_DIR or ../shared/data)")
    ap.add_argument("--chunk-size", type=cli.Count(MAX_CHUNK), default=256,
                    help="units per committed chunk (default 256)")
    ap.add_argument("--batch-size", type=cli.Count(MAX_BATCH_SIZE), default=None, help="engine batch size")
    ap.add_argument("--threads", type=cli.Count(MAX_THREADS), default=None,
                    help="CPU threads per engine (default: the policy of core.qa.threads: every core when "
                         "alone, one beside other askers; QAX_THREADS sets the budget)")
    ap.add_argument("--backend", default="local", metavar="{local,ray}",
                    help="where the sweep runs: local (this process, the default) or ray (a Ray cluster, see "
                         "--address and --workers; core.sweeps.running.ray). A forward-pass name (torch, torch-bf16, "
                         "onnx, onnx-int8) is still accepted here and means --engine-backend")
    ap.add_argument("--engine-backend", default=None,
                    help="forward pass: default (each model's, chosen by the rule and recorded in its card), "
                         "torch, torch-bf16, onnx (ONNX Runtime fp32), onnx-int8, openvino, openvino-int8 or "
                         "openvino-int8-full; "
                         "part of the prediction cache key. "
                         "Without it, --name of a stored sweep resumes with the backend that sweep was made with")
    ap.add_argument("--address", default=None, help="with --backend ray: the cluster to join (printed by `ray start "
                                                    "--head`, or auto); default: start a local Ray")
    ap.add_argument("--workers", type=cli.Count(MAX_RAY_WORKERS), default=None,
                    help="with --backend ray: workers (one actor per model each; default: the cluster's "
                         "GPUs, else its CPUs)")
    ap.add_argument("--processes", type=cli.Count(MAX_PROCESSES), default=None,
                    help="local sweeps: worker processes answering (one thread each; core.sweeps.running.processes). "
                         "Default: this machine's measurement (python -m core.sweeps.running.processes "
                         "--calibrate), else 1")
    ap.add_argument("--metric", choices=("f1", "em"), default="f1", help="metric of the printed table")
    ap.add_argument("--list", action="store_true", help="list the sweeps stored in --db and exit")
    ap.add_input("--show", metavar="NAME", paths=_stored_sweep_files,
                 help="print the table of a stored sweep and exit")
    ap.add_argument("--compare", metavar="A,B", help="with --show: model B - model A in F1 per spec, with a 95%% "
                                                     "paired-bootstrap interval over examples")
    ap.add_argument("--repair", action="store_true", help="with --show: NoiseQA's question repair table (each "
                    "A+repair_Q spec against A, gain with a 95%% paired-bootstrap interval)")
    ap.add_argument("--slice", metavar="NAME", help="with --show: the table per slice group: wh, answer, qlen, "
                                                    "clen, overlap, paragraph or cer (N per cell)")
    ap.add_argument("--calibration", action="store_true", help="with --show: answer scores clean vs perturbed "
                    "and the abstention threshold that keeps 90%% of clean F1")
    ap.add_argument("--curve", choices=("cer", "wer", "bleu"), help="with --show: F1 against each variant's measured "
                    "question noise, binned, with 95%% bootstrap bands (seeded by --seed) and each model's break "
                    "point (F1 below 90%% of clean)")
    ap.add_output("--curve-csv", metavar="OUT", help="with --curve: also write the curve's rows as CSV")
    ap.add_input("--backend-vs", metavar="NAME", paths=_stored_sweep_files,
                 help="with --show A: the answers that differ between sweep A "
                 "and sweep NAME (the same data, perturbations and seed run with another --engine-backend), "
                 "per model and perturbation, with the question noise of flipped and kept rows")
    ap.add_output("--backend-csv", metavar="OUT", help="with --backend-vs: also write its rows as CSV")
    ap.add_output("--report", metavar="OUT.html", paths=_report_files,
                  help="with --show: write the sweep's report as one self-contained "
                       "HTML file (heatmap, tables, the papers' views, slices, curves, worst examples; no "
                       "external request when opened) and Markdown beside it (OUT.md)")
    ap.add_argument("--list-perturbations", action="store_true", help="list registered perturbations and exit")
    cli.add_loader_options(ap, pairing=True)
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def _backends(args: argparse.Namespace) -> tuple[str, str]:
    """(where the sweep runs, the forward pass) from --backend and --engine-backend. --backend
    named the forward pass before the Ray backend existed: those names still mean it."""
    from core.qa.backends.selection import CHOICES as BACKENDS

    where, engine = args.backend, args.engine_backend
    if where in BACKENDS:
        if engine is not None and engine != where:
            raise cli.CLIError(f"--backend {where} (the old spelling of --engine-backend) contradicts "
                               f"--engine-backend {engine}")
        where, engine = "local", where
    if where not in ("local", "ray"):
        raise cli.CLIError(f"--backend must be one of local, ray, {', '.join(BACKENDS)}, got {where!r}")
    if engine is not None and engine not in BACKENDS:
        raise cli.CLIError(f"--engine-backend must be one of {', '.join(BACKENDS)}, got {engine!r}")
    if where != "ray":
        given = [flag for flag, value in (("--address", args.address), ("--workers", args.workers))
                 if value is not None]
        if given:
            raise cli.CLIError(f"{' and '.join(given)} go with --backend ray")
    elif args.processes is not None:
        raise cli.CLIError("--processes goes with --backend local (on Ray, --workers)")
    return where, engine or "default"


def _say_switched(switched: dict[str, str], name: str) -> None:
    for model, backend in switched.items():
        print(f"{model}: resuming {name} with the {backend} backend it was made with", file=sys.stderr)


def _check_views(args: argparse.Namespace) -> None:
    """The --show views: one at most, and only with --show."""
    views = [flag for flag, on in (("--compare", args.compare), ("--repair", args.repair),
                                   ("--slice", args.slice), ("--calibration", args.calibration),
                                   ("--curve", args.curve), ("--backend-vs", args.backend_vs),
                                   ("--report", args.report)) if on]
    if args.backend_csv and not args.backend_vs:
        raise cli.CLIError("--backend-csv goes with --show A --backend-vs B")
    if args.curve_csv and not args.curve:
        raise cli.CLIError("--curve-csv goes with --show NAME --curve cer|wer|bleu")
    if views and not args.show:
        raise cli.CLIError(f"{views[0]} goes with --show NAME")
    if len(views) > 1:
        raise cli.CLIError(f"choose one of {', '.join(views)}")
    if args.slice:
        from core.sweeps.analysis.slices import SLICES

        if args.slice not in SLICES:
            raise cli.CLIError(f"unknown slice {args.slice!r}; slices: {', '.join(SLICES)}")


def _list_perturbations() -> None:
    from core.perturb import registry

    for p in registry.all_perturbations():
        kind = "randomised" if p.randomised else "deterministic"
        print(f"{p.id:22s} {p.family:12s} {p.field:9s} {kind:13s} {p.default_params}")


def _read(args: argparse.Namespace) -> int:
    """--list and --show, through the sweep's read handle: reading never writes (an old store is not
    upgraded, a foreign file is refused untouched)."""
    from core.sweeps import cli_text
    from core.sweeps.analysis.stored import StoredSweep, list_sweeps

    if Path(args.db).is_dir():
        raise cli.CLIError(f"{args.db} is a folder, not a sweep database")
    if not Path(args.db).is_file():
        if args.list:
            raise cli.CLIError(f"no sweep database at {args.db}: nothing to list")
        raise cli.CLIError(f"no sweep database at {args.db}: cannot show {args.show!r}")
    if args.list:
        print(cli_text.format_sweep_list(list_sweeps(args.db)))
        return 0
    if args.report:
        _report(args)
        return 0
    models = [m.strip() for m in args.compare.split(",")] if args.compare else []
    if args.compare and len(models) != 2:
        raise cli.CLIError("--compare takes two model names, A,B")
    sweep = StoredSweep(args.db, args.show)
    if args.compare:
        print(cli_text.format_differences(sweep.model_differences(*models), *models))
    elif args.repair:
        from core.sweeps.analysis.repair import format_repair_table

        print(format_repair_table(sweep.repair_table()))
    elif args.slice:
        from core.sweeps.analysis.slices import format_slice

        print(format_slice(sweep.slice_cells(args.slice), args.slice, metric=args.metric))
    elif args.curve:
        from core.io.csv_export import csv_text
        from core.sweeps.analysis.curves import format_curves

        curves = sweep.curves(args.curve, seed=args.seed)
        print(format_curves(curves))
        if args.curve_csv:
            cli.write_text_atomic(args.curve_csv, csv_text(curves.rows()))
            print(f"curve rows -> {args.curve_csv}")
    elif args.backend_vs:
        from core.io.csv_export import csv_text
        from core.sweeps.analysis.backend_axis import format_flips

        flips = sweep.backend_flips(StoredSweep(args.db, args.backend_vs))
        print(format_flips(flips, args.show, args.backend_vs))
        if args.backend_csv:
            cli.write_text_atomic(args.backend_csv, csv_text(flips))
            print(f"rows -> {args.backend_csv}")
    elif args.calibration:
        from core.sweeps.analysis.calibration import format_calibration

        print(format_calibration(sweep.calibration_table()))
    else:
        print(cli_text.format_report(sweep, metric=args.metric))
    return 0


def _report(args: argparse.Namespace) -> None:
    import shlex

    from core import reports

    command = " ".join([PROG, "--show", shlex.quote(args.show), "--db", shlex.quote(str(args.db)), "--report",
                        shlex.quote(str(args.report)), "--metric", args.metric, "--seed", str(args.seed)])
    progress = None if args.quiet else lambda done, total, label: print(f"report {done}/{total}: {label}",
                                                                          file=sys.stderr, flush=True)
    html, md = reports.write(args.db, args.show, args.report, metric=args.metric, seed=args.seed, progress=progress,
                             command=command)
    print(f"report -> {html} and {md}")


def _check_inputs(args: argparse.Namespace, specs: list[PerturbationSpec], model_names: list[str]) -> Dataset:
    """Data set, perturbation ids and parameters, challenge files, model names and the database:
    all checked before the first (slow) model load, so a typo costs a second, not a model load,
    and prints nothing else. Returns the loaded data set."""
    from core.io.sqlite_db import sqlite_kind
    from core.perturb import registry as perturbations
    from core.qa.registry import get_entry

    dataset = load_dataset(args.dataset, args.data_dir, **cli.loader_kwargs(args))
    print(dataset.load_line(), flush=True)
    for spec in specs:
        # each challenge file is read and paired now too: a refusal costs no model load
        resolved = resolve_spec(spec, args.repeats, perturbations.get, dataset, args.data_dir,
                                pair_by=args.pair_by, on_ambiguous=args.on_ambiguous)
        if resolved.pairing is not None:
            print(f"{spec.id}: {resolved.pairing.summary()}", flush=True)
    for name in model_names:
        get_entry(name)
    if sqlite_kind(args.db) in ("directory", "other"):
        with Store(args.db):  # refuses a folder or a non-SQLite file untouched: now, not after loading
            pass
    return dataset


def _progress_bar(quiet: bool):
    """(progress callback, close) for a tqdm bar counting result rows, or no-ops when quiet."""
    if quiet:
        return None, lambda: None
    from tqdm import tqdm

    bar = tqdm(total=0, unit="row", desc="sweep", dynamic_ncols=True)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return progress, bar.close


def _sweep(args: argparse.Namespace) -> int:
    """Run (or resume) the sweep the flags describe (core.sweeps.running.lifecycle.launch: it also stores
    the aggregates), then print its table."""
    from core.sweeps import cli_text

    missing = [flag for flag, value in (("--dataset", args.dataset), ("--perturbations", args.perturbations),
                                        ("--models", args.models)) if not value]
    if missing:
        raise cli.CLIError(f"{', '.join(missing)} required (or use --list / --show)")
    # Settings first: a bad one must stop the run before a model loads or the database opens, so
    # it can never leave empty predictions in the shared prediction cache.
    where, engine_backend = _backends(args)
    settings = engine_settings(batch_size=args.batch_size, threads=args.threads or None, backend=engine_backend)
    specs = parse_specs(args.perturbations)
    model_names = [m.strip() for m in args.models.split(",") if m.strip()]
    dataset = _check_inputs(args, specs, model_names)
    from core.qa.registry import load_engine  # lazy: torch and transformers load here
    from core.sweeps.running.backends import stored_fingerprints
    from core.sweeps.running.lifecycle import RayOptions, launch
    from core.sweeps.running.processes import default_processes

    # Each engine is loaded with these settings (the registry caches per settings) instead of
    # changing the settings of a shared cached engine after the fact. On Ray the actors load them.
    engines = {name: load_engine(name, settings) for name in model_names} if where == "local" else {}
    # a named sweep resumes with the backends it was made with, unless a backend was asked for
    asked = args.engine_backend is not None or args.backend not in ("local", "ray")
    stored = stored_fingerprints(args.db, args.name) if args.name and not asked else {}
    config = SweepConfig(args.dataset, specs, model_names, repeats=args.repeats, seed=args.seed,
                         sample=args.sample, name=args.name, pair_by=args.pair_by,
                         on_ambiguous=args.on_ambiguous, lang=args.lang)
    progress, close_bar = _progress_bar(args.quiet)
    try:
        run = launch(config, args.db, engines=engines, stored=stored,
                     ray=RayOptions(args.address, args.workers, settings) if where == "ray" else None,
                     load_as=lambda model, backend: load_engine(model, dataclasses.replace(settings, backend=backend)),
                     on_switched=lambda switched: _say_switched(switched, args.name), dataset=dataset,
                     data_dir=args.data_dir, progress=progress, chunk_size=args.chunk_size, shutdown=True,
                     processes=args.processes or default_processes(),
                     # the bar's line ends before the aggregates are stored
                     on_phase=lambda phase: close_bar())
    except KeyboardInterrupt:
        close_bar()
        print("\ninterrupted: everything committed so far is kept; re-run the same command to resume",
              file=sys.stderr)
        return 130
    finally:
        close_bar()  # the progress bar's line ends before an error's (core.cli prints it)
    print(f"sweep {run.name!r}: {run.status}, {run.done_units}/{run.total_units} rows "
          f"({run.resumed_units} resumed), {run.predictions_computed} predictions computed, "
          f"{run.predictions_cached} from cache, {run.model_calls} model calls, {run.elapsed_s:.1f} s")
    from core.sweeps.analysis.stored import StoredSweep

    print(cli_text.format_report(StoredSweep(args.db, run.sweep_id), metric=args.metric))
    return 0


@cli.command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Bad input (flags, settings, names, files, a database that is not a sweep store) ends in one
    line on stderr and exit status 2 (core.cli), before anything is written."""
    args = _build_parser().parse_args(argv)
    if args.list_perturbations:
        _list_perturbations()
        return 0
    _check_views(args)
    if args.list or args.show:
        return _read(args)
    return _sweep(args)
