"""How much training each shipped model saw, read from its model card (issue 31's cause check).

    python benchmarks/training_dose.py [--model minilm-squad mpnet-squad-lora ...] [--json out.json]

A card records its last stage (``training``: steps, batch size, windows, epochs, learning rate)
and each earlier stage as a line "N steps, Q questions: <command>". This prints one row per stage
(steps, batch size, windows seen = steps x batch, epochs of that stage's data, peak learning
rate) and the totals per model. Nothing is trained or run: the figures are the cards'.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli

os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODELS = ("minilm-squad", "minilm-squad-noise", "minilm-squad-lora", "mpnet-squad-lora")


def _flag(command: str, flag: str) -> str | None:
    m = re.search(rf"{flag} (\S+)", command)
    return m.group(1) if m else None


def stages(training: dict) -> list[dict]:
    """One dict per training stage, earliest first.

    >>> t = {"earlier_stages": ["833 steps, 25383 questions: python -m core.train --lr 0.0001 --batch-size 32"],
    ...      "command": "python -m core.train --lr 3e-05 --batch-size 32", "steps": 640, "epochs": 0.43,
    ...      "training_questions": 45071}
    >>> [(s["steps"], s["windows"], s["lr"], s["epochs"]) for s in stages(t)]
    [(833, 26656, 0.0001, None), (640, 20480, 3e-05, 0.43)]
    """
    out = []
    for line in training.get("earlier_stages") or []:
        m = re.match(r"(\d+) steps, (\d+) questions: (.*)", line)
        if not m:
            continue
        steps, questions, command = int(m.group(1)), int(m.group(2)), m.group(3)
        batch = int(_flag(command, "--batch-size") or 0)
        out.append({"steps": steps, "questions": questions, "batch_size": batch, "windows": steps * batch,
                    "epochs": None, "lr": float(_flag(command, "--lr") or "nan")})
    command = training.get("command", "")
    batch = int(training.get("batch_size") or _flag(command, "--batch-size") or 0)
    out.append({"steps": int(training.get("steps", 0)), "questions": training.get("training_questions"),
                "batch_size": batch, "windows": int(training.get("steps", 0)) * batch,
                "epochs": training.get("epochs"), "lr": float(_flag(command, "--lr") or "nan")})
    return out


@cli.command("benchmarks/training_dose.py")
def main(argv: list[str] | None = None) -> int:
    from core.qa import registry

    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", nargs="+", default=list(MODELS))
    ap.add_output("--json", help="also write the figures as JSON")
    args = ap.parse_args(argv)
    table = {}
    print(f"{'model':22s} {'stage':>5s} {'steps':>6s} {'batch':>5s} {'windows':>8s} {'questions':>9s} "
          f"{'epochs':>6s} {'lr':>8s}")
    for name in args.model:
        card = registry.get_entry(name).model_card() or {}
        rows = stages(card.get("training") or {})
        for i, s in enumerate(rows, 1):
            ep = "-" if s["epochs"] is None else s["epochs"]
            print(f"{name:22s} {i:>5d} {s['steps']:>6d} {s['batch_size']:>5d} {s['windows']:>8d} "
                  f"{s['questions'] or '-':>9} {ep:>6} {s['lr']:>8g}")
        total = {"steps": sum(s["steps"] for s in rows), "windows": sum(s["windows"] for s in rows)}
        print(f"{name:22s} {'all':>5s} {total['steps']:>6d} {'':>5s} {total['windows']:>8d}")
        table[name] = {"stages": rows, **total}
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
