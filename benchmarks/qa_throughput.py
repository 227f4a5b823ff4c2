"""Questions/second of the batched QA engine against a one-at-a-time loop, same model and data.

    python benchmarks/qa_throughput.py [--model minilm-squad] [--dataset xquad/xquad.en] [--n 400]
    python benchmarks/qa_throughput.py --batch-sizes 2,4,8,32 --n 300    # which batch size is fastest here

Both runs answer the same XQuAD-en questions with the same engine settings; the batched run
sorts windows by length, pads each batch dynamically and runs under torch.inference_mode; the
loop calls the engine once per question. Prints both figures, the speed-up, and checks that both
give the same answers.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    import torch

    from core.qa import registry
    from core.qa.engine import EngineSettings
    from core.sweep import load_dataset

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad")
    ap.add_argument("--dataset", default="xquad/xquad.en")
    ap.add_argument("--n", type=int, default=400, help="questions (0 = all)")
    ap.add_argument("--batch-size", type=int, default=None, help="default: the engine's (8 on CPU, 32 on GPU)")
    ap.add_argument("--batch-sizes", default="",
                    help="comma-separated: time the batched engine at each of these batch sizes and stop")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()

    ds = load_dataset(args.dataset)
    ex = ds.examples[: args.n] if args.n else ds.examples
    qs, cs = [e.question for e in ex], [e.context for e in ex]
    eng = registry.load_engine(args.model, EngineSettings(batch_size=args.batch_size, threads=args.threads or None))
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


if __name__ == "__main__":
    sys.exit(main())
