"""Two askers at once: does the thread policy keep them from oversubscribing the cores?

    python benchmarks/concurrent_askers.py --model minilm-squad --n 48 --backends torch,onnx --rounds 2

Each asker is a separate process (as two app servers, or the app beside a CLI sweep) that loads
the model once and then answers the same first N XQuAD-en questions, starting together at a
barrier. Per backend it times, rounds interleaved (every setup once per round, so a neighbour's
load falls on all of them alike):

* one asker alone at the policy's threads (``threads=None``: the whole budget when alone);
* two askers at once with a fixed 2 threads each (what every engine did before the policy);
* two askers at once with a fixed 1 thread each;
* two askers at once under the policy (core.qa.threads: each sees the other and takes 1 thread).

Prints the questions/s of each asker and their sum, with the load average before and after.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core import cli  # noqa: E402  (the project on the path first)
from core.budgets import MAX_QUESTIONS, MAX_ROUNDS  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def asker(model: str, backend: str, threads: int | None, n: int, barrier, out) -> None:
    from core.datasets import load_dataset
    from core.qa import registry
    from core.qa.engine import EngineSettings

    ex = load_dataset("xquad/xquad.en").examples[:n]
    qs, cs = [e.question for e in ex], [e.context for e in ex]
    eng = registry.load_engine(model, EngineSettings(backend=backend, threads=threads))
    eng.predict(qs[:8], cs[:8])  # warm-up (and the ONNX export, once, before the clock)
    barrier.wait()
    t0 = time.perf_counter()
    eng.predict(qs, cs, n_best=1)
    out.put(len(qs) / (time.perf_counter() - t0))


def run(model: str, backend: str, threads: int | None, askers: int, n: int) -> list[float]:
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(askers), ctx.Queue()
    procs = [ctx.Process(target=asker, args=(model, backend, threads, n, barrier, out)) for _ in range(askers)]
    for p in procs:
        p.start()
    rates = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return rates


@cli.command("benchmarks/concurrent_askers.py")
def main(argv: list[str] | None = None) -> int:
    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad")
    ap.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=48, help="questions per asker")
    ap.add_argument("--backends", default="torch,onnx")
    ap.add_argument("--rounds", type=cli.Count(MAX_ROUNDS), default=2)
    args = ap.parse_args(argv)
    setups = [("alone, policy", 1, None), ("two, 2 threads each", 2, 2), ("two, 1 thread each", 2, 1),
              ("two, policy", 2, None)]
    results: dict[tuple[str, str], list[list[float]]] = {}
    load_before = os.getloadavg()
    for r in range(args.rounds):
        for backend in args.backends.split(","):
            # rotated each round: a load that rises or falls during the run falls on every setup
            for label, askers, threads in setups[r % len(setups):] + setups[: r % len(setups)]:
                rates = run(args.model, backend, threads, askers, args.n)
                results.setdefault((backend, label), []).append(rates)
                print(f"round {r + 1} {backend:9s} {label:22s} " + " + ".join(f"{x:.1f}" for x in rates)
                      + f" = {sum(rates):.1f} q/s", file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    print(f"{args.model}, {args.n} XQuAD-en questions per asker, {args.rounds} interleaved rounds, "
          f"{os.cpu_count()} cores; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    for (backend, label), runs in results.items():
        sums = [sum(x) for x in runs]
        print(f"{backend:9s} {label:22s} total q/s per round: " + ", ".join(f"{s:.1f}" for s in sums)
              + "   (each asker: " + "; ".join(" + ".join(f"{x:.1f}" for x in rates) for rates in runs) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
