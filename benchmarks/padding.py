"""Padded tokens, and the time they cost, for three ways of batching the same windows.

    python benchmarks/padding.py [--model minilm-squad-v2] [--dataset xquad/xquad.en] [--n 300] [--json out.json]

Counts (core.qa.padding), over every question of the data set, the tokens a forward pass computes
when the engine's windows are batched
  * ``max_length``: each window padded to the window size (the naive way);
  * ``per_batch``: each batch padded to its longest window, windows in input order;
  * ``sorted``: windows sorted by length first, then padded per batch (what core.qa.engine does);
as real and padding tokens and padding's share of all. Then times the forward passes of each
(``--n`` questions, the engine's backend, batch size and threads) in one run: ``--rounds``
rounds, each running the three in rotated order, so that a neighbour's load on the shared cores
falls on every one alike; the fastest round of each is reported, with the load average.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_QUESTIONS, MAX_ROUNDS, MAX_THREADS
from core.qa.engine import engine_settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def forward_seconds(engine, windows, strategy: str, max_length: int) -> float:
    """Seconds the engine's forward pass takes over ``windows`` batched by ``strategy``."""
    from core.qa.padding import batches
    from core.qa.threads import Slot

    size = engine.settings.batch_size
    lengths = [len(w.input_ids) for w in windows]
    padding = {"padding": "max_length", "max_length": max_length} if strategy == "max_length" else {"padding": True}
    with Slot(engine.settings.threads) as slot:
        t0 = time.perf_counter()
        for batch in batches(lengths, size, strategy):
            features = [{"input_ids": windows[k].input_ids, **windows[k].extra} for k in batch]
            enc = engine.tokenizer.pad(features, return_tensors="np", **padding)
            engine._forward_impl(dict(enc), slot.threads())
        return time.perf_counter() - t0


@cli.command("benchmarks/padding.py")
def main(argv: list[str] | None = None) -> int:
    import torch

    from core.datasets import load_dataset
    from core.qa import registry
    from core.qa.features import build_windows
    from core.qa.padding import STRATEGIES, count_padding

    ap = cli.ArgumentParser(prog="benchmarks/padding.py", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad-v2")
    ap.add_input("--dataset", paths=cli.dataset_files(), default="xquad/xquad.en")
    ap.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=300, help="questions timed (the counts use all)")
    ap.add_argument("--rounds", type=cli.Count(MAX_ROUNDS), default=2)
    ap.add_argument("--backend", default="default")
    ap.add_argument("--threads", type=cli.Count(MAX_THREADS, low=0), default=0, help="threads (0 = the policy)")
    ap.add_output("--json", help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    registry.get_entry(args.model)   # an unknown model: one line, before anything loads
    ds = load_dataset(args.dataset)
    if not ds.examples:
        raise SystemExit(f"{args.dataset} has no questions")
    engine = registry.load_engine(args.model, engine_settings(threads=args.threads or None,
                                                                  backend=args.backend))
    max_length, stride = engine._window_shape()
    size = engine.settings.batch_size
    if any(engine.is_long(e.context) for e in ds.examples):
        print("note: some contexts are long; all windows are counted in the ordinary shape", file=sys.stderr)

    def windows_of(examples):
        return build_windows(engine.tokenizer, [e.question for e in examples], [e.context for e in examples],
                             max_length=max_length, stride=stride)

    every = windows_of(ds.examples)
    lengths = [len(w.input_ids) for w in every]
    counts = {s: count_padding(lengths, size, s, max_length) for s in STRATEGIES}
    print(f"{args.model} ({engine.backend_name}) on {args.dataset}: {len(ds.examples)} questions, "
          f"{len(every)} windows of at most {max_length} tokens, batches of {size}")
    print(f"{'batching':<11} {'real':>9} {'padding':>9} {'share':>7}")
    for s, c in counts.items():
        print(f"{s:<11} {c.real:>9,} {c.padded:>9,} {100 * c.share:>6.1f}%")

    timed = windows_of(ds.examples[: args.n])
    engine.predict([e.question for e in ds.examples[:8]], [e.context for e in ds.examples[:8]])  # warm-up
    load_before = os.getloadavg()
    rounds: dict[str, list[float]] = {s: [] for s in STRATEGIES}
    with torch.inference_mode():
        for r in range(args.rounds):
            for s in STRATEGIES[r % 3:] + STRATEGIES[: r % 3]:
                rounds[s].append(forward_seconds(engine, timed, s, max_length))
    load_after = os.getloadavg()
    n = min(args.n, len(ds.examples))
    print(f"forward passes over {n} questions ({len(timed)} windows), fastest of {args.rounds} rounds; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    best = {s: min(v) for s, v in rounds.items()}
    timed_lengths = [len(w.input_ids) for w in timed]
    timed_counts = {s: count_padding(timed_lengths, size, s, max_length) for s in STRATEGIES}
    for s in STRATEGIES:
        print(f"{s:<11} {best[s]:7.2f} s  {1000 * best[s] / n:6.1f} ms/question  "
              f"{100 * timed_counts[s].share:5.1f}% padding  "
              f"{best['max_length'] / best[s]:5.2f}x max_length  (rounds: {', '.join(f'{x:.2f}' for x in rounds[s])})")
    if args.json:
        cli.write_text_atomic(args.json, json.dumps({
            "model": args.model, "backend": engine.backend_name, "dataset": args.dataset, "batch_size": size,
            "max_length": max_length, "windows": len(every), "counts": {s: c.as_dict() for s, c in counts.items()},
            "timed_questions": n, "timed_counts": {s: c.as_dict() for s, c in timed_counts.items()},
            "seconds": rounds, "load_average": [load_before[0], load_after[0]]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
