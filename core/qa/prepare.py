"""Export, ahead of time, the ONNX or OpenVINO files of every installed model whose card chooses one.

``python -m core.qa.prepare`` (run by ``./run.sh setup``) loads each such model once, which exports
its ONNX graph into the cache (core.qa.backends.onnx_runtime.ensure_export) unless the files are already
there. Why: without it the first question a fresh server is asked waits for the export (about
10 s for MiniLM, a minute for MPNet), which is the hot path issue #27 keeps exports off. A model
added later is still exported lazily on its first use, so this step is an optimisation, never a
requirement: a failure is reported and the command goes on with the next model.
"""
from __future__ import annotations

import sys
import time
from typing import Sequence

from core import cli
from core.qa.backends.selection import OPENVINO_BACKENDS
from core.qa.registry import installed_models, load_engine


def models_to_prepare(names: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """(model, backend) for the installed models whose default backend here is an ONNX or OpenVINO
    one (torch and torch-bf16 have nothing to export)."""
    chosen = [(m.name, m.default_backend()) for m in installed_models()]
    if names:
        chosen = [(n, b) for n, b in chosen if n in set(names)]
    return [(n, b) for n, b in chosen if b in ("onnx", "onnx-int8", *OPENVINO_BACKENDS)]


@cli.command("python -m core.qa.prepare")
def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.ArgumentParser(prog="python -m core.qa.prepare", description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="only these registered models (default: every installed one)")
    args = parser.parse_args(argv)
    failed = 0
    for name, backend in models_to_prepare(args.models):
        start = time.perf_counter()
        try:
            engine = load_engine(name)
        except Exception as e:  # an optimisation only: the app exports lazily instead
            failed += 1
            print(f"[prepare] {name}: could not load ({type(e).__name__}: {e})", file=sys.stderr)
            continue
        took = time.perf_counter() - start
        if engine.backend_message:  # the export failed: the app will answer with torch
            failed += 1
            print(f"[prepare] {name}: {engine.backend_message}", file=sys.stderr)
        else:
            print(f"[prepare] {name}: {engine.backend_name} ready in {took:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
