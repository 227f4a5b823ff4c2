"""MT sentences/second of each offline translation pair (Apertium), on XQuAD questions.

    python benchmarks/translation.py [--n 100]

For every source language that both XQuAD and the installed Apertium pairs cover (spa, and
cat/glg/epo/eus where the data has them), translate the first n questions into English in one
batch call and print sentences/second. German and Chinese have no offline MT here.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_QUESTIONS


@cli.command("benchmarks/translation.py")
def main(argv: list[str] | None = None) -> int:
    from core.datasets import load_dataset
    from core.translate.translators import ApertiumTranslator

    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=cli.Count(MAX_QUESTIONS), default=100)
    args = ap.parse_args(argv)
    mt = ApertiumTranslator()
    pairs = sorted(p for p in mt.available_pairs() if p[1] == "en")
    print(f"Apertium pairs into English: {', '.join(f'{s}->{t}' for s, t in pairs) or 'none installed'}")
    for src, tgt in pairs:
        try:
            ds = load_dataset(f"xquad/xquad.{src}")
        except Exception:
            print(f"{src}->{tgt}: no xquad.{src} in the data directory; skipped")
            continue
        qs = [e.question for e in ds.examples[: args.n]]
        t0 = time.perf_counter()
        out = mt.translate(qs, src, tgt)
        secs = time.perf_counter() - t0
        print(f"{src}->{tgt}: {len(qs)} questions in {secs:.2f} s = {len(qs) / secs:.1f} sentences/s; "
              f"e.g. {qs[0]!r} -> {out[0]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
