"""``python -m core.behaviour FILE --model NAME [--max-failure-rate F] [--card]``: run behaviour tests.

With ``--card`` each model's failure rate per family (and per test) is written into its
``model_card.json`` under ``capabilities`` (core.behaviour.card), which the Models page shows.

Exit status (for CI): 0 when every test is within its failure-rate threshold (a test's own
``max_failure_rate`` in the file, else ``--max-failure-rate``; a test with neither only reports),
1 when at least one test is over it, 2 on bad input (file, model name, flags, perturbation spec).
"""
from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from core import cli
from core.behaviour.run import case_rows, results_rows, run_file
from core.behaviour.spec import load
from core.budgets import MAX_QUESTIONS

PROG = "python -m core.behaviour"


def _parser():
    ap = cli.ArgumentParser(prog=PROG, description="Run CheckList-style behaviour tests (MFT, INV, DIR) from a "
                                                   "TOML file against QA models; exit 1 when a test fails too often.")
    ap.add_input("file", help="behaviour file (TOML; see docs/BEHAVIOUR.md), e.g. assets/behaviour/en.toml")
    ap.add_argument("--model", required=True, action="append",
                    help="model name from models.toml (repeat the flag for several models)")
    ap.add_argument("--max-failure-rate", type=float, default=None,
                    help="fail (exit 1) when a test without its own max_failure_rate fails more than this share "
                         "of its cases (0 to 1)")
    ap.add_output("--json", metavar="PATH", help="write every case's result as JSON")
    ap.add_output("--csv", metavar="PATH", help="write every case's result as CSV")
    ap.add_argument("--card", action="store_true",
                    help="write each model's failure rate per family into its model_card.json (under 'capabilities')")
    ap.add_argument("--failures", type=cli.Count(MAX_QUESTIONS, low=0), default=3,
                    help="failing cases printed per test (default 3)")
    ap.add_argument("--backend", default="default",
                    help="engine backend: default (each model's, from its card), torch, torch-bf16, onnx or onnx-int8; "
                         "torch gives the weights' own answers (an int8 default answers ~9%% of questions "
                         "with another span)")
    return ap


@cli.command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    rate = args.max_failure_rate
    if rate is not None and not 0 <= rate <= 1:
        raise cli.CLIError(f"--max-failure-rate must be between 0 and 1, got {rate}")
    bfile = load(args.file)
    from core.behaviour.spec import expand

    for test in bfile.tests:   # every template and perturbation checked before a model loads
        expand(test, bfile.seed)
        if test.perturb:
            from core.behaviour.run import perturber

            perturber(test.perturb)
    from core.qa.registry import get_entry, load_engine

    entries = {name: get_entry(name) for name in args.model}
    if args.card:
        from core.models.cards import read_card

        for name, entry in entries.items():
            if entry.local_dir() is None:
                raise cli.CLIError(f"{name}: a hub model has no local model card to write (--card)")
            try:
                read_card(entry.local_dir())   # a broken card fails now, not after the run
            except ValueError as e:
                raise cli.CLIError(f"{name}: its model card cannot be read: {e}") from None
    from core.qa.backends.selection import check_backend
    from core.qa.engine import EngineSettings

    try:
        backend = check_backend(args.backend)
    except ValueError as e:
        raise cli.CLIError(f"--backend {e}") from None
    engines = {name: load_engine(name, EngineSettings(backend=backend)) for name in args.model}
    results = run_file(bfile, engines, rate)
    for r in results:
        rate_text = "-" if r.failure_rate is None else f"{100 * r.failure_rate:.1f}%"
        limit = "" if r.max_failure_rate is None else f" (max {100 * r.max_failure_rate:.1f}%)"
        flag = "  OVER THRESHOLD" if r.over_threshold else ""
        print(f"{r.model}  {r.kind}  {r.name}: {r.passed} passed, {r.failed} failed, {r.skipped} skipped; "
              f"failure rate {rate_text}{limit}{flag}")
        for c in [c for c in r.cases if c.status == "fail"][:args.failures]:
            print(f"    Q: {c.question_after or c.question}  ->  {c.reason}")
    rows = case_rows(results)
    if args.json:
        cli.write_text_atomic(args.json, json.dumps({"summary": results_rows(results), "cases": rows}, indent=2,
                                                    ensure_ascii=False))
    if args.csv:
        from core.io.csv_export import csv_text

        cli.write_text_atomic(args.csv, csv_text(rows))
    if args.card:
        from core.behaviour.card import write_capabilities

        for name, entry in entries.items():
            path = write_capabilities(entry.local_dir(), bfile, args.file, [r for r in results if r.model == name])
            print(f"{name}: failure rates per family written to {path}")
    over = [r for r in results if r.over_threshold]
    if over:
        print(f"{len(over)} test(s) over their failure-rate threshold", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
