"""How far each engine backend's logits lie from torch fp32's, on SQuAD *training* questions.

    python benchmarks/backend_fidelity.py --model minilm-squad --pairs 120
    python benchmarks/backend_fidelity.py --model mpnet-squad-v2 --pairs 60 --json out.json

Every available backend (core.qa.backends.selection.BACKENDS) computes the start and end logits of the
same windows through the engine's own forward pass (``QAEngine._forward``, batches of 8); each is
compared with torch fp32 over the windows' real tokens: the mean squared logit error and how often
the start and end argmax agree. This is the figure a recipe is chosen on (benchmarks/
int8_sensitivity.py for the groups inside int8): the questions come from SQuAD's training set,
never from an evaluation set, so that no recipe is tuned on the XQuAD-en F1 by which issue 27's
rule then picks a model's default (benchmarks/qa_throughput.py --compare-backends).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_QUESTIONS

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def logit_error(ref: list, got: list, lengths: list[int]) -> dict[str, float]:
    """Mean squared error over each window's first ``length`` (real) positions, and the share of
    start and end argmaxes that agree.

    >>> import numpy as np
    >>> a = [(np.array([0.0, 2.0, 9.0]), np.array([1.0, 0.0, 9.0]))]
    >>> b = [(np.array([0.0, 1.0, 5.0]), np.array([1.0, 2.0, 0.0]))]
    >>> logit_error(a, b, [2])  # only the first 2 positions are real: (0 + 1 + 0 + 4) / 4
    {'logit_mse': 1.25, 'argmax_agreement': 0.5}
    """
    sq, tokens, agree = 0.0, 0, 0
    for (rs, re_), (gs, ge), n in zip(ref, got, lengths):
        sq += float(((rs[:n] - gs[:n]) ** 2).sum() + ((re_[:n] - ge[:n]) ** 2).sum())
        tokens += 2 * n
        agree += int(rs[:n].argmax() == gs[:n].argmax()) + int(re_[:n].argmax() == ge[:n].argmax())
    return {"logit_mse": float(f"{sq / tokens:.4g}"), "argmax_agreement": round(agree / (2 * len(lengths)), 4)}


@cli.command("benchmarks/backend_fidelity.py")
def main(argv: list[str] | None = None) -> dict:
    from core.compat import FINGERPRINT_TAGS
    from core.qa import registry
    from core.qa.backends.selection import BACKENDS
    from core.qa.engine import EngineSettings, QAEngine
    from core.qa.features import build_windows

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from int8_sensitivity import training_pairs

    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad")
    ap.add_argument("--pairs", type=cli.Count(MAX_QUESTIONS), default=120,
                    help="SQuAD training questions (their windows are scored)")
    ap.add_argument("--seed", type=cli.seed, default=1)
    ap.add_output("--json", type=Path)
    args = ap.parse_args(argv)

    entry = registry.get_entry(args.model)
    model, tok = registry.load_model_and_tokenizer(entry)
    pairs = training_pairs(args.pairs, args.seed)
    windows = build_windows(tok, [q for q, _ in pairs], [c for _, c in pairs], max_length=384, stride=128)
    batches = [windows[b : b + 8] for b in range(0, len(windows), 8)]
    lengths = [len(w.input_ids) for w in windows]
    per_window = {}
    for name in BACKENDS:
        eng = QAEngine(model, tok, EngineSettings(backend=name, threads=1))
        if eng.backend_name != name:
            print(f"{name}: not available here: {eng.backend_message}", file=sys.stderr)
            continue
        per_window[name] = [(s, e) for b in batches for s, e in zip(*eng._forward(b))]
    result = {"model": args.model, "windows": len(windows), "pairs": args.pairs,
              "source": "SQuAD v1.1 training questions (train/squad)", "backends": {}}
    print(f"{args.model}: {len(windows)} windows of {args.pairs} SQuAD training questions, against torch fp32")
    for name, got in per_window.items():
        e = {**logit_error(per_window["torch"], got, lengths), "recipe": FINGERPRINT_TAGS[name]}
        result["backends"][name] = e
        print(f"{name:11s} logit MSE {e['logit_mse']:<10.4g} start/end argmax agreement {e['argmax_agreement']:.2%}")
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
