"""Per-token dynamic int8 for an ONNX graph's weight MatMuls: the ``onnx-int8`` backend's recipe.

ONNX Runtime's own dynamic quantisation (``quantize_dynamic``: DynamicQuantizeMatMul, QAttention)
quantises a MatMul's input with one scale for the whole tensor, that is for every token of the
window at once: the token with the largest activation sets the step for all the others, and a
window's answer then depends on its loudest token. Here every token (every row of the input) gets
its own scale, the scheme LLM.int8() and SmoothQuant use for activations:

    X2 = X reshaped to (tokens, K)
    s  = max(|X2|, axis=1) / 127                     one scale per token
    Q  = QuantizeLinear(X2, s, 128, axis=0)          uint8, symmetric about 128
    Y  = MatMulIntegerToFloat(Q, Wq, 1, w_scale, 128) * s, reshaped back

with the weights int8 per output channel (``quantize_weight``). Measured against the fp32 graph on
122 windows of SQuAD *training* questions, one thread, batches of one window (the engine's int8
runs): minilm-squad's logit MSE 0.0049 against 0.0171 for per-tensor dynamic int8 (start/end argmax
agreement 96.7% against 95.5%) at 14.8 ms against 12.4 ms a window (fp32: 30.2); mpnet-squad-v2's
0.0060 against 0.0254 (99.6% against 97.5%) at 62 ms against 55 (fp32: 200).

ONNX Runtime's integer GEMM takes one zero point per tensor for its first input, so the per-token
scheme is symmetric (zero point 128 for all rows) and applies the row scale after the product.

A GELU's output is never below ``-GELU_FLOOR`` (-0.16997 for the exact GELU, -0.17004 for its tanh
approximation), so the symmetric scheme would spend half its 255 steps on [-max, -0.17], which is
empty. The input of a MatMul fed by a GELU (the FFN output projection; through the outlier split's
0/1 mask too) is instead shifted by ``GELU_FLOOR`` and quantised unsigned over all 255 steps, and
the shift's product, a constant per output channel, is subtracted again:

    s = max(X2 + c, axis=1) / 255,  Q = QuantizeLinear(X2 + c, s, 0, axis=0)
    Y = MatMulIntegerToFloat(Q, Wq, 1, w_scale, 0) * s - c * colsum(Wq * w_scale)

which is exact up to the rounding of Q. minilm-squad's logit MSE: 0.0049 with the symmetric scheme
everywhere, 0.0039 with this one for the FFN output projections (argmax agreement 96.7% against
97.5%; same windows, the same speed within the noise: 16.1-17.4 ms a window either way, quiet).
Where a MatMul's input feeds several (a layer's query, key and value projections) it is quantised
once. MatMuls whose output is narrower than ``MIN_OUTPUT_WIDTH`` (the QA head: two logits per
token) stay fp32: they cost nothing and write the logits themselves.

On an x86 CPU without VNNI (AVX2 alone), ONNX Runtime multiplies uint8 by int8 with VPMADDUBSW,
which adds two products into a saturating int16: 255 x 127 twice is 64,770, past 32,767, so a
large activation next to a large weight is clipped (one of 320 outputs of a random 48 x 32 MatMul
was 8.31 instead of 8.53 on a Zen 3). ONNX Runtime's documented remedy is the U8U8 kernel: there
the weights are stored uint8 about a zero point of 128 (the same integers, ``UNSIGNED_WEIGHTS``),
multiplied without saturation; on CPUs with VNNI the int8 weights are kept (exact and faster).
"""
from __future__ import annotations

import numpy as np

from core.qa.backends.int8_split import GELU_OPS

MS_DOMAIN = "com.microsoft"
MIN_OUTPUT_WIDTH = 16
ZERO_POINT = 128  # uint8 activations symmetric about it: |x| / s <= 127 stays inside 1..255
PREFIX = "per_token_int8/"
# the weights' zero point where they are stored uint8 (``integer_products_saturate``)
UNSIGNED_WEIGHTS_ZERO = 128
# -min GELU(x), rounded up over its exact and tanh forms: GELU outputs plus this are >= 0
GELU_FLOOR = 0.1701


def quantize_weight(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per output channel (column) of a (K, N) weight: ``w ~ q * scale``.

    >>> q, s = quantize_weight(np.array([[0.5, -2.0], [-1.0, 1.0]], dtype=np.float32))
    >>> q.tolist(), np.round(s * 127, 4).tolist()
    ([[64, -127], [-127, 64]], [1.0, 2.0])
    """
    scale = np.maximum(np.abs(w).max(axis=0), 1e-12).astype(np.float32) / np.float32(127)
    return np.clip(np.round(w / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def integer_products_saturate(cpuinfo: str | None = None) -> bool:
    """Whether ONNX Runtime's uint8 x int8 product saturates on this CPU: x86 with AVX2 but no VNNI
    (AVX512-VNNI, AVX-VNNI or AMX's int8 tiles accumulate in int32).

    >>> integer_products_saturate("flags : fpu sse4_2 avx2 fma")
    True
    >>> integer_products_saturate("flags : fpu avx2 avx512f avx512_vnni")
    False
    >>> integer_products_saturate("Features : fp asimd asimddp")  # an ARM CPU: its dot products
    False
    """
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                cpuinfo = f.read()
        except OSError:
            return False
    flags = set(cpuinfo.split())
    return "avx2" in flags and not flags & {"avx512_vnni", "avx_vnni", "amx_int8"}


def reference_matmul(x: np.ndarray, w: np.ndarray, floor: float | None = None) -> np.ndarray:
    """What a rewritten MatMul computes, in numpy (for tests and for reading the graph): each row
    of ``x`` quantised with its own scale, times the per-channel int8 weights; with ``floor`` (an
    input known to be >= -floor, as a GELU's) shifted by it and quantised unsigned.

    >>> x = np.array([[1.0, -0.5], [100.0, 3.0]], dtype=np.float32)
    >>> w = np.array([[1.0], [1.0]], dtype=np.float32)
    >>> [round(float(v), 3) for v in reference_matmul(x, w).ravel()]  # exact: 0.5 and 103
    [0.496, 103.15]

    (With one scale for both rows, 100/127, the first row would quantise to [1, -1]: 0.0.)

    >>> g = np.array([[-0.17, 0.3, 2.0]], dtype=np.float32)  # a GELU's output
    >>> w3 = np.ones((3, 1), dtype=np.float32)               # exact: 2.13
    >>> [round(float(reference_matmul(g, w3)[0, 0]), 4), round(float(reference_matmul(g, w3, GELU_FLOOR)[0, 0]), 4)]
    [2.126, 2.1279]
    """
    wq, w_scale = quantize_weight(w)
    x2 = x.reshape(-1, x.shape[-1]).astype(np.float32)
    if floor is None:
        s = np.maximum(np.abs(x2).max(axis=1, keepdims=True), 1e-8).astype(np.float32) / np.float32(127)
        q = np.clip(np.rint(x2 / s), -127, 127)  # QuantizeLinear rounds half to even
        y = (q.astype(np.int32) @ wq.astype(np.int32)).astype(np.float32) * w_scale * s
    else:
        shifted = x2 + np.float32(floor)
        s = np.maximum(shifted.max(axis=1, keepdims=True), 1e-8).astype(np.float32) / np.float32(255)
        q = np.clip(np.rint(shifted / s), 0, 255)
        y = (q.astype(np.int32) @ wq.astype(np.int32)).astype(np.float32) * w_scale * s
        y = y - np.float32(floor) * (wq.astype(np.float32) * w_scale).sum(axis=0)
    return y.reshape(*x.shape[:-1], w.shape[1])


def gelu_floors(graph) -> dict[str, float]:
    """{tensor: floor} for the tensors known to be >= -floor: a GELU op's outputs, and a GELU output
    times a constant whose values lie in [0, 1] (core.qa.backends.int8_split's outlier mask)."""
    from onnx import numpy_helper

    consts = {i.name: i for i in graph.initializer}
    floors: dict[str, float] = {}
    for node in graph.node:  # topological order: a Mul's input is known before the Mul
        if node.op_type in GELU_OPS:
            floors[node.output[0]] = GELU_FLOOR
        elif node.op_type == "Mul" and len(node.input) == 2:
            for a, b in (node.input, node.input[::-1]):
                if a in floors and b in consts:
                    m = numpy_helper.to_array(consts[b])
                    if m.size and m.min() >= 0 and m.max() <= 1:
                        floors[node.output[0]] = floors[a]
                    break
    return floors


def weight_matmuls(graph, skip=()) -> list:
    """The MatMul nodes the rewrite quantises: a 2-D weight initializer as second input, an output
    at least ``MIN_OUTPUT_WIDTH`` wide, and not named in ``skip``."""
    shapes = {i.name: tuple(i.dims) for i in graph.initializer}
    return [n for n in graph.node if n.op_type == "MatMul" and n.name not in skip
            and len(shapes.get(n.input[1], ())) == 2 and shapes[n.input[1]][1] >= MIN_OUTPUT_WIDTH]


class _Builder:
    """The nodes and constants of the rewrite, named under ``PREFIX``; one per rewritten graph."""

    def __init__(self, main_opset: int, unsigned_weights: bool):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper, self.main_opset = helper, numpy_helper, main_opset
        self.unsigned_weights = unsigned_weights
        self.added: list = []
        self.eps = self.const("eps", np.float32(1e-8))  # an all-zero row: any scale, no division by 0
        self.inv127 = self.const("inv127", np.float32(1 / 127))
        self.inv255 = self.const("inv255", np.float32(1 / 255))
        self.zero_point = self.const("zero_point", np.uint8(ZERO_POINT))
        self.unsigned_zero = self.const("unsigned_zero", np.uint8(0))
        self.weight_zero = self.const("weight_zero_point", np.uint8(UNSIGNED_WEIGHTS_ZERO))  # dropped if unused
        self.one = self.const("one", np.float32(1.0))
        self.flat = self.const("flat", np.array([-1], np.int64))
        self.first = self.const("first", np.array([0], np.int64))

    def const(self, name: str, value) -> str:
        self.added.append(self.numpy_helper.from_array(np.asarray(value), PREFIX + name))
        return PREFIX + name

    def node(self, op: str, inputs: list[str], output: str, **attrs):
        return self.helper.make_node(op, inputs, [output], name=output, **attrs)

    def quantised_rows(self, q: str, x: str, k: int, floor: float | None) -> list:
        """Nodes making ``<q>/uint8`` (the rows of ``x`` quantised), ``<q>/scale`` (their scales,
        one column) and ``<q>/lead`` (``x``'s shape but its last axis)."""
        n = self.node
        rows = [n("Reshape", [x, self.const(q + "/rows_shape", np.array([-1, k], np.int64))], PREFIX + q + "/rows")]
        if floor is None:  # symmetric about 128: |x| sets the step
            rows.append(n("Abs", [PREFIX + q + "/rows"], PREFIX + q + "/magnitude"))
            steps, zp_value, source = self.inv127, ZERO_POINT, PREFIX + q + "/rows"
        else:  # shifted to >= 0, unsigned from 0: all 255 steps over [-floor, max]
            rows.append(n("Add", [PREFIX + q + "/rows", self.const(q + "/floor", np.float32(floor))],
                          PREFIX + q + "/magnitude"))
            steps, zp_value, source = self.inv255, 0, PREFIX + q + "/magnitude"
        # ReduceMax's axes moved from an attribute to an input in opset 18
        if self.main_opset >= 18:
            row_max = n("ReduceMax", [PREFIX + q + "/magnitude", self.const("axis1", np.array([1], np.int64))],
                        PREFIX + q + "/max", keepdims=1)
        else:
            row_max = n("ReduceMax", [PREFIX + q + "/magnitude"], PREFIX + q + "/max", axes=[1], keepdims=1)
        zero_points = self.numpy_helper.from_array(np.array([zp_value], np.uint8))
        return rows + [
            row_max,
            n("Max", [PREFIX + q + "/max", self.eps], PREFIX + q + "/max_safe"),
            n("Mul", [PREFIX + q + "/max_safe", steps], PREFIX + q + "/scale"),
            n("Reshape", [PREFIX + q + "/scale", self.flat], PREFIX + q + "/scale_1d"),
            n("Shape", [PREFIX + q + "/scale_1d"], PREFIX + q + "/n_rows"),
            n("ConstantOfShape", [PREFIX + q + "/n_rows"], PREFIX + q + "/zero_points", value=zero_points),
            n("QuantizeLinear", [source, PREFIX + q + "/scale_1d", PREFIX + q + "/zero_points"],
              PREFIX + q + "/uint8", axis=0),
            n("Shape", [x], PREFIX + q + "/shape"),
            n("Slice", [PREFIX + q + "/shape", self.first, self.flat], PREFIX + q + "/lead"),
        ]

    def product(self, name: str, q: str, w: np.ndarray, floor: float | None, output: str) -> list:
        """Nodes writing ``output`` = the quantised rows ``q`` times ``w`` (int8 per channel), row
        scaled, the GELU shift taken back out, in ``x``'s shape."""
        n, p, q = self.node, name, PREFIX + q
        wq, w_scale = quantize_weight(w)
        inputs = [q + "/uint8", self.const(p + "/weight_int8", wq), self.one, self.const(p + "/weight_scale", w_scale),
                  self.zero_point if floor is None else self.unsigned_zero]
        if self.unsigned_weights:  # the same integers, shifted into uint8: ONNX Runtime's U8U8 kernel
            shifted = (wq.astype(np.int16) + UNSIGNED_WEIGHTS_ZERO).astype(np.uint8)
            inputs[1] = self.const(p + "/weight_uint8", shifted)
            inputs.append(self.weight_zero)
        nodes = [
            self.helper.make_node("MatMulIntegerToFloat", inputs, [PREFIX + p + "/unscaled"], name=PREFIX + p,
                                  domain=MS_DOMAIN),
            n("Mul", [PREFIX + p + "/unscaled", q + "/scale"], PREFIX + p + "/scaled"),
        ]
        out = PREFIX + p + "/scaled"
        if floor is not None:  # take the shift's product back out: floor x each column's sum
            correction = (-np.float32(floor) * (wq.astype(np.float32) * w_scale).sum(axis=0)).astype(np.float32)
            nodes.append(n("Add", [out, self.const(p + "/shift_correction", correction)], PREFIX + p + "/unshifted"))
            out = PREFIX + p + "/unshifted"
        shape = self.const(p + "/width", np.array([w.shape[1]], np.int64))
        return nodes + [n("Concat", [q + "/lead", shape], PREFIX + p + "/out_shape", axis=0),
                        self.helper.make_node("Reshape", [out, PREFIX + p + "/out_shape"], [output],
                                              name=PREFIX + p + "/out")]


def quantize_per_token(model, skip=(), shift_gelu: bool = True, unsigned_weights: bool | None = None) -> list[str]:
    """Rewrite ``model`` (an onnx ModelProto, in place): every MatMul of ``weight_matmuls`` becomes
    the per-token int8 subgraph above (a GELU-fed one shifted and unsigned unless ``shift_gelu`` is
    off); fp32 weights no longer used are dropped. Returns the names of the rewritten MatMuls.
    ``unsigned_weights`` (default: where ``integer_products_saturate`` on this CPU) stores the
    weights uint8 about 128."""
    from onnx import helper, numpy_helper

    graph = model.graph
    chosen = {n.name for n in weight_matmuls(graph, skip)}
    if not chosen:
        return []
    if unsigned_weights is None:
        unsigned_weights = integer_products_saturate()
    build = _Builder(next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17),
                     unsigned_weights)
    weights = {i.name: i for i in graph.initializer}
    floors = gelu_floors(graph) if shift_gelu else {}
    quantised: dict[str, str] = {}  # activation -> name of its quantised rows
    nodes, done = [], []
    for node in graph.node:
        if node.name not in chosen:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
        x = node.input[0]
        if x not in quantised:  # a layer's query, key and value share their input's
            quantised[x] = f"act{len(quantised)}"
            nodes += build.quantised_rows(quantised[x], x, w.shape[0], floors.get(x))
        nodes += build.product(node.name, quantised[x], w, floors.get(x), node.output[0])
        done.append(node.name)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(build.added)
    used = {i for nd in graph.node for i in nd.input}
    kept = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return done
