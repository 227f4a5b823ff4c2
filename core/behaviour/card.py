"""Behaviour-test results as a model-card entry: the failure rate per family.

``python -m core.behaviour FILE --model NAME --card`` writes, under the card's ``capabilities``
key (keyed by the behaviour file, so several files can be recorded side by side), the file, its
SHA-256, the date, the number of cases and, per family (tests sharing a ``family``; a test
without one is its own family) and per test, the cases run, failed and the failure rate in %.
Skipped cases (INV tests a perturbation does not apply to) are not counted.

>>> from core.behaviour.spec import loads
>>> f = loads('''
... [[test]]
... name = "a"
... family = "fam"
... type = "MFT"
... context = "{x} is here."
... question = "Who is here?"
... expect = "{x}"
... fill.x = ["Ana", "Ben"]
... ''')
>>> from core.behaviour.run import TestResult
>>> entry = capability_entry(f, [TestResult("a", "MFT", "m", 2, 1, 1, 0, None)], "t.toml", "0" * 64, "2026-01-01")
>>> entry["families"]
{'fam': {'n': 2, 'failed': 1, 'failure_rate': 50.0}}
>>> entry["n"], entry["tests"]["a"]["family"]
(2, 'fam')
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from core.behaviour.spec import BehaviourFile

__all__ = ["capability_entry", "file_label", "write_capabilities"]


def file_label(path: str | Path) -> str:
    """How a card names a behaviour file: relative to the repository when inside it, else absolute."""
    from core.config import repo_root

    p = Path(path).resolve()
    try:
        return p.relative_to(repo_root().resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def _rate(failed: int, ran: int) -> float | None:
    return round(100 * failed / ran, 1) if ran else None


def capability_entry(bfile: BehaviourFile, results: Sequence, label: str, sha256: str, date: str) -> dict:
    """The card entry for one model's results on ``bfile`` (``results``: that model's TestResults)."""
    family_of = {t.name: t.family_name for t in bfile.tests}
    families: dict[str, dict] = {}
    tests: dict[str, dict] = {}
    for r in results:
        ran = r.passed + r.failed
        fam = family_of.get(r.name, r.name)
        tests[r.name] = {"family": fam, "type": r.kind, "n": ran, "failed": r.failed,
                         "failure_rate": _rate(r.failed, ran)}
        f = families.setdefault(fam, {"n": 0, "failed": 0, "failure_rate": None})
        f["n"] += ran
        f["failed"] += r.failed
    for f in families.values():
        f["failure_rate"] = _rate(f["failed"], f["n"])
    return {"file": label, "name": bfile.name, "file_sha256": sha256, "seed": bfile.seed, "date": date,
            "n": sum(f["n"] for f in families.values()), "families": families, "tests": tests}


def write_capabilities(model_dir: Path, bfile: BehaviourFile, path: str | Path, results: Sequence) -> Path:
    """Write ``results`` (one model's) into ``model_dir``'s card and re-render its README."""
    from core import cli
    from core.models.cards import read_card, render_card_markdown

    card = read_card(model_dir)
    label = file_label(path)
    sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    card.setdefault("capabilities", {})[label] = capability_entry(bfile, results, label, sha, date)
    card_path = model_dir / "model_card.json"
    cli.write_text_atomic(card_path, json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    cli.write_text_atomic(model_dir / "README.md", render_card_markdown(card))
    return card_path
