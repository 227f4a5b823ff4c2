"""This machine's attainable matrix-product rate per precision, measured (core.qa.measured_peak).

    python benchmarks/peak.py                          # the shipped encoders' shapes, 2 threads
    python benchmarks/peak.py --threads 1 --windows 1 --precisions int8
    python benchmarks/peak.py --json peak.json         # also write the record elsewhere

Each installed runtime (torch, ONNX Runtime) multiplies, with constant weights, matrices of every
weight shape of the shipped encoders (MiniLM's 384/1536, MPNet's and E5's 768/3072) for a batch
of ``--windows`` windows of 384 tokens, in fp32, bf16 and int8; prints each rate (GOP/s, a
multiply and an add counted apart) and, per precision, the best: the attainable peak. It is
written to the cache (``measured_peak.json``), where ``qa_throughput.py --compare-backends``
reads it to give each backend's share of the measured peak beside the computed one.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_BATCH_SIZE, MAX_THREADS

# hidden and FFN sizes of the shipped encoders' bases (core.qa.bases): MiniLM-L6, MPNet-base and E5-base
ENCODERS = {"minilm": (384, 1536), "mpnet / e5": (768, 3072)}


@cli.command("benchmarks/peak.py")
def main(argv: list[str] | None = None) -> int:
    from datetime import datetime, timezone
    from types import SimpleNamespace

    from core.qa import measured_peak

    ap = cli.ArgumentParser(prog="benchmarks/peak.py", description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=cli.Count(MAX_THREADS), default=min(2, os.cpu_count() or 1))
    ap.add_argument("--windows", type=cli.Count(MAX_BATCH_SIZE), default=4,
                    help="windows of 384 tokens per product (M)")
    ap.add_argument("--precisions", default="fp32,bf16,int8")
    ap.add_argument("--seconds", type=float, default=0.3, help="least time of one timed batch of products")
    ap.add_output("--json", default=None, help="also write the record here")
    args = ap.parse_args(argv)
    precisions = [p for p in args.precisions.split(",") if p]
    unknown = set(precisions) - set(measured_peak.PRECISIONS)
    if unknown:
        ap.error(f"--precisions: unknown {', '.join(sorted(unknown))} (known: {', '.join(measured_peak.PRECISIONS)})")
    configs = [SimpleNamespace(hidden_size=h, intermediate_size=i) for h, i in ENCODERS.values()]
    shapes = measured_peak.encoder_shapes(configs, 384, args.windows)
    load_before = os.getloadavg()

    def show(r) -> None:
        print(f"{r.precision:5s} {r.runtime:32s} {r.m:5d}x{r.k:<5d}x{r.n:<5d} {r.ms:9.2f} ms {r.gops:8.1f} GOP/s",
              flush=True)

    rates = measured_peak.measure(shapes, args.threads, precisions, min_seconds=args.seconds, progress=show)
    record = measured_peak.record(rates, args.threads, {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "command": "python benchmarks/peak.py " + " ".join(argv if argv is not None else sys.argv[1:])})
    for precision, best in record["attainable_gops"].items():
        shape = "x".join(map(str, best["shape"]))
        print(f"attainable {precision}: {best['gops']:.1f} GOP/s ({best['runtime']}, {shape})")
    print(f"computed peak (core.qa.roofline): {record['cpu']}")
    text = json.dumps(record, indent=1) + "\n"
    cli.write_text_atomic(measured_peak.default_path(), text)
    if args.json:
        cli.write_text_atomic(args.json, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
