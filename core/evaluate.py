"""Score registered QA models on data sets: ``python -m core.evaluate``.

    python -m core.evaluate --model minilm-squad --dataset xquad/xquad.en xquad/xquad.de --card

EM/F1 use the language's scorer (SQuAD v1.1 for most languages, character-level for Chinese,
see core.metrics). Latency is the batched engine's wall time per question and questions/second.
With ``--card`` the figures are written into the model's ``model_card.json`` (under
``evaluations``, keyed by data set) and its README.md is regenerated from it.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from core.datasets import Dataset
from core.metrics import chinese_scores, is_chinese_lang, squad_scores
from core.qa.engine import EngineSettings, QAEngine


def evaluate(engine: QAEngine, ds: Dataset, progress=None) -> dict:
    """EM/F1 (x100) and latency of one engine on one data set (questions with a gold answer)."""
    examples = [e for e in ds.examples if e.answers]
    if not examples:
        raise ValueError(f"{ds.name}: no question has a gold answer")
    t0 = time.perf_counter()
    preds = engine.predict([e.question for e in examples], [e.context for e in examples],
                           n_best=1, progress=progress, skip_invalid=True)
    secs = time.perf_counter() - t0
    predictions = {e.id: p.text for e, p in zip(examples, preds)}
    references = {e.id: e.answer_texts for e in examples}
    scorer = chinese_scores if is_chinese_lang(ds.lang) else squad_scores
    s = scorer(predictions, references)
    return {
        "dataset": ds.name,
        "lang": ds.lang,
        "n": len(examples),
        "exact_match": round(s["exact_match"], 2),
        "f1": round(s["f1"], 2),
        "scorer": "chinese-char" if scorer is chinese_scores else "squad-v1.1",
        "seconds": round(secs, 2),
        "questions_per_second": round(len(examples) / secs, 2),
        "ms_per_question": round(1000 * secs / len(examples), 2),
        "threads": engine.settings.threads,
        "device": str(engine.device),
        "hardware": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
    }


def write_card(model_dir: Path, results: list[dict]) -> Path:
    card_path = model_dir / "model_card.json"
    card = json.loads(card_path.read_text()) if card_path.is_file() else {}
    evals = card.setdefault("evaluations", {})
    for r in results:
        evals[r["dataset"]] = r
    card_path.write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    (model_dir / "README.md").write_text(render_card_markdown(card))
    return card_path


def render_card_markdown(card: dict) -> str:
    lines = [f"# {card.get('name', 'model')}", "", card.get("description", ""), ""]
    if base := card.get("base"):
        lines += ["## Base encoder", "", f"- package: `{base.get('package')}` (licence {base.get('licence')})",
                  f"- model: {base.get('model')}", ""]
    if fmt := card.get("format"):
        lines += ["## Weights", "", f"- format: {fmt}"]
        if size := card.get("size_on_disk"):
            lines.append(f"- size on disk: {size}")
        for k, v in (card.get("adapter") or {}).items():
            lines.append(f"- {k}: {', '.join(map(str, v)) if isinstance(v, list) else v}")
        lines.append("")
    if tr := card.get("training"):
        lines += ["## Training", ""]
        for k, v in tr.items():
            if k == "data":
                lines.append("- data:")
                lines += [f"  - {name}: {v2}" for name, v2 in v.items()]
            elif isinstance(v, list):
                lines.append(f"- {k}:")
                lines += [f"  {i}. {item}" for i, item in enumerate(v, 1)]
            else:
                lines.append(f"- {k}: {v}")
        lines.append("")
    if ev := card.get("evaluations"):
        lines += ["## Measured (python -m core.evaluate)", "",
                  "| data set | lang | n | EM | F1 | ms/question | questions/s | date |", "|---|---|---|---|---|---|---|---|"]
        for r in ev.values():
            lines.append(f"| {r['dataset']} | {r['lang']} | {r['n']} | {r['exact_match']:.1f} | {r['f1']:.1f} | "
                         f"{r['ms_per_question']} | {r['questions_per_second']} | {r['date']} |")
        lines.append("")
    if notes := card.get("notes"):
        lines += ["## Notes", "", *[f"- {n}" for n in notes], ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    from tqdm import tqdm

    from core.qa import registry
    from core.sweep import load_dataset

    ap = argparse.ArgumentParser(prog="python -m core.evaluate", description=__doc__.splitlines()[0])
    ap.add_argument("--model", nargs="+", required=True, help="registered model names")
    ap.add_argument("--dataset", nargs="+", required=True,
                    help="files, demo.<lang>, or names under the data dir (xquad/xquad.en)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--card", action="store_true", help="write results into the model card")
    ap.add_argument("--json", help="also write all results to this JSON file")
    args = ap.parse_args(argv)

    all_results = []
    for name in args.model:
        entry = registry.get_entry(name)
        engine = registry.load_engine(name, EngineSettings(threads=args.threads or None, batch_size=args.batch_size))
        results = []
        for dname in args.dataset:
            ds = load_dataset(dname)
            ds.name = dname
            with tqdm(total=None, desc=f"{name} on {dname}", unit="window", file=sys.stderr) as bar:
                def progress(done, total, bar=bar):
                    bar.total = total
                    bar.n = done
                    bar.refresh()
                r = evaluate(engine, ds, progress)
            r["model"] = name
            print(f"{name:24s} {dname:40s} n={r['n']:5d} EM={r['exact_match']:6.2f} F1={r['f1']:6.2f} "
                  f"{r['ms_per_question']:.1f} ms/q", flush=True)
            results.append(r)
        if args.card:
            if entry.local_dir() is None:
                print(f"{name}: hub model, no local model card to write", file=sys.stderr)
            else:
                write_card(entry.local_dir(), results)
        all_results += results
    if args.json:
        Path(args.json).write_text(json.dumps(all_results, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
