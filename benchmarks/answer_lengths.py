"""Gold answer length, in words, per training source against XQuAD-en (issue 31's cause check).

    python benchmarks/answer_lengths.py [--json out.json]

For each source of the shipped English models' training mix (../shared/data/train/ and SQuAD
dev minus the XQuAD paragraphs, exactly as core.training loads them) and for XQuAD-en, the answer
each question trains on (its first gold answer, as core.training uses it; XQuAD-en has one per
question) is split on whitespace. Prints, per source: questions, mean and median words, and the
share of answers of 1, 2-3, 4-6 and 7+ words. XQuAD-en is only measured here, never trained on.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TRAIN_FILES = ("train/squad/train-v1.1-first4370.json", "train/squadshifts/new_wiki_v1.0.json",
               "train/squadshifts/amazon_reviews_v1.0.json", "train/squadshifts/reddit_v1.0.json",
               "train/tydiqa/english_tydiqa_train.json")
BINS = (("1", 1, 1), ("2-3", 2, 3), ("4-6", 4, 6), ("7+", 7, 10**9))


def length_stats(words: list[int]) -> dict:
    """Summary of answer lengths in words.

    >>> length_stats([1, 1, 2, 7])  # doctest: +NORMALIZE_WHITESPACE
    {'questions': 4, 'mean_words': 2.75, 'median_words': 1.5, 'share_1': 50.0, 'share_2-3': 25.0, 'share_4-6': 0.0,
    'share_7+': 25.0}
    """
    out = {"questions": len(words), "mean_words": round(statistics.fmean(words), 2),
           "median_words": statistics.median(words)}
    for label, lo, hi in BINS:
        out[f"share_{label}"] = round(100 * sum(lo <= w <= hi for w in words) / len(words), 1)
    return out


@cli.command("benchmarks/answer_lengths.py")
def main(argv: list[str] | None = None) -> int:
    from core import datasets
    from core.config import data_dir

    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_output("--json", help="also write the figures as JSON")
    ap.reads(*TRAIN_FILES, "xquad/xquad.en")   # no output may be one of them
    args = ap.parse_args(argv)
    root = data_dir()
    if root is None:
        print("no data directory (set QAX_DATA_DIR)", file=sys.stderr)
        return 2
    sources = {f: (lambda f=f: datasets.load_squad(root / f)) for f in TRAIN_FILES}
    sources["squad/dev-v1.1 minus XQuAD (train)"] = lambda: datasets.squad_dev_minus_xquad(root)
    sources["xquad/xquad.en (evaluation)"] = lambda: datasets.load_squad(root / "xquad" / "xquad.en.json", "en")
    table = {}
    all_train: list[int] = []
    for name, load in sources.items():
        words = [len(e.answers[0].text.split()) for e in load().examples if e.answers and not e.is_impossible]
        table[name] = length_stats(words)
        if "evaluation" not in name:
            all_train += words
    table["all training sources together"] = length_stats(all_train)
    cols = ["questions", "mean_words", "median_words"] + [f"share_{b[0]}" for b in BINS]
    print(f"{'source':48s} " + " ".join(f"{c:>12s}" for c in cols))
    for name, row in table.items():
        print(f"{name:48s} " + " ".join(f"{row[c]:>12}" for c in cols))
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
