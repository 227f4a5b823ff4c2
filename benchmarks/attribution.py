"""Token attribution of one model's answer: today's captum run against cheaper ones, side by side.

    python benchmarks/attribution.py --model minilm-squad-v2 --dataset xquad/xquad.en --passages 3 \\
        [--json OUT.json]

For each of the first N passages of the data set (one question each: the first of the passage),
the model's torch weights are explained with each method below, the methods interleaved per
passage so a neighbour's load falls on all alike:

* ``captum-50``: the attribution as the app computed it before (captum's
  LayerIntegratedGradients, 50 Gauss-Legendre steps, one forward and one backward pass per
  (part, target) integral: four integrals);
* ``batched-N``: core.explain's batched integrated gradients at N steps (the start and end
  targets share each forward pass, the question's and the context's paths share the batches);
* ``adaptive``: batched, 8 steps doubled until the integration error is within 5 % or the step
  budget (32) is spent (core.explain.explain's ``tolerance``);
* ``grad-x-input``: one step at the input (the gradient times the input's difference from the
  baseline).

Per method: wall and CPU seconds (the process's CPU time, every thread: on a shared machine the
steadier figure), the integration error (largest |sum of attributions - change| / |change|), and
the agreement of its token scores with the reference, ``batched-50`` (captum-50's numbers:
tests/test_explain.py checks the two agree to 1e-4; captum-50 itself, four times the forward
passes, runs on the first ``--captum-passages`` only): Spearman's rho over the context tokens and
over the question tokens, the share of the reference's five highest-scoring context tokens among
its own five, and the share of tokens whose score has the same sign. Before the methods, where
the time goes: the seconds of one forward and one forward + backward pass per row (a batch of 8
rows of the first passage's window).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_QUESTIONS

os.environ.setdefault("HF_HUB_OFFLINE", "1")

CAPTUM_STEPS = 50
REFERENCE = "batched-50"


def captum_integrate(model, tok, ids, extra, seq, sequences, positions, n_steps, *_ignored):
    """The app's integration before the batched one (captum, four integrals): the reference."""
    import torch
    from captum.attr import LayerIntegratedGradients

    from core.explain.integrated import CONTEXT, QUESTION

    q_seq, c_seq = sequences
    ps, pe = positions

    def target(input_ids, which: int, pos: int):
        n = input_ids.shape[0]
        out = model(input_ids=input_ids, **{k: v.expand(n, -1) for k, v in extra.items()})
        return (out.start_logits if which == 0 else out.end_logits)[:, pos].float()

    lig = LayerIntegratedGradients(target, model.get_input_embeddings())
    scores, deltas = {}, {}
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.unk_token_id
    with torch.enable_grad():
        for part, part_seq in ((QUESTION, q_seq), (CONTEXT, c_seq)):
            baseline = ids.clone()
            for j, sid in enumerate(seq):
                if sid == part_seq:
                    baseline[0, j] = pad
            for name, which, pos in (("start", 0, ps), ("end", 1, pe)):
                attr, delta = lig.attribute(ids, baselines=baseline, additional_forward_args=(which, pos),
                                            n_steps=n_steps, internal_batch_size=n_steps,
                                            return_convergence_delta=True)
                scores[(part, name)] = attr.sum(-1)[0].detach().float().cpu().tolist()
                with torch.no_grad():
                    change = float(target(ids, which, pos)[0] - target(baseline, which, pos)[0])
                deltas.setdefault(part, {})[name] = {"change": round(change, 6), "delta": round(float(delta[0]), 6)}
    return scores, deltas


def run(method: str, engine, question: str, context: str):
    """(attribution, wall s, CPU s) of one method."""
    from core.explain import integrated

    kwargs: dict = {}
    original = integrated._integrate
    if method == "captum-50":
        integrated._integrate = captum_integrate
        kwargs = {"n_steps": CAPTUM_STEPS}
    elif method == "adaptive":
        kwargs = {"n_steps": 32, "tolerance": 0.05}
    elif method == "grad-x-input":
        kwargs = {"n_steps": 1, "quadrature_name": "riemann_right"}
    else:
        kwargs = {"n_steps": int(method.split("-")[1])}
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        a = integrated.explain(engine, question, context, **kwargs)
    finally:
        integrated._integrate = original
    return a, time.perf_counter() - wall, time.process_time() - cpu


def agreement(ref, got) -> dict:
    """Spearman's rho (context, question), top-5 context overlap and sign agreement with ``ref``."""
    from scipy.stats import spearmanr

    out = {}
    for part in ("context", "question"):
        r = [t.score for t in ref.part(part)]
        g = [t.score for t in got.part(part)]
        out[f"rho_{part}"] = float(spearmanr(r, g).statistic) if len(r) > 2 else None
    r = [t.score for t in ref.tokens]
    g = [t.score for t in got.tokens]
    out["same_sign"] = sum((a >= 0) == (b >= 0) for a, b in zip(r, g)) / len(r)
    rc = [t.score for t in ref.part("context")]
    gc = [t.score for t in got.part("context")]
    top = sorted(range(len(rc)), key=lambda k: -rc[k])[:5]
    mine = sorted(range(len(gc)), key=lambda k: -gc[k])[:5]
    out["top5_context"] = len(set(top) & set(mine)) / 5
    return out


def where_the_time_goes(engine, question: str, context: str, rows_n: int = 8) -> dict:
    """Seconds (wall, CPU) per row of one forward and one forward + backward pass (a batch of
    ``rows_n`` rows of the first window's length)."""
    import torch

    from core.explain.integrated import _encode, float32_model

    model = float32_model(engine)
    max_length, stride = engine._window_shape(engine.is_long(context))
    enc, *_ = _encode(engine.tokenizer, question, context, max_length, stride)
    out = {"windows": len(enc["input_ids"]), "tokens": len(enc["input_ids"][0])}
    ids = torch.tensor([enc["input_ids"][0]])
    extra = {k: torch.tensor([enc[k][0]]) for k in ("attention_mask", "token_type_ids") if k in enc}
    rows = ids.expand(rows_n, -1)
    more = {k: v.expand(rows_n, -1) for k, v in extra.items()}
    for name, grad in (("forward_per_row", False), ("forward_backward_per_row", True)):
        wall, cpu = time.perf_counter(), time.process_time()
        emb = model.get_input_embeddings()(rows).detach().requires_grad_(grad)
        with torch.set_grad_enabled(grad):
            res = model(inputs_embeds=emb, **more)
            if grad:
                res.start_logits[:, 1].sum().backward()
        out[name] = (round((time.perf_counter() - wall) / rows_n, 3), round((time.process_time() - cpu) / rows_n, 3))
    return out


@cli.command("benchmarks/attribution.py")
def main(argv: list[str] | None = None) -> int:
    from core.cli import write_text_atomic
    from core.datasets import load_dataset
    from core.qa import registry

    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad-v2")
    ap.add_input("--dataset", paths=cli.dataset_files(), default="xquad/xquad.en")
    ap.add_argument("--passages", type=cli.Count(MAX_QUESTIONS), default=3)
    ap.add_argument("--methods", default="captum-50,batched-16,batched-8,adaptive,grad-x-input")
    ap.add_argument("--captum-passages", type=cli.Count(MAX_QUESTIONS, low=0), default=1,
                    help="passages captum-50 runs on (it is slow)")
    ap.add_output("--json", default=None, help="write the figures here too")
    args = ap.parse_args(argv)
    if not 1 <= args.passages <= 50:
        ap.error("--passages must be in 1..50")
    out = cli.writable_file(args.json, "--json") if args.json else None
    methods = args.methods.split(",")
    t0 = time.perf_counter()
    engine = registry.load_engine(args.model)
    load_s = time.perf_counter() - t0
    seen, items = set(), []
    for e in load_dataset(args.dataset).examples:
        if e.context not in seen:
            seen.add(e.context)
            items.append(e)
        if len(items) == args.passages:
            break
    load_before = os.getloadavg()[0]
    breakdown = where_the_time_goes(engine, items[0].question, items[0].context)
    print(json.dumps(breakdown), flush=True)
    rows = []
    others = [m for m in methods if m != REFERENCE]
    for k, e in enumerate(items):
        ref = None
        shift = k % max(1, len(others))
        order = [REFERENCE] + [m for m in others[shift:] + others[:shift]
                               if m != "captum-50" or k < args.captum_passages]
        for m in order:
            a, wall, cpu = run(m, engine, e.question, e.context)
            if m == REFERENCE:
                ref = a
            rows.append({"passage": k, "method": m, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                         "steps": a.n_steps, "error": a.integration_error(), "tokens": len(a.tokens),
                         "answer_same": (a.answer.start, a.answer.end) == (ref.answer.start, ref.answer.end),
                         **agreement(ref, a)})
            print(json.dumps(rows[-1]), flush=True)   # as it comes: a long run on a busy machine
    load_after = os.getloadavg()[0]
    print(f"{args.model}: loaded in {load_s:.1f} s; {len(items)} passages of {args.dataset}; load average "
          f"{load_before:.1f} before, {load_after:.1f} after; torch threads {__import__('torch').get_num_threads()}")
    print(f"first passage: {breakdown['windows']} window(s), {breakdown['tokens']} tokens; per row (wall s, CPU s): "
          f"forward {breakdown['forward_per_row']}, forward + backward {breakdown['forward_backward_per_row']}")
    ref_cpu = statistics.median(r["cpu_s"] for r in rows if r["method"] == REFERENCE)
    print(f"{'method':14s} {'wall s':>7s} {'CPU s':>7s} {'x ref':>8s} {'steps':>5s} {'error':>6s} "
          f"{'rho ctx':>7s} {'rho q':>6s} {'top5':>5s} {'sign':>5s}   (medians over passages; x ref: CPU s of "
          f"{REFERENCE} / CPU s)")
    summary = {}
    for m in [REFERENCE] + others:
        mine = [r for r in rows if r["method"] == m]
        med = {key: statistics.median(r[key] for r in mine if r[key] is not None)
               for key in ("wall_s", "cpu_s", "steps", "error", "rho_context", "rho_question", "top5_context",
                           "same_sign")}
        med["answers_same"] = all(r["answer_same"] for r in mine)
        summary[m] = med
        print(f"{m:14s} {med['wall_s']:7.1f} {med['cpu_s']:7.1f} {ref_cpu / med['cpu_s']:8.1f} {med['steps']:5.0f} "
              f"{med['error']:6.3f} {med['rho_context']:7.3f} {med['rho_question']:6.3f} "
              f"{med['top5_context']:5.2f} {med['same_sign']:5.2f}")
    if out is not None:
        write_text_atomic(out, json.dumps({"model": args.model, "dataset": args.dataset, "load_s": round(load_s, 1),
                                           "load_average": [load_before, load_after], "breakdown": breakdown,
                                           "rows": rows, "summary": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
