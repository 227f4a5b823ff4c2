"""Questions/second of the batched QA engine against a one-at-a-time loop, same model and data.

    python benchmarks/qa_throughput.py [--model minilm-squad] [--dataset xquad/xquad.en] [--n 400]
    python benchmarks/qa_throughput.py --batch-sizes 2,4,8,32 --n 300    # which batch size is fastest here
    python benchmarks/qa_throughput.py --compare-backends --n 160 --json out.json   # torch, onnx, onnx-int8

Both runs answer the same XQuAD-en questions with the same engine settings; the batched run
sorts windows by length, pads each batch dynamically and runs under torch.inference_mode; the
loop calls the engine once per question. Prints both figures, the speed-up, and checks that both
give the same answers.

``--compare-backends`` times every backend that runs here (core.qa.onnx_backend) on the same
questions, one model load shared by all, rounds interleaved (torch, onnx, onnx-int8, torch, ...)
so that a neighbour's load on the shared cores falls on every backend alike; prints the range
over rounds and the F1 against the gold answers, and with ``--json`` writes
``{"default": NAME, "backends": {NAME: {"questions_per_second", "f1", "ms_per_question", ...}}}``.
The default is the fastest backend whose F1 is within 0.5 of torch fp32's (issue 27's rule).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    import torch

    from core.datasets import load_dataset
    from core.qa import registry
    from core.qa.engine import EngineSettings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad")
    ap.add_argument("--dataset", default="xquad/xquad.en")
    ap.add_argument("--n", type=int, default=400, help="questions (0 = all)")
    ap.add_argument("--batch-size", type=int, default=None, help="default: the engine's (8 on CPU, 32 on GPU)")
    ap.add_argument("--batch-sizes", default="",
                    help="comma-separated: time the batched engine at each of these batch sizes and stop")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--backend", default="torch", help="torch, onnx or onnx-int8 (default torch)")
    ap.add_argument("--compare-backends", action="store_true",
                    help="time every available backend on the same questions and stop")
    ap.add_argument("--rounds", type=int, default=3, help="with --compare-backends: interleaved rounds")
    ap.add_argument("--json", help="with --compare-backends: write the figures to this JSON file")
    args = ap.parse_args()
    if args.compare_backends:
        return compare_backends(args)

    ds = load_dataset(args.dataset)
    ex = ds.examples[: args.n] if args.n else ds.examples
    qs, cs = [e.question for e in ex], [e.context for e in ex]
    eng = registry.load_engine(args.model, EngineSettings(batch_size=args.batch_size, threads=args.threads or None,
                                                          backend=args.backend))
    eng.predict(qs[:8], cs[:8])  # warm-up: first-call allocations are not the engine's speed

    if args.batch_sizes:
        print(f"model {args.model} on {args.dataset}: {len(ex)} questions, device {eng.device}, "
              f"torch threads {args.threads or torch.get_num_threads()}")
        for size in (int(x) for x in args.batch_sizes.split(",")):
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


# A backend may join the default only when its F1 is at most this far below torch fp32's.
F1_TOLERANCE = 0.5


def choose_default(backends: dict[str, dict], tolerance: float = F1_TOLERANCE) -> str:
    """The fastest backend whose F1 is within ``tolerance`` of torch's (torch itself qualifies).

    >>> choose_default({"torch": {"f1": 80.0, "questions_per_second": 50},
    ...                 "onnx": {"f1": 80.0, "questions_per_second": 75},
    ...                 "onnx-int8": {"f1": 78.9, "questions_per_second": 150}})
    'onnx'
    """
    floor = backends["torch"]["f1"] - tolerance
    ok = [name for name, b in backends.items() if b["f1"] >= floor]
    return max(ok, key=lambda name: backends[name]["questions_per_second"])


def compare_backends(args) -> int:
    from core.datasets import load_dataset
    from core.metrics import squad_scores
    from core.qa import registry
    from core.qa.engine import EngineSettings, QAEngine
    from core.qa.onnx_backend import BACKENDS

    ds = load_dataset(args.dataset)
    ex = ds.examples[: args.n] if args.n else ds.examples
    qs, cs = [e.question for e in ex], [e.context for e in ex]
    model, tok = registry.load_model_and_tokenizer(registry.get_entry(args.model))
    engines, skipped = {}, {}
    for name in BACKENDS:
        # one model object for all: the ONNX export (once per weights, into the cache) happens here
        eng = QAEngine(model, tok, EngineSettings(batch_size=args.batch_size, threads=args.threads or None,
                                                  backend=name))
        if eng.backend_name != name:
            skipped[name] = eng.backend_message
            print(f"{name}: not available here: {eng.backend_message}", file=sys.stderr)
            continue
        eng.predict(qs[:8], cs[:8])  # warm-up
        engines[name] = eng
    times: dict[str, list[float]] = {name: [] for name in engines}
    answers = {}
    for r in range(args.rounds):
        for name, eng in engines.items():
            t0 = time.perf_counter()
            preds = eng.predict(qs, cs, n_best=1)
            times[name].append(time.perf_counter() - t0)
            answers[name] = preds
        print(f"round {r + 1}/{args.rounds}: " + ", ".join(f"{n} {len(ex) / times[n][-1]:.1f} q/s" for n in engines),
              file=sys.stderr, flush=True)
    refs = {e.id: e.answer_texts for e in ex}
    spans = {name: [(p.best.start, p.best.end) if p.best else None for p in preds] for name, preds in answers.items()}
    result = {}
    for name in engines:
        qps = sorted(len(ex) / t for t in times[name])
        med = statistics.median(qps)
        scores = squad_scores({e.id: p.text for e, p in zip(ex, answers[name])}, refs)
        result[name] = {
            "questions_per_second": round(med, 2),
            "questions_per_second_range": [round(qps[0], 2), round(qps[-1], 2)],
            "ms_per_question": round(1000 / med, 2),
            "f1": round(scores["f1"], 2),
            "exact_match": round(scores["exact_match"], 2),
            "identical_spans_to_torch": round(sum(a == b for a, b in zip(spans[name], spans["torch"])) / len(ex), 4),
        }
    import platform

    out = {
        "default": choose_default(result),
        "backends": result,
        "unavailable": skipped,
        "model": args.model,
        "dataset": args.dataset,
        "n": len(ex),
        "rounds": args.rounds,
        "batch_size": next(iter(engines.values())).settings.batch_size,
        "threads": args.threads or None,
        "hardware": f"{platform.machine()}, {os.cpu_count()} cores",
    }
    print(f"model {args.model} on {args.dataset}: {len(ex)} questions, {args.rounds} interleaved rounds "
          f"(median, range)")
    for name, b in result.items():
        lo, hi = b["questions_per_second_range"]
        print(f"{name:10s} {b['questions_per_second']:7.1f} q/s ({lo:.1f}-{hi:.1f})  {b['ms_per_question']:7.1f} ms/q  "
              f"F1 {b['f1']:6.2f}  identical spans {b['identical_spans_to_torch']:.1%}")
    print(f"default (fastest within {F1_TOLERANCE} F1 of torch): {out['default']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
