"""Static QDQ int8 quantised before fusion (core.qa.backends.int8_static) against onnx-int8 and torch fp32.

    python benchmarks/static_int8.py [--model minilm-squad-v2] [--n 200] [--calib-pairs 128] [--json out.json]

Exports the model's unfused ONNX graph into a temporary folder, quantises it statically (QDQ,
symmetric, weights per channel) with activation scales calibrated on ``--calib-pairs`` SQuAD
*training* questions' windows (benchmarks/int8_sensitivity.py's sample, as
benchmarks/backend_fidelity.py uses; never XQuAD), opens it in ONNX Runtime with every
optimisation (the QDQ pairs fused into integer kernels there), and answers ``--n`` XQuAD-en
questions with it, with the onnx-int8 backend (per-token dynamic int8) and with torch fp32:
interleaved per chunk of questions in rotated order, one model load. Prints q/s, the speed-up over
torch, F1, identical spans and the load average. The rule (issue 27): a backend is kept only if
faster than the default within 0.5 F1 of torch fp32.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from core import cli
from core.budgets import MAX_CHUNK, MAX_QUESTIONS

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@cli.command("benchmarks/static_int8.py")
def main(argv: list[str] | None = None) -> int:
    from int8_sensitivity import training_batches

    from core.datasets import load_dataset
    from core.metrics import corpus_scorer
    from core.qa import registry
    from core.qa.backends.int8_static import quantize_static_qdq
    from core.qa.backends.onnx_runtime import OnnxForward, _export, model_input_names
    from core.qa.engine import EngineSettings, QAEngine

    ap = cli.ArgumentParser(prog="benchmarks/static_int8.py", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad-v2")
    ap.add_input("--dataset", paths=cli.dataset_files(), default="xquad/xquad.en")
    ap.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=200)
    ap.add_argument("--calib-pairs", type=cli.Count(MAX_QUESTIONS), default=128)
    ap.add_argument("--seed", type=cli.seed, default=0)
    ap.add_argument("--fp32-attention", action="store_true",
                    help="keep the MatMuls of two activations (attention) in fp32; only the weights' MatMuls int8")
    ap.add_argument("--chunk", type=cli.Count(MAX_CHUNK), default=20)
    ap.add_output("--json", help="write the figures to this JSON file")
    ap.reads("train/squad/train-v1.1-first4370")   # no output may be one of them
    args = ap.parse_args(argv)
    entry = registry.get_entry(args.model)
    ex = load_dataset(args.dataset).examples[: args.n]
    model, tok = registry.load_model_and_tokenizer(entry)
    names = model_input_names(tok, model)
    engines = {b: QAEngine(model, tok, EngineSettings(backend=b)) for b in ("torch", "onnx-int8")}
    with tempfile.TemporaryDirectory() as tmp:
        raw, qdq = Path(tmp) / "raw.onnx", Path(tmp) / "static-int8.onnx"
        t0 = time.perf_counter()
        _export(model, names, raw)
        quantize_static_qdq(raw, qdq, training_batches(tok, names, args.calib_pairs, args.seed, batch=8),
                            attention=not args.fp32_attention)
        print(f"exported and quantised in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        static = QAEngine(model, tok, EngineSettings(backend="torch"))
        # the static graph answers through the engine (its windows, batches and decoding): this
        # engine's forward pass is replaced, kept since its backend setting does not change
        static._forward_impl = OnnxForward(qdq, "onnx-static-int8")
        engines["static-int8"] = static
        for e in engines.values():
            e.predict([x.question for x in ex[:8]], [x.context for x in ex[:8]])   # warm-up
        order = list(engines)
        wall = dict.fromkeys(order, 0.0)
        answers = {n: [] for n in order}
        load_before = os.getloadavg()
        for k, b in enumerate(range(0, len(ex), args.chunk)):
            part = ex[b:b + args.chunk]
            for name in order[k % len(order):] + order[: k % len(order)]:
                t0 = time.perf_counter()
                answers[name] += engines[name].predict([x.question for x in part], [x.context for x in part], n_best=1)
                wall[name] += time.perf_counter() - t0
        load_after = os.getloadavg()
    _, scores_of = corpus_scorer("en")
    refs = {x.id: x.answer_texts for x in ex}
    spans = {n: [(p.best.start, p.best.end) if p.best else None for p in a] for n, a in answers.items()}
    out = {"model": args.model, "n": len(ex), "calibration": f"{args.calib_pairs} SQuAD v1.1 training questions",
           "load_average": [round(load_before[0], 2), round(load_after[0], 2)], "backends": {}}
    print(f"{args.model}, {len(ex)} XQuAD-en questions interleaved per {args.chunk}; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after")
    for name in order:
        f1 = scores_of({x.id: p.text for x, p in zip(ex, answers[name])}, refs)["f1"]
        same = sum(a == b for a, b in zip(spans[name], spans["torch"])) / len(ex)
        b = {"questions_per_second": round(len(ex) / wall[name], 2),
             "speedup_over_torch": round(wall["torch"] / wall[name], 2), "f1": round(f1, 2),
             "identical_spans_to_torch": round(same, 4)}
        out["backends"][name] = b
        print(f"{name:12s} {b['questions_per_second']:7.1f} q/s  x{b['speedup_over_torch']:.2f}  F1 {b['f1']:6.2f}  "
              f"identical spans {same:.1%}")
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
