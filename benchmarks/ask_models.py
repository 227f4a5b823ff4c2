"""The Ask page's wait: every selected model answers one question, warm, one after another.

    python benchmarks/ask_models.py --models minilm-squad,minilm-squad-noise,minilm-squad-lora,mpnet-squad-lora --n 20

For each of the first N XQuAD-en questions, every model answers it (``predict([q], [c])``, as the
Ask page does) with each backend setup, setups interleaved per question so a neighbour's load
falls on all alike: ``torch`` for every model, and ``default`` (each model's own backend, from its
card). Prints the median and the 90th percentile of the summed model time per question, the
backend each model answered with, and the load average.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_QUESTIONS

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@cli.command("benchmarks/ask_models.py")
def main(argv: list[str] | None = None) -> int:
    from core.datasets import load_dataset
    from core.qa import registry
    from core.qa.engine import EngineSettings

    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="minilm-squad,minilm-squad-noise,minilm-squad-lora,mpnet-squad-lora")
    ap.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=20)
    ap.add_argument("--setups", default="torch,default", help="backend settings to compare")
    args = ap.parse_args(argv)
    models = args.models.split(",")
    setups = args.setups.split(",")
    engines = {s: {m: registry.load_engine(m, EngineSettings(backend=s)) for m in models} for s in setups}
    ex = load_dataset("xquad/xquad.en").examples[: args.n]
    for s in setups:  # warm: first-call allocations (and ONNX sessions) are not the wait
        for eng in engines[s].values():
            eng.predict([ex[0].question], [ex[0].context])
    totals: dict[str, list[float]] = {s: [] for s in setups}
    load_before = os.getloadavg()
    for k, e in enumerate(ex):
        for s in setups[k % len(setups):] + setups[: k % len(setups)]:
            t0 = time.perf_counter()
            for eng in engines[s].values():
                eng.predict([e.question], [e.context])
            totals[s].append(time.perf_counter() - t0)
    load_after = os.getloadavg()
    print(f"{len(models)} models, {len(ex)} XQuAD-en questions, warm; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after")
    for s in setups:
        t = sorted(totals[s])
        answered = ", ".join(f"{m} {eng.backend_name}" for m, eng in engines[s].items())
        print(f"{s:8s} median {1000 * statistics.median(t):7.0f} ms  p90 {1000 * t[int(0.9 * (len(t) - 1))]:7.0f} ms"
              f"  ({answered})")
    return 0


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
