"""Sweep benchmark: XQuAD-en x 10 perturbations x 2 models, cold vs warm vs a naive loop.

In one run, on the same examples, perturbations, seeds and models:
  1. cold:  ``core.sweeps.running.run.run_sweep`` into a fresh database (perturbs, predicts in batched chunks,
            writes every row);
  2. warm:  the same configuration again as a NEW sweep name in the same database, so every
            variant and prediction comes from the cache (must make zero model calls) and only
            the result rows are written;
  3. resume of the finished sweep (same name): nothing to do;
  4. naive: the same work as a per-example loop: for every model, unit and example, perturb,
            call ``engine.answer`` on one (question, context) pair, score; no batching, no cache,
            no database. Its mean F1 per model is compared with the sweep's, to show it did the
            same work (batched padding may move a float; the difference is printed).
Reported: wall time of each, predictions computed and predictions per second. NLP backends
are loaded and each model is called once before the timings; the tagging cache is emptied
before the cold run and before the naive loop.

    python benchmarks/sweep.py                                  # full XQuAD-en (1,190 questions)
    python benchmarks/sweep.py --sample 30 --models minilm-squad,minilm-squad-noise
    python benchmarks/sweep.py --sample 30 --json out.json
    python benchmarks/sweep.py --sample 120 --compare-cold torch:1,default:1,default:2   # cold sweeps side by side

``--compare-cold BACKEND:PROCESSES,...`` times only cold sweeps, one per setup (an engine backend
and the worker processes answering, core.sweeps.running.processes), each into a fresh database through
core.sweeps.running.lifecycle.launch (the pool's start, spawning and loading the models, is in the time),
``--rounds`` rounds with the setups in rotated order; prints each setup's fastest round, its
speed-up over the first setup, its mean F1 per model and the load average.

Models come from the model registry (models.toml, or QAX_MODELS_TOML). Cost at full size on CPU:
~26k predictions per mode and model; the naive loop is the slow part (one forward pass per
question). Use --sample on a shared machine.
"""
from __future__ import annotations

import json
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_BATCH_SIZE, MAX_CHUNK, MAX_QUESTIONS, MAX_REPEATS, MAX_ROUNDS, MAX_THREADS
from core.datasets import load_dataset, sample_examples
from core.metrics import score_answer
from core.perturb.spec import parse_specs
from core.sweeps.config import SweepConfig
from core.sweeps.keys import example_hash
from core.sweeps.running.resolve import resolve_spec
from core.sweeps.running.run import run_sweep
from core.sweeps.store import Store

DEFAULT_PERTURBATIONS = ("keyboard_Q,misspell_Q,TLQ,DPQ,drop_function_Q,DCRQ,SCRQ,DRQ,SwapRQ,"
                         "file:noiseqa/Synthetic/xquad-keyboard-synthetic")


def naive_loop(dataset, examples, spec_objects, engines, seed: int) -> tuple[float, int, dict]:
    """Perturb and answer one pair at a time; returns (seconds, predictions, {model: mean F1 %})."""
    t0 = time.perf_counter()
    n_pred = 0
    f1_sums: dict[str, list[float]] = {m: [] for m in engines}
    for model, engine in engines.items():
        for ex in examples:
            engine.answer(ex.question, ex.context, n_best=1)
            n_pred += 1
        for spec in spec_objects:
            for repeat in range(spec.repeats):
                for ex in examples:
                    h = example_hash(ex)
                    outcome = spec.make(ex, spec.rng(h, seed, repeat))
                    if outcome.status != "ok":
                        continue
                    v = outcome.example
                    try:
                        pred = engine.answer(v.question, v.context, n_best=1)
                        text = pred.text
                    except ValueError:  # QAInputError: empty question etc., as skip_invalid does
                        text = ""
                    n_pred += 1
                    f1_sums[model].append(score_answer(text, v.answer_texts, v.lang)[1])
    means = {m: 100.0 * math.fsum(v) / len(v) for m, v in f1_sums.items() if v}
    return time.perf_counter() - t0, n_pred, means


def sweep_mean_f1(db: Path, name: str) -> dict[str, float]:
    with Store(db) as store:
        sid = store.sweep_id(name)
        return {r[0]: 100.0 * r[1] for r in store.conn.execute(
            "SELECT model, AVG(f1) FROM results WHERE sweep_id = ? AND status = 'ok' GROUP BY model", (sid,))}


@cli.command("benchmarks/sweep.py")
def main(argv: list[str] | None = None) -> dict:
    ap = cli.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_input("--dataset", paths=cli.dataset_files(), default="xquad/xquad.en")
    ap.add_argument("--models", default="minilm-squad,minilm-squad-noise")
    ap.add_argument("--perturbations", default=DEFAULT_PERTURBATIONS)
    ap.add_argument("--sample", type=cli.Count(MAX_QUESTIONS), default=None,
                    help="a seeded sample of N questions (default: all)")
    ap.add_argument("--repeats", type=cli.Count(MAX_REPEATS), default=1)
    ap.add_argument("--seed", type=cli.seed, default=0)
    ap.add_argument("--chunk-size", type=cli.Count(MAX_CHUNK), default=256)
    ap.add_argument("--batch-size", type=cli.Count(MAX_BATCH_SIZE), default=None)
    ap.add_argument("--threads", type=cli.Count(MAX_THREADS), default=None)
    ap.add_argument("--engine-backend", default="default",
                    help="default (each model's, from its card), torch, torch-bf16, onnx or onnx-int8")
    ap.add_argument("--skip-naive", action="store_true", help="leave out the naive loop")
    ap.add_argument("--compare-cold", default=None, metavar="BACKEND:N,...",
                    help="time cold sweeps of these setups side by side (engine backend: worker processes) and stop")
    ap.add_argument("--rounds", type=cli.Count(MAX_ROUNDS), default=2, help="with --compare-cold: rounds")
    ap.add_output("--json", type=Path, help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    if args.compare_cold:
        return compare_cold(args)

    import torch

    from core.qa.engine import EngineSettings
    from core.qa.registry import load_engine

    model_names = [m.strip() for m in args.models.split(",") if m.strip()]
    engines = {}
    for name in model_names:
        engine = load_engine(name, EngineSettings(backend=args.engine_backend))
        if args.batch_size:
            engine.settings.batch_size = args.batch_size
        if args.threads:
            engine.settings.threads = args.threads
        engines[name] = engine
    specs = parse_specs(args.perturbations)
    dataset = load_dataset(args.dataset)
    config = SweepConfig(args.dataset, specs, model_names, repeats=args.repeats, seed=args.seed,
                         sample=args.sample, name="bench-cold")
    device = str(next(iter(engines.values())).device)
    results: dict = {"dataset": args.dataset, "sample": args.sample, "models": model_names,
                     "perturbations": [str(s) for s in specs], "repeats": args.repeats, "device": device,
                     "torch_threads": args.threads or torch.get_num_threads(),
                     "backends": {m: e.backend_name for m, e in engines.items()},
                     "machine": platform.processor() or platform.machine()}

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.sqlite"
        # Fingerprints (weight hashes) are computed once per engine; do it before timing.
        from core.sweeps.keys import engine_fingerprint
        for e in engines.values():
            engine_fingerprint(e)

        # Load the NLP backends (spaCy...) and touch each model once, outside the timings; each
        # timed mode then starts with an empty tagging cache, so none profits from another's.
        from core.perturb import nlp, registry

        spec_objects = [resolve_spec(s, args.repeats, registry.get, dataset) for s in specs]
        first = next(ex for ex in dataset.examples if ex.answers)
        for spec in spec_objects:
            spec.make(first, spec.rng(example_hash(first), args.seed, 0))
        for e in engines.values():
            e.answer(first.question, first.context, n_best=1)

        nlp.analyse.cache_clear()
        t0 = time.perf_counter()
        cold = run_sweep(config, engines, db, dataset=dataset, chunk_size=args.chunk_size)
        cold_s = time.perf_counter() - t0
        config.name = "bench-warm"
        t0 = time.perf_counter()
        warm = run_sweep(config, engines, db, dataset=dataset, chunk_size=args.chunk_size)
        warm_s = time.perf_counter() - t0
        config.name = "bench-cold"
        t0 = time.perf_counter()
        resumed = run_sweep(config, engines, db, dataset=dataset, chunk_size=args.chunk_size)
        resume_s = time.perf_counter() - t0
        sweep_f1 = sweep_mean_f1(db, "bench-cold")
        results["db_mb"] = round(db.stat().st_size / 1e6 + sum(
            p.stat().st_size for p in Path(tmp).glob("bench.sqlite-*")) / 1e6, 2)

    results.update({
        "rows": cold.total_units,
        "cold": {"wall_s": round(cold_s, 2), "predictions": cold.predictions_computed,
                 "from_cache": cold.predictions_cached, "model_calls": cold.model_calls,
                 "predictions_per_s": round(cold.predictions_computed / cold_s, 1)},
        "warm": {"wall_s": round(warm_s, 2), "predictions": warm.predictions_computed,
                 "from_cache": warm.predictions_cached, "model_calls": warm.model_calls,
                 "rows_per_s": round(warm.total_units / warm_s, 1)},
        "resume_finished": {"wall_s": round(resume_s, 3), "model_calls": resumed.model_calls},
    })
    if warm.model_calls:
        print(f"WARNING: the warm run made {warm.model_calls} model calls (expected 0)", file=sys.stderr)

    if not args.skip_naive:
        full = dataset
        scorable = [ex for ex in full.examples if ex.answers and not ex.is_impossible]
        examples = sample_examples(scorable, args.sample, args.seed)
        nlp.analyse.cache_clear()
        naive_s, naive_n, naive_f1 = naive_loop(full, examples, spec_objects, engines, args.seed)
        results["naive"] = {"wall_s": round(naive_s, 2), "predictions": naive_n,
                            "predictions_per_s": round(naive_n / naive_s, 1),
                            "speedup_cold_vs_naive": round(naive_s / cold_s, 2),
                            "mean_f1_sweep": {m: round(v, 4) for m, v in sweep_f1.items()},
                            "mean_f1_naive": {m: round(v, 4) for m, v in naive_f1.items()}}

    print(f"{args.dataset}, sample={args.sample or 'all'}, {len(specs)} perturbations x {args.repeats} "
          f"repeat(s), models {', '.join(model_names)}, device {device}, {results['torch_threads']} threads")
    print(f"result rows: {results['rows']}")
    c, w = results["cold"], results["warm"]
    print(f"cold   {c['wall_s']:8.2f} s   {c['predictions']:6d} predictions ({c['from_cache']} shared) "
          f"in {c['model_calls']} batched calls   {c['predictions_per_s']:7.1f} pred/s")
    print(f"warm   {w['wall_s']:8.2f} s   {w['predictions']:6d} predictions, {w['model_calls']} model calls   "
          f"{w['rows_per_s']:7.1f} rows/s")
    print(f"resume {results['resume_finished']['wall_s']:8.3f} s   (finished sweep: nothing to do)")
    if "naive" in results:
        n = results["naive"]
        print(f"naive  {n['wall_s']:8.2f} s   {n['predictions']:6d} predictions, one at a time   "
              f"{n['predictions_per_s']:7.1f} pred/s   (cold sweep is {n['speedup_cold_vs_naive']}x faster)")
        print(f"mean F1 sweep {n['mean_f1_sweep']}  naive {n['mean_f1_naive']}")
    print(f"database: {results['db_mb']} MB")
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(results, indent=2))
    return results


def cold_setups(text: str) -> list[tuple[str, int]]:
    """``torch:1,default:2`` -> [("torch", 1), ("default", 2)]; one line and exit 2 when malformed."""
    from core.qa.backends.selection import check_backend

    setups = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        backend, _, n = part.partition(":")
        try:
            check_backend(backend)
            processes = int(n or "1")
        except ValueError as e:
            raise SystemExit(f"--compare-cold: {part!r} is not BACKEND:PROCESSES ({e})") from None
        if processes < 1:
            raise SystemExit(f"--compare-cold: {part!r}: processes must be at least 1")
        setups.append((backend, processes))
    if not setups:
        raise SystemExit("--compare-cold names no setup")
    return setups


def compare_cold(args) -> dict:
    import os

    from core.perturb import nlp, registry
    from core.qa.engine import EngineSettings
    from core.qa.registry import load_engine
    from core.sweeps.keys import engine_fingerprint
    from core.sweeps.running.lifecycle import launch

    setups = cold_setups(args.compare_cold)
    model_names = [m.strip() for m in args.models.split(",") if m.strip()]
    specs = parse_specs(args.perturbations)
    dataset = load_dataset(args.dataset)
    engines = {}
    for backend in dict.fromkeys(b for b, _ in setups):
        engines[backend] = {m: load_engine(m, EngineSettings(backend=backend, batch_size=args.batch_size,
                                                             threads=args.threads)) for m in model_names}
        for e in engines[backend].values():
            engine_fingerprint(e)   # the weights' hash, once per engine, outside the timings
    spec_objects = [resolve_spec(s, args.repeats, registry.get, dataset) for s in specs]
    first = next(ex for ex in dataset.examples if ex.answers)
    for spec in spec_objects:   # the NLP backends load outside the timings
        spec.make(first, spec.rng(example_hash(first), args.seed, 0))
    for by_model in engines.values():
        for e in by_model.values():
            e.answer(first.question, first.context, n_best=1)
    seconds = {k: [] for k in range(len(setups))}
    runs, f1 = {}, {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for k in [(k + r) % len(setups) for k in range(len(setups))]:
                backend, processes = setups[k]
                db = Path(tmp) / f"cold-{r}-{k}.sqlite"
                config = SweepConfig(args.dataset, specs, model_names, repeats=args.repeats, seed=args.seed,
                                     sample=args.sample, name="bench-cold")
                nlp.analyse.cache_clear()
                t0 = time.perf_counter()
                runs[k] = launch(config, db, engines=engines[backend], dataset=dataset, chunk_size=args.chunk_size,
                                 processes=processes)
                seconds[k].append(time.perf_counter() - t0)
                f1[k] = sweep_mean_f1(db, "bench-cold")
                print(f"round {r + 1}: {backend} x{processes}: {seconds[k][-1]:.1f} s", file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    base = min(seconds[0])
    print(f"cold sweeps: {args.dataset}, sample={args.sample or 'all'}, {len(specs)} perturbations x "
          f"{args.repeats}, models {', '.join(model_names)}, {runs[0].predictions_computed} predictions each; "
          f"fastest of {args.rounds} rounds; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    out = {"load_average": [load_before[0], load_after[0]], "setups": []}
    for k, (backend, processes) in enumerate(setups):
        best = min(seconds[k])
        answered = {m: e.backend_name for m, e in engines[backend].items()}
        print(f"{backend:>10} ({', '.join(sorted(set(answered.values())))}) x{processes} process(es): "
              f"{best:7.1f} s  {runs[k].predictions_computed / best:7.1f} pred/s  {base / best:5.2f}x  "
              f"mean F1 {', '.join(f'{m} {v:.2f}' for m, v in f1[k].items())}  "
              f"(rounds: {', '.join(f'{x:.1f}' for x in seconds[k])})")
        out["setups"].append({"backend": backend, "answered_with": answered, "processes": processes,
                              "seconds": seconds[k], "predictions": runs[k].predictions_computed,
                              "speedup": round(base / best, 3), "mean_f1": f1[k]})
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
