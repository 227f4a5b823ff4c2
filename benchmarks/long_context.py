"""What a long context costs the engine, per window shape: seconds per question, windows, EM/F1.

    python benchmarks/long_context.py [--model minilm-squad] [--n 12] [--chars 20000]
        [--configs 384:128:8,512:128:8,512:64:8] [--rounds 2] [--threads 2] [--json out.json]

Long documents are made from SQuAD v1.1 dev (``squad/dev-v1.1.json`` under the data directory):
each article's paragraphs are joined (blank line between) until the text holds at least
``--chars`` characters, and one question of the joined text is drawn per article (seeded), its
answer offsets moved into the joined text. So each question is a real SQuAD question, asked of a
real ~20k-character document in which its paragraph is one of many.

Each configuration ``max_length:stride:batch`` sets the engine's long-context window shape
(EngineSettings.long_max_length / long_stride, used for contexts of at least
``long_context_chars`` characters) and batch size; the same questions are answered in one
batched call per round, rounds interleaved across configurations so a neighbour's load on shared
cores falls on all alike. Printed per configuration: windows per question, wall and CPU seconds
per question (best and range over rounds), EM/F1; and the machine's load average before and after.
"""
from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_QUESTIONS, MAX_ROUNDS, MAX_THREADS
from core.qa.engine import MAX_CONTEXT_CHARS

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def long_documents(squad_path: Path, min_chars: int, n: int, seed: int = 0):
    """Up to ``n`` QAExamples, one per SQuAD dev article, each asked of the article's first
    paragraphs joined to at least ``min_chars`` characters (answer offsets moved)."""
    from core.datasets import load_squad
    from core.types import Answer, QAExample

    ds = load_squad(squad_path, "en")
    by_title: dict[str, list] = {}
    for ex in ds.examples:
        by_title.setdefault(ex.title, []).append(ex)
    rng = random.Random(seed)
    out = []
    for title, exs in by_title.items():
        paragraphs = list(dict.fromkeys(e.context for e in exs))
        joined, starts = "", {}
        for p in paragraphs:
            if len(joined) >= min_chars:
                break
            starts[p] = len(joined) + (2 if joined else 0)
            joined = f"{joined}\n\n{p}" if joined else p
        if len(joined) < min_chars:
            continue
        inside = [e for e in exs if e.context in starts]
        e = rng.choice(inside)
        shift = starts[e.context]
        out.append(QAExample(f"{e.id}-long", e.question, joined,
                             tuple(Answer(a.text, a.answer_start + shift) for a in e.answers), title, "en"))
        if len(out) == n:
            break
    return out


@cli.command("benchmarks/long_context.py")
def main(argv: list[str] | None = None) -> int:
    import torch

    from core import config
    from core.metrics import squad_scores
    from core.qa import registry
    from core.qa.engine import EngineSettings

    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad")
    ap.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=12, help="questions (one per SQuAD dev article)")
    ap.add_argument("--chars", type=cli.Bounded(1, MAX_CONTEXT_CHARS), default=20_000,
                    help="minimum context length in characters")
    ap.add_argument("--configs", default="384:128:8,512:128:8,512:64:8",
                    help="comma-separated max_length:stride:batch window shapes for long contexts")
    ap.add_argument("--rounds", type=cli.Count(MAX_ROUNDS), default=2)
    ap.add_argument("--threads", type=cli.Count(MAX_THREADS), default=2)
    ap.add_argument("--max-answer-tokens", type=cli.Bounded(1, 512), default=30)
    ap.add_output("--json", help="also write the figures to this JSON file")
    ap.reads("squad/dev-v1.1")   # no output may be one of them
    args = ap.parse_args(argv)

    root = config.data_dir()
    if root is None:
        raise SystemExit("no data directory (set QAX_DATA_DIR)")
    examples = long_documents(root / "squad" / "dev-v1.1.json", args.chars, args.n)
    lengths = [len(e.context) for e in examples]
    qs, cs = [e.question for e in examples], [e.context for e in examples]
    torch.set_num_threads(args.threads)
    eng = registry.load_engine(args.model, EngineSettings(threads=args.threads,
                                                          max_answer_tokens=args.max_answer_tokens))
    eng.predict(qs[:1], cs[:1])  # warm-up
    configs = [tuple(int(x) for x in c.split(":")) for c in args.configs.split(",")]
    load_before = os.getloadavg()
    print(f"{args.model}: {len(examples)} questions, contexts {min(lengths):,}-{max(lengths):,} characters, "
          f"{args.threads} threads, load average before {load_before[0]:.2f}", flush=True)
    times: dict[tuple, list[tuple[float, float]]] = {c: [] for c in configs}
    scores, windows = {}, {}
    for _ in range(args.rounds):
        for c in configs:
            eng.settings.long_max_length, eng.settings.long_stride, eng.settings.batch_size = c
            seen = [0]
            t0, p0 = time.perf_counter(), time.process_time()
            preds = eng.predict(qs, cs, n_best=1, progress=lambda done, total: seen.__setitem__(0, total))
            times[c].append((time.perf_counter() - t0, time.process_time() - p0))
            windows[c] = seen[0] / len(examples)
            s = squad_scores({e.id: p.text for e, p in zip(examples, preds)},
                             {e.id: e.answer_texts for e in examples})
            scores[c] = (s["exact_match"], s["f1"])
    load_after = os.getloadavg()
    rows = []
    print(f"{'shape':>14} {'windows/q':>10} {'wall s/q (best, range)':>26} {'CPU s/q':>9} {'EM':>6} {'F1':>6}")
    for c in configs:
        walls = [w / len(examples) for w, _ in times[c]]
        cpus = [p / len(examples) for _, p in times[c]]
        label = f"{c[0]}:{c[1]} b{c[2]}"
        print(f"{label:>14} {windows[c]:>10.1f} {min(walls):>10.2f} ({min(walls):.2f}-{max(walls):.2f}) "
              f"{min(cpus):>13.2f} {scores[c][0]:>6.1f} {scores[c][1]:>6.1f}")
        rows.append({"max_length": c[0], "stride": c[1], "batch": c[2], "windows_per_question": windows[c],
                     "wall_s_per_question": walls, "cpu_s_per_question": cpus,
                     "exact_match": scores[c][0], "f1": scores[c][1]})
    print(f"load average after: {load_after[0]:.2f} (1 min), {load_after[1]:.2f} (5 min)")
    if args.json:
        cli.write_text_atomic(args.json, json.dumps({
            "model": args.model, "n": len(examples), "context_chars": [min(lengths), max(lengths)],
            "threads": args.threads, "load_average": [load_before[0], load_after[0]], "configs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
