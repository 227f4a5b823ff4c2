"""Where dynamic int8 loses accuracy: the logit error of int8 models that keep one group of nodes in fp32.

    python benchmarks/int8_sensitivity.py --model mpnet-squad-lora --pairs 60
    python benchmarks/int8_sensitivity.py --model minilm-squad --pairs 120 --json out.json

The model's fused fp32 export (core.qa.backends, the ``onnx`` backend's file) is quantised with
ONNX Runtime's dynamic int8 (one activation scale per tensor, int8 weights per channel: the
``onnx-int8`` recipe before core.qa.backends.int8_per_token, and the study that found the outlier channels
core.qa.backends.int8_split keeps in fp32), once with every node quantised and once per group with that
group left in fp32. Groups: every layer (all its
weight MatMuls, or its fused Attention op) and every role across layers (``attention/attn/q``,
``intermediate/dense``, ``output/dense``, ...). For each file it reports, against the fp32 file on
the same windows, the mean squared error of the start and end logits over real (unpadded) tokens
and how often the start and end argmax agree. A group whose fp32 copy removes most of the error
is where the quantisation hurts.

The windows come from SQuAD *training* questions (``train/squad`` in the data directory), never
from an evaluation set: choosing which nodes to keep in fp32 from XQuAD would tune the recipe on
the data its F1 rule is measured on. The F1 of a chosen recipe is then measured once with
``benchmarks/qa_throughput.py``.
"""
from __future__ import annotations

import json
import logging
import os
import random
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core import cli
from core.budgets import MAX_QUESTIONS, MAX_THREADS

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TRAIN_FILE = "train/squad/train-v1.1-first4370.json"


def node_groups(graph) -> dict[str, list[str]]:
    """{group: node names} over the nodes dynamic quantisation would touch (weight MatMuls, fused
    Attention ops): ``layer N`` and ``role R`` groups; anything else is its own group."""
    weights = {i.name for i in graph.initializer}
    groups: dict[str, list[str]] = defaultdict(list)
    for node in graph.node:
        if node.op_type == "Attention":  # the fused op (MiniLM): layer N's q, k and v projections
            groups[f"layer {node.name.rsplit('_', 1)[-1]}"].append(node.name)
            groups["role attention (fused qkv)"].append(node.name)
        elif node.op_type == "MatMul" and any(i in weights for i in node.input):
            m = re.search(r"layer\.(\d+)/(.+)/MatMul", node.name)
            if m:
                groups[f"layer {m.group(1)}"].append(node.name)
                groups[f"role {m.group(2)}"].append(node.name)
            else:
                groups[node.name].append(node.name)
    return dict(groups)


def training_pairs(n_pairs: int, seed: int) -> list[tuple[str, str]]:
    """``n_pairs`` (question, context) pairs of SQuAD's training set, shuffled with ``seed``."""
    from core.config import data_dir

    root = data_dir()
    path = (root / TRAIN_FILE) if root else Path(TRAIN_FILE)
    if not path.is_file():
        raise SystemExit(f"needs SQuAD training questions at {path} (the data directory's {TRAIN_FILE})")
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    pairs = [(qa["question"], p["context"]) for a in data for p in a["paragraphs"] for qa in p["qas"]]
    random.Random(seed).shuffle(pairs)
    return pairs[:n_pairs]


def training_batches(tokenizer, input_names: list[str], n_pairs: int, seed: int, batch: int = 16) -> list[dict]:
    from core.qa.backends.int8_split import window_batches

    return window_batches(tokenizer, training_pairs(n_pairs, seed), input_names, batch)


def logits(path: Path, batches: list[dict], threads: int) -> list:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return [session.run(["start_logits", "end_logits"], b) for b in batches]


def error(ref: list, got: list, batches: list[dict]) -> dict[str, float]:
    """Mean squared logit error over unpadded tokens, and the share of agreeing start/end argmaxes."""
    sq, tokens, agree, rows = 0.0, 0, 0, 0
    for (rs, re_), (gs, ge), b in zip(ref, got, batches):
        mask = b["attention_mask"].astype(bool)
        sq += float((((rs - gs) ** 2)[mask]).sum() + (((re_ - ge) ** 2)[mask]).sum())
        tokens += 2 * int(mask.sum())
        agree += int((rs.argmax(1) == gs.argmax(1)).sum() + (re_.argmax(1) == ge.argmax(1)).sum())
        rows += 2 * len(mask)
    # four significant figures, not decimals: a small model's error is far below 1e-5
    return {"logit_mse": float(f"{sq / tokens:.4g}"), "argmax_agreement": round(agree / rows, 4)}


def quantize(src: Path, dst: Path, keep_fp32: list[str]) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.WARNING)  # the quantiser's pre-processing suggestion, on every call
    try:  # ONNX Runtime's per-tensor dynamic int8, less the kept nodes
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True,
                         nodes_to_exclude=keep_fp32, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    finally:
        logging.disable(logging.NOTSET)


@cli.command("benchmarks/int8_sensitivity.py")
def main(argv: list[str] | None = None) -> dict:
    import onnx

    from core.qa import registry
    from core.qa.backends.onnx_runtime import ensure_export, model_input_names

    ap = cli.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm-squad")
    ap.add_argument("--pairs", type=cli.Count(MAX_QUESTIONS), default=60,
                    help="SQuAD training questions (their windows are scored)")
    ap.add_argument("--seed", type=cli.seed, default=1)
    ap.add_argument("--threads", type=cli.Count(MAX_THREADS), default=2)
    ap.add_output("--json", type=Path)
    ap.reads(TRAIN_FILE)   # no output may be one of them
    args = ap.parse_args(argv)

    model, tokenizer = registry.load_model_and_tokenizer(registry.get_entry(args.model))
    names = model_input_names(tokenizer, model)
    src = ensure_export(model, names, "onnx")
    graph = onnx.load(str(src), load_external_data=False).graph
    groups = node_groups(graph)
    batches = training_batches(tokenizer, [i.name for i in graph.input], args.pairs, args.seed)
    ref = logits(src, batches, args.threads)
    n_windows = sum(len(b["input_ids"]) for b in batches)
    print(f"{args.model}: {n_windows} windows of {args.pairs} SQuAD training questions; int8 with one group kept fp32")
    results: dict = {"model": args.model, "windows": n_windows, "groups": {}}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "int8.onnx"
        quantize(src, path, [])
        results["all_int8"] = error(ref, logits(path, batches, args.threads), batches)
        print(f"{'all nodes int8':40s} mse {results['all_int8']['logit_mse']:9.5f}  "
              f"argmax agreement {results['all_int8']['argmax_agreement']:.4f}")
        for group, nodes in sorted(groups.items()):
            quantize(src, path, nodes)
            e = results["groups"][group] = {**error(ref, logits(path, batches, args.threads), batches),
                                            "nodes": len(nodes)}
            print(f"{group + ' fp32':40s} mse {e['logit_mse']:9.5f}  argmax agreement {e['argmax_agreement']:.4f}"
                  f"  ({len(nodes)} nodes)", flush=True)
    if args.json:
        cli.write_text_atomic(args.json, json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    sys.exit(cli.exit_status(main()))
