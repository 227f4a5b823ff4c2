"""Does a backend give the same answers when a request is split, as the sweep's worker processes
(core.sweeps.running.processes), another chunk size or a resume split it?

    python benchmarks/batch_invariance.py [--model minilm-squad-v2] [--n 96] [--backends torch,onnx-int8]

Answers the first ``--n`` XQuAD-en questions in one call, then in two halves and in three thirds,
with each backend, and prints how many best spans are the same and the largest difference of the
best span's score. A backend whose windows meet other windows in a batch (padding to the batch's
longest, kernels chosen by shape) can move; one that runs each window alone cannot.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_QUESTIONS

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@cli.command("benchmarks/batch_invariance.py")
def main(argv: list[str] | None = None) -> int:
    import torch

    from core.datasets import load_dataset
    from core.qa import registry
    from core.qa.backends.selection import BACKENDS, backend_unavailable, check_backend
    from core.qa.registry import EngineSettings

    ap = cli.ArgumentParser(prog="benchmarks/batch_invariance.py", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad-v2")
    ap.add_input("--dataset", paths=cli.dataset_files(), default="xquad/xquad.en")
    ap.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=96, help="questions")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated (default: every backend)")
    args = ap.parse_args(argv)
    try:
        backends = [check_backend(b) for b in args.backends.split(",")]
    except ValueError as e:   # every name checked before a model loads
        ap.error(str(e))
    examples = load_dataset(args.dataset).examples[: args.n]
    q, c = [e.question for e in examples], [e.context for e in examples]
    n = len(q)
    for backend in backends:
        why = backend_unavailable(backend, torch.device("cpu"))
        if why:
            print(f"{backend:14s} skipped: {why}")
            continue
        engine = registry.load_engine(args.model, EngineSettings(backend=backend))
        whole = engine.predict(q, c)
        for name, parts in (("halves", 2), ("thirds", 3)):
            cuts = [n * k // parts for k in range(parts + 1)]
            split = [p for a, b in zip(cuts, cuts[1:]) for p in engine.predict(q[a:b], c[a:b])]
            same = sum(x.text == y.text for x, y in zip(whole, split))
            moved = max((abs(x.best.score - y.best.score) for x, y in zip(whole, split) if x.best and y.best),
                        default=0.0)
            print(f"{args.model} {backend:14s} {name}: same spans {same}/{n}, largest score difference {moved:.2e}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
