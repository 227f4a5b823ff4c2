"""Where the right answer sits in each model's n-best on the capability tests (issue 31).

    python benchmarks/capability_nbest.py --model minilm-squad mpnet-squad-lora [--k 5] [--json out.json]
    python benchmarks/capability_nbest.py --file assets/behaviour/capabilities_en.toml --model minilm-squad

Runs every MFT case of the behaviour file (default assets/behaviour/capabilities_en.toml) with
the engine's n-best (``--k`` spans, the default decoder: at most 30 answer tokens) and prints, per
model and family: the failure rate at rank 1 (what ``python -m core.behaviour`` reports), the share
of cases whose expected answer (SQuAD exact match) is among the top 2, 3 and k spans, and, of the
rank-1 failures, the share whose top span *contains* the expected answer (an over-long span:
"duck and a bike" for "duck") and the share with the expected answer ranked second. If the right
answer is mostly in the n-best but not first, the decoder can find it and the scores (the
model) put it second.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_NBEST

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DEFAULT_FILE = "assets/behaviour/capabilities_en.toml"


def rank_of(expect: str, texts: list[str]) -> int | None:
    """1-based rank of the first span matching ``expect`` (SQuAD exact match), None if none does.

    >>> rank_of("duck", ["duck and a bike", "a duck", "bike"])
    2
    >>> rank_of("cow", ["duck"]) is None
    True
    """
    from core.metrics import score_answer

    for i, t in enumerate(texts, 1):
        if score_answer(t, [expect], "en")[0] == 1.0:
            return i
    return None


def contains(expect: str, text: str) -> bool:
    """Whether the (normalised) span strictly contains the (normalised) expected answer as whole words.

    >>> contains("duck", "duck and a bike"), contains("duck", "duck"), contains("duck", "ducks")
    (True, False, False)
    """
    from core.metrics.squad import normalize_answer

    e, t = normalize_answer(expect).split(), normalize_answer(text).split()
    return len(t) > len(e) and any(t[i:i + len(e)] == e for i in range(len(t) - len(e) + 1))


def summarise(rows: list[dict], k: int) -> dict:
    """Per-family figures (in %) from rows {family, rank, top}."""
    n = len(rows)
    fails = [r for r in rows if r["rank"] != 1]
    out = {"n": n, "fail_at_1": round(100 * len(fails) / n, 1)}
    for j in sorted({2, 3, k}):
        out[f"in_top_{j}"] = round(100 * sum(r["rank"] is not None and r["rank"] <= j for r in rows) / n, 1)
    out["failures_over_long"] = round(100 * sum(r["over_long"] for r in fails) / len(fails), 1) if fails else None
    out["failures_ranked_2"] = round(100 * sum(r["rank"] == 2 for r in fails) / len(fails), 1) if fails else None
    return out


@cli.command("benchmarks/capability_nbest.py")
def main(argv: list[str] | None = None) -> int:
    from core.behaviour.spec import expand, load
    from core.qa import registry

    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_input("--file", default=DEFAULT_FILE)
    ap.add_argument("--model", nargs="+", required=True)
    ap.add_argument("--k", type=cli.Count(MAX_NBEST), default=5, help="n-best size (default 5)")
    ap.add_output("--json", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    bfile = load(args.file)
    tests = [t for t in bfile.tests if t.kind == "MFT"]
    out: dict = {}
    for name in args.model:
        engine = registry.load_engine(name)
        per_family: dict[str, list[dict]] = {}
        for t in tests:
            cases = expand(t, bfile.seed)
            preds = engine.predict([c.question for c in cases], [c.context for c in cases], n_best=args.k,
                                   skip_invalid=True)
            for c, p in zip(cases, preds):
                texts = [s.text for s in p.nbest]
                per_family.setdefault(t.family_name, []).append(
                    {"rank": rank_of(c.expect, texts), "over_long": bool(texts) and contains(c.expect, texts[0])})
        table = {fam: summarise(rows, args.k) for fam, rows in per_family.items()}
        table["all"] = summarise([r for rows in per_family.values() for r in rows], args.k)
        out[name] = table
        cols = list(table["all"])
        print(f"\n{name} (n-best k={args.k}; figures in %)")
        print(f"{'family':28s} " + " ".join(f"{c:>18s}" for c in cols))
        for fam, row in table.items():
            print(f"{fam:28s} " + " ".join(f"{'-' if row[c] is None else row[c]:>18}" for c in cols), flush=True)
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
