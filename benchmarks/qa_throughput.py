"""Questions/second of the batched QA engine against a one-at-a-time loop, same model and data.

    python benchmarks/qa_throughput.py [--model minilm-squad] [--dataset xquad/xquad.en] [--n 400]
    python benchmarks/qa_throughput.py --batch-sizes 2,4,8,32 --n 300    # which batch size is fastest here
    python benchmarks/qa_throughput.py --compare-backends --n 160 --json out.json   # every backend
    python benchmarks/qa_throughput.py --compare-backends --backends openvino,onnx-int8   # these and torch

Both runs answer the same XQuAD-en questions with the same engine settings; the batched run
sorts windows by length, pads each batch dynamically and runs under torch.inference_mode; the
loop calls the engine once per question. Prints both figures, the speed-up, and checks that both
give the same answers.

``--compare-backends`` times every backend that runs here (core.qa.backends) on the same
questions, one model load shared by all, interleaved per chunk of questions (every backend
answers each chunk, in rotated order) so that a neighbour's load on the shared cores falls on
every backend alike; prints q/s, CPU ms, the speed-up over torch, the F1 against the gold answers
the achieved GFLOP/s and its share of the rate benchmarks/peak.py measured on this machine for the
backend's precision (core.qa.measured_peak; run that first) and of the computed peak
(core.qa.roofline: FLOPs from the model's shapes, each window at its own length; peak from the
detected ISA, cores and clock; also per CPU-second against one core's peak, the figure a shared
machine distorts least) and the load average, with ``--json`` writes
``{"default": NAME, "backends": {NAME: {"questions_per_second", "f1", "ms_per_question", ...}}}``.
The default is the fastest backend whose F1 is within 0.5 of torch fp32's (issue 27's rule);
``--card`` records it all in the model card, where ``backend="default"`` reads it.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_BATCH_SIZE, MAX_CHUNK, MAX_QUESTIONS, MAX_THREADS
from core.qa.engine import engine_settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@cli.command("benchmarks/qa_throughput.py")
def main(argv: list[str] | None = None) -> int:
    import torch

    from core.datasets import load_dataset
    from core.qa import registry

    ap = cli.ArgumentParser(prog="benchmarks/qa_throughput.py", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad")
    ap.add_input("--dataset", paths=cli.dataset_files(), default="xquad/xquad.en")
    ap.add_argument("--n", type=cli.Count(MAX_QUESTIONS, low=0), default=400, help="questions (0 = all)")
    ap.add_argument("--batch-size", type=cli.Count(MAX_BATCH_SIZE), default=None,
                    help="default: the engine's (8 on CPU, 256 on a GPU)")
    ap.add_argument("--batch-sizes", type=cli.CountList(MAX_BATCH_SIZE), default=None,
                    help="comma-separated: time the batched engine at each of these batch sizes and stop")
    ap.add_argument("--threads", type=cli.Count(MAX_THREADS, low=0), default=0, help="torch threads (0 = the policy)")
    ap.add_argument("--backend", default="default",
                    help="default (the model card's), torch, torch-bf16, onnx, onnx-int8, openvino, openvino-int8 "
                         "or openvino-int8-full")
    ap.add_argument("--compare-backends", action="store_true",
                    help="time every available backend on the same questions and stop")
    ap.add_argument("--backends", default=None,
                    help="with --compare-backends: comma-separated backends to time (default: all; torch, "
                         "the reference, is always timed)")
    ap.add_argument("--chunk", type=cli.Count(MAX_CHUNK), default=16,
                    help="with --compare-backends: questions per interleaved chunk (every backend answers each)")
    ap.add_output("--json", help="with --compare-backends: write the figures to this JSON file")
    ap.add_argument("--card", action="store_true",
                    help="with --compare-backends: record the figures and the chosen default in the model card")
    args = ap.parse_args(argv)
    check_inputs(args)
    if args.compare_backends:
        return compare_backends(args)

    ds = load_dataset(args.dataset)
    ex = ds.examples[: args.n] if args.n else ds.examples
    qs, cs = [e.question for e in ex], [e.context for e in ex]
    eng = registry.load_engine(args.model, engine_settings(batch_size=args.batch_size,
                                                               threads=args.threads or None, backend=args.backend))
    eng.predict(qs[:8], cs[:8])  # warm-up: first-call allocations are not the engine's speed

    if args.batch_sizes:
        print(f"model {args.model} on {args.dataset}: {len(ex)} questions, device {eng.device}, "
              f"torch threads {args.threads or torch.get_num_threads()}")
        for size in args.batch_sizes:
            eng.settings.batch_size = size
            t0 = time.perf_counter()
            eng.predict(qs, cs, n_best=1)
            dt = time.perf_counter() - t0
            print(f"batch size {size:4d}: {len(ex) / dt:8.1f} questions/s  ({dt:.1f} s)")
        return 0

    t0 = time.perf_counter()
    batched = eng.predict(qs, cs, n_best=1)
    t_batched = time.perf_counter() - t0

    t0 = time.perf_counter()
    single = [eng.predict([q], [c], n_best=1)[0] for q, c in zip(qs, cs)]
    t_single = time.perf_counter() - t0

    same = sum(b.text == s.text for b, s in zip(batched, single))
    print(f"model {args.model} on {args.dataset}: {len(ex)} questions, device {eng.device}, "
          f"torch threads {args.threads or torch.get_num_threads()}, batch size {eng.settings.batch_size}")
    print(f"batched engine   : {len(ex) / t_batched:8.1f} questions/s  ({t_batched:.1f} s)")
    print(f"one-at-a-time    : {len(ex) / t_single:8.1f} questions/s  ({t_single:.1f} s)")
    print(f"speed-up         : {t_single / t_batched:8.2f}x")
    print(f"identical answers: {same}/{len(ex)}")
    return 0


def check_inputs(args) -> None:
    """Every flag checked before a model loads (core.cli: one line, exit 2): the engine settings,
    the model name, the data set (and that it has questions), the --json path."""
    from core.datasets import load_dataset
    from core.qa import registry

    engine_settings(batch_size=args.batch_size, threads=args.threads or None, backend=args.backend)
    registry.get_entry(args.model)
    args.backends = backend_list(args.backends)
    if not load_dataset(args.dataset).examples:
        raise cli.CLIError(f"--dataset {args.dataset}: no questions")


def backend_list(text: str | None) -> tuple[str, ...]:
    """The backends --backends names, torch first (the reference every other is compared with);
    every backend when ``text`` is None; CLIError naming the choices for an unknown one.

    >>> backend_list("openvino,onnx-int8")
    ('torch', 'openvino', 'onnx-int8')
    >>> backend_list("openvino,tensorrt")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    core.cli.CLIError: --backends: 'tensorrt' is not one of torch, torch-bf16, onnx, onnx-int8, openvino,
    openvino-int8, openvino-int8-full
    """
    from core.qa.backends.selection import BACKENDS

    if text is None:
        return BACKENDS
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in BACKENDS:
            raise cli.CLIError(f"--backends: {n!r} is not one of {', '.join(BACKENDS)}")
    return ("torch", *dict.fromkeys(n for n in names if n != "torch"))


def compare_backends(args) -> int:
    import torch

    from core.compat import FINGERPRINT_TAGS
    from core.datasets import load_dataset
    from core.metrics import corpus_scorer
    from core.qa import measured_peak, registry
    from core.qa.backends.selection import F1_TOLERANCE, choose_default
    from core.qa.backends.torch_eager import bf16_unavailable
    from core.qa.engine import EngineSettings, QAEngine
    from core.qa.roofline import BACKEND_PRECISION, detect_peak

    ds = load_dataset(args.dataset)
    ex = ds.examples[: args.n] if args.n else ds.examples
    entry = registry.get_entry(args.model)
    model, tok = registry.load_model_and_tokenizer(entry)
    engines, skipped = {}, {}
    for name in args.backends:
        # one model object for all: the ONNX export (once per weights, into the cache) happens here
        eng = QAEngine(model, tok, EngineSettings(batch_size=args.batch_size, threads=args.threads or None,
                                                  backend=name))
        if eng.backend_name != name:
            skipped[name] = eng.backend_message
            print(f"{name}: not available here: {eng.backend_message}", file=sys.stderr)
            continue
        eng.predict([e.question for e in ex[:8]], [e.context for e in ex[:8]])  # warm-up
        engines[name] = eng
    names = list(engines)
    flops = answered_flops(next(iter(engines.values())), ex)
    peak = detect_peak()
    measured = measured_peak.load()   # benchmarks/peak.py on this machine, if it was run
    wall = {name: 0.0 for name in names}
    cpu = {name: 0.0 for name in names}
    answers = {name: [] for name in names}
    load_before = os.getloadavg()
    # Interleaved per chunk of questions, the order rotated each chunk: on a machine shared with
    # other work, a neighbour's burst falls on every backend alike (rounds of whole passes each
    # caught a different burst: one round's ratio could differ 5x from the next).
    chunks = list(range(0, len(ex), args.chunk))
    for k, b in enumerate(chunks):
        part = ex[b : b + args.chunk]
        qs, cs = [e.question for e in part], [e.context for e in part]
        for name in names[k % len(names):] + names[: k % len(names)]:
            t0, c0 = time.perf_counter(), time.process_time()
            answers[name] += engines[name].predict(qs, cs, n_best=1)
            wall[name] += time.perf_counter() - t0
            cpu[name] += time.process_time() - c0
        if (k + 1) % 10 == 0 or k + 1 == len(chunks):
            print(f"{min(b + args.chunk, len(ex))}/{len(ex)} questions: "
                  + ", ".join(f"{n} {len(answers[n]) / wall[n]:.1f} q/s" for n in names), file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    refs = {e.id: e.answer_texts for e in ex}
    # the scorer core.models.evaluate uses: Chinese by characters (SQuAD's splits on spaces, and
    # Chinese has none, so a whole answer would count as one word)
    scorer_name, scores_of = corpus_scorer(ds.lang)
    spans = {name: [(p.best.start, p.best.end) if p.best else None for p in preds] for name, preds in answers.items()}
    result = {}
    for name in names:
        scores = scores_of({e.id: p.text for e, p in zip(ex, answers[name])}, refs)
        result[name] = {
            "questions_per_second": round(len(ex) / wall[name], 2),
            "ms_per_question": round(1000 * wall[name] / len(ex), 2),
            "cpu_ms_per_question": round(1000 * cpu[name] / len(ex), 2),
            "speedup_over_torch": round(wall["torch"] / wall[name], 2) if "torch" in wall else None,
            "f1": round(scores["f1"], 2),
            "exact_match": round(scores["exact_match"], 2),
            "identical_spans_to_torch": round(sum(a == b for a, b in zip(spans[name], spans["torch"])) / len(ex), 4),
            "recipe": FINGERPRINT_TAGS[name],
            "gflops_per_second": round(flops / wall[name] / 1e9, 1),
            "precision": BACKEND_PRECISION[name],
            "share_of_peak": round(flops / wall[name] / 1e9 / peak.gflops(BACKEND_PRECISION[name]), 4),
            # per CPU-second against one core's peak: what the cores the backend got did, which on
            # a machine shared with other work says more than wall time against every core
            "share_of_core_peak_per_cpu_second": round(
                flops / cpu[name] / 1e9 / (peak.gflops(BACKEND_PRECISION[name]) / peak.cores), 4),
            # against the rate benchmarks/peak.py reached on this machine (None when not measured)
            "share_of_measured_peak": measured_peak.share(flops / wall[name] / 1e9, BACKEND_PRECISION[name], measured),
        }
    import platform
    from datetime import datetime, timezone

    out = {
        "default": choose_default(result),
        "rule": f"the fastest backend whose F1 is within {F1_TOLERANCE} of torch fp32's",
        "backends": result,
        "unavailable": skipped,
        "model": args.model,
        "dataset": args.dataset,
        "scorer": scorer_name,
        "n": len(ex),
        "method": f"benchmarks/qa_throughput.py --compare-backends: one model load, chunks of {args.chunk} "
                  "questions, every backend on each chunk in rotated order; wall and process CPU time summed",
        "batch_size": next(iter(engines.values())).settings.batch_size,
        "threads": args.threads or "policy (core.qa.threads)",
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
        "hardware": f"{platform.machine()}, {os.cpu_count()} cores"
                    + ("" if bf16_unavailable(torch.device("cpu")) else ", native bf16 (AMX or AVX512-BF16)"),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "roofline": {"gflop_answered": round(flops / 1e9, 1), "cpu": peak.describe(),
                     "peak_gflops": {p: round(peak.gflops(p)) for p in ("fp32", "bf16", "int8")},
                     "counted": "matrix-product FLOPs per window at its own length (core.qa.roofline)",
                     "measured_peak_gops": ({p: b["gops"] for p, b in measured["attainable_gops"].items()}
                                            if measured else None),
                     "measured_peak_date": measured.get("date") if measured else None},
    }
    print(f"model {args.model} on {args.dataset}: {len(ex)} questions, interleaved per {args.chunk}; "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"{flops / 1e9:.1f} GFLOP answered; {peak.describe()}")
    for name, b in result.items():
        print(f"{name:13s} {b['questions_per_second']:7.1f} q/s  {b['ms_per_question']:7.1f} ms/q  "
              f"(cpu {b['cpu_ms_per_question']:6.1f})  x{b['speedup_over_torch']:.2f}  F1 {b['f1']:6.2f}  "
              f"identical spans {b['identical_spans_to_torch']:.1%}  {b['gflops_per_second']:6.1f} GFLOP/s "
              f"= {b['share_of_peak']:.1%} of {b['precision']} peak "
              f"({b['share_of_core_peak_per_cpu_second']:.1%} per CPU-second)"
              + (f", {b['share_of_measured_peak']:.1%} of the measured {b['precision']} peak"
                 if b["share_of_measured_peak"] is not None else ""))
    print(f"default (fastest within {F1_TOLERANCE} F1 of torch): {out['default']}")
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(out, indent=2) + "\n")
    if args.card:
        path = record_in_card(entry, out)
        print(f"recorded in {path}")
    return 0


def answered_flops(engine, examples) -> int:
    """Matrix-product FLOPs of every window the engine reads for ``examples``, each at its own
    length (core.qa.roofline.window_flops), in the engine's window shapes."""
    from core.qa.features import build_windows
    from core.qa.roofline import window_flops

    total = 0
    for long in (False, True):
        group = [e for e in examples if engine.is_long(e.context) == long]
        if group:
            max_length, stride = engine._window_shape(long)
            windows = build_windows(engine.tokenizer, [e.question for e in group], [e.context for e in group],
                                    max_length=max_length, stride=stride)
            total += sum(window_flops(engine.model.config, len(w.input_ids)) for w in windows)
    return total


def record_in_card(entry, out: dict) -> Path:
    """The comparison into the model's card (``backends``): what ``backend="default"`` then
    means for this model (core.qa.registry.ModelEntry.default_backend)."""
    from core.models.cards import write_backends

    folder = entry.local_dir()
    if folder is None or not folder.is_dir():
        raise SystemExit(f"{entry.name} has no local folder to hold a model card")
    return write_backends(folder, {k: v for k, v in out.items() if k != "unavailable"})


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
