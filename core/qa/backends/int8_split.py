"""Outlier channels kept in fp32 before int8: the first step of the ``onnx-int8`` backend's recipe.

Dynamic int8 quantises a MatMul's input with one scale per tensor (ONNX Runtime's) or per token
(core.qa.backends.int8_per_token, the backend's since). The inputs of a transformer's FFN output
projections (after GELU) carry a few channels whose magnitude dwarfs the rest (MPNet, on 40
SQuAD-train questions: 50-97 in layers 6-10 against a median channel maximum of 1.2-1.6), so that
one scale, whether the tensor's or the token's, crushes every other channel: MPNet lost 2.0
XQuAD-en F1 to int8, nearly all of it there (benchmarks/int8_sensitivity.py). LLM.int8()'s
decomposition removes the cause exactly:

    X @ W  ==  (X * mask) @ W  +  X[..., outliers] @ W[outliers, :]

where ``mask`` zeroes the outlier channels. The first product, now without outliers, is quantised
as before; the second (1-16 channels) stays fp32 and costs next to nothing. In fp32 the split graph
computes the same function (tests check it), so only the int8 error changes: MPNet's logit error on
other training questions fell from 1.49 to 0.052 and its XQuAD-en F1 from -1.99 to -0.38 against
fp32, at the speed of plain int8.

The outlier channels are found once, at export, by running the fp32 graph on a small calibration
text of the project's own (``assets/calibration/en.json``: general-knowledge passages written for
it, never evaluation data). A channel is an outlier when its largest magnitude over the calibration
windows exceeds ``FACTOR`` times the 99th percentile of the maxima of the channels outside the
``MAX_CHANNELS`` largest; at most ``MAX_CHANNELS`` per projection. Only MatMuls with a weight
whose input a GELU op produces are split; a graph without them is quantised as it was.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

CALIBRATION = Path(__file__).resolve().parents[3] / "assets" / "calibration" / "en.json"
FACTOR = 3.0
MAX_CHANNELS = 16
GELU_OPS = {"Gelu", "BiasGelu", "FastGelu", "QuickGelu"}
OUTLIER_SUFFIX = "/outlier_fp32"  # the fp32 MatMul of each split: its name ends so


def calibration_batches(tokenizer, input_names: list[str], batch: int = 8) -> list[dict]:
    """The calibration questions as padded numpy batches of the model's inputs (384-token windows)."""
    data = json.loads(CALIBRATION.read_text(encoding="utf-8"))
    return window_batches(tokenizer, [(q, p["context"]) for p in data["pairs"] for q in p["questions"]],
                          input_names, batch)


def window_batches(tokenizer, pairs: list[tuple[str, str]], input_names: list[str], batch: int = 8) -> list[dict]:
    """(question, context) pairs as padded numpy batches of the model's inputs, in the engine's
    384-token windows (stride 128)."""
    from core.qa.features import build_windows

    windows = build_windows(tokenizer, [q for q, _ in pairs], [c for _, c in pairs], max_length=384, stride=128)
    out = []
    for b in range(0, len(windows), batch):
        feats = [{"input_ids": w.input_ids, **w.extra} for w in windows[b : b + batch]]
        enc = tokenizer.pad(feats, padding=True, return_tensors="np")
        out.append({k: np.asarray(v, dtype=np.int64) for k, v in enc.items() if k in input_names})
    return out


def gelu_projections(graph) -> list:
    """The MatMul nodes with a weight initializer whose activation input a GELU op produces."""
    weights = {i.name for i in graph.initializer}
    producer = {o: n.op_type for n in graph.node for o in n.output}
    return [n for n in graph.node if n.op_type == "MatMul" and len(n.input) == 2
            and n.input[1] in weights and producer.get(n.input[0]) in GELU_OPS]


def select_outliers(channel_max: np.ndarray, factor: float = FACTOR, limit: int = MAX_CHANNELS) -> np.ndarray:
    """Sorted indices of the channels, among the ``limit`` largest, whose maximum exceeds ``factor``
    x the 99th percentile of the other channels' maxima.

    >>> m = np.ones(200); m[[7, 150]] = [40.0, 12.0]; m[3] = 2.5
    >>> select_outliers(m).tolist()
    [7, 150]
    >>> select_outliers(m, limit=1).tolist()
    [7]
    >>> select_outliers(np.ones(50)).tolist()
    []
    """
    order = np.argsort(-channel_max, kind="stable")
    top, rest = order[:limit], order[limit:]
    # the percentile of the channels that cannot be chosen: with few channels (a small model) the
    # outliers themselves would otherwise set the bar
    threshold = factor * np.percentile(channel_max[rest] if rest.size else channel_max, 99)
    return np.sort(top[channel_max[top] > threshold])


def channel_maxima(model, nodes: list, batches: list[dict], folder: Path) -> dict[str, np.ndarray]:
    """{node name: largest |activation| per input channel} over the batches' real (unpadded) tokens,
    by running a copy of the fp32 graph that also outputs the nodes' inputs."""
    import onnx
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for n in nodes:
        probe.graph.output.append(onnx.helper.make_tensor_value_info(n.input[0], onnx.TensorProto.FLOAT, None))
    path = folder / "calibration-probe.partial.onnx"
    try:
        onnx.save(probe, str(path))
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = [n.input[0] for n in nodes]
        maxima = {n.name: np.zeros(0) for n in nodes}
        for b in batches:
            real = b["attention_mask"].astype(bool)
            for node, act in zip(nodes, session.run(names, b)):
                m = np.abs(act[real]).max(axis=0)
                maxima[node.name] = m if not maxima[node.name].size else np.maximum(maxima[node.name], m)
        return maxima
    finally:
        path.unlink(missing_ok=True)


def split_outliers(model, outliers: dict[str, np.ndarray]) -> list[str]:
    """Rewrite ``model`` (an onnx ModelProto, in place): each named MatMul ``X @ W`` with outlier
    channels becomes ``(X * mask) @ W + X[..., idx] @ W[idx]``. Returns the names of the fp32 MatMuls,
    which the quantiser must leave alone. The original MatMul keeps its name (so node exclusions
    and logs still find it)."""
    from onnx import helper, numpy_helper

    weights = {i.name: i for i in model.graph.initializer}
    kept_fp32: list[str] = []
    nodes = []
    for node in model.graph.node:
        idx = outliers.get(node.name)
        if idx is None or not len(idx):
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weights[node.input[1]])
        mask = np.ones(w.shape[0], dtype=np.float32)
        mask[idx] = 0.0
        p = node.name
        model.graph.initializer.extend([numpy_helper.from_array(mask, p + "/outlier_mask"),
                                        numpy_helper.from_array(idx.astype(np.int64), p + "/outlier_index"),
                                        numpy_helper.from_array(w[idx].astype(w.dtype), p + "/outlier_weight")])
        x, y = node.input[0], node.output[0]
        nodes += [
            helper.make_node("Mul", [x, p + "/outlier_mask"], [p + "/masked_input"], name=p + "/mask"),
            helper.make_node("MatMul", [p + "/masked_input", node.input[1]], [p + "/int8_part"], name=p),
            helper.make_node("Gather", [x, p + "/outlier_index"], [p + "/outlier_input"], axis=-1,
                             name=p + "/gather"),
            helper.make_node("MatMul", [p + "/outlier_input", p + "/outlier_weight"], [p + "/fp32_part"],
                             name=p + OUTLIER_SUFFIX),
            helper.make_node("Add", [p + "/int8_part", p + "/fp32_part"], [y], name=p + "/sum"),
        ]
        kept_fp32.append(p + OUTLIER_SUFFIX)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return kept_fp32


def split_for_int8(fp32: Path, target: Path, tokenizer) -> list[str]:
    """Write ``target``: the fp32 graph at ``fp32`` with its GELU projections' outlier channels split
    off, calibrated on the project's calibration text. Returns the fp32 MatMuls' names (empty when
    nothing was split; ``target`` is then a plain copy)."""
    import onnx

    model = onnx.load(str(fp32))
    nodes = gelu_projections(model.graph)
    outliers: dict[str, np.ndarray] = {}
    if nodes:
        batches = calibration_batches(tokenizer, [i.name for i in model.graph.input])
        maxima = channel_maxima(model, nodes, batches, target.parent)
        outliers = {name: select_outliers(m) for name, m in maxima.items()}
    kept = split_outliers(model, outliers)
    log.info("int8 outlier split: %s", {k: v.tolist() for k, v in outliers.items() if len(v)})
    onnx.save(model, str(target))
    return kept
