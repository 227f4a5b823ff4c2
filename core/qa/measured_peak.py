"""The attainable matrix-product rate of this machine, measured (issue 58): the peak a backend's
speed is read against, instead of one computed from the CPU flags (core.qa.roofline), which on a
Zen 5 put int8 at a third of what ONNX Runtime really reached.

Per precision (fp32, bf16, int8), each installed runtime multiplies matrices of the shapes the
shipped encoders run (``encoder_shapes``: a batch of windows times each weight matrix of a layer),
with the weights constant as in a model; the best rate over runtimes and shapes is the attainable
peak for that precision. Runtimes:

* fp32: torch ``matmul``; ONNX Runtime ``MatMul`` with a constant (prepacked) weight;
* bf16: torch ``matmul`` in bfloat16 (emulated, and slow, without AVX512-BF16 or AMX);
* int8: ONNX Runtime ``MatMulInteger`` (uint8 activations, weights int8, or uint8 where int8
  products saturate on this CPU: core.qa.backends.int8_per_token); torch ``_int_mm``.

Operations count a multiply and an add apart (2 M K N per product), as core.qa.roofline does.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

PRECISIONS = ("fp32", "bf16", "int8")
FILE_NAME = "measured_peak.json"
# A runtime slower than this per product on the first shape is emulating the precision (bf16 on a
# CPU without AVX512-BF16 ran at 2 GOP/s on a Zen 3): its other shapes are not measured.
SLOW_MS = 1000.0


@dataclass
class Rate:
    """One runtime's rate on one product shape."""

    precision: str
    runtime: str
    m: int
    k: int
    n: int
    ms: float
    gops: float


def encoder_shapes(configs: Sequence, tokens: int = 384, windows: int = 4) -> list[tuple[int, int, int]]:
    """(M, K, N) of every weight product of the encoders ``configs`` (hidden size h, FFN size i):
    a layer's projections h x h, the FFN's h x i and i x h, for ``windows`` windows of ``tokens``
    tokens at once; each shape once.

    >>> from types import SimpleNamespace as C
    >>> encoder_shapes([C(hidden_size=384, intermediate_size=1536), C(hidden_size=384, intermediate_size=1536)], 384, 1)
    [(384, 384, 384), (384, 384, 1536), (384, 1536, 384)]
    """
    seen: list[tuple[int, int, int]] = []
    for c in configs:
        h, i, m = c.hidden_size, c.intermediate_size, tokens * windows
        for shape in ((m, h, h), (m, h, i), (m, i, h)):
            if shape not in seen:
                seen.append(shape)
    return seen


def _time(run: Callable[[], object], repeats: int, min_seconds: float) -> float:
    """Seconds per call: warm twice, then the best of ``repeats`` timed batches of calls lasting at
    least ``min_seconds`` each (the best: a neighbour's burst only ever slows a batch down)."""
    run(), run()
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < min_seconds or calls < 2:
        run()
        calls += 1
    per_batch = max(calls, 2)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            run()
        best = min(best, (time.perf_counter() - t0) / per_batch)
    return best


def _ort_session(op: str, w: np.ndarray, threads: int, a_type, inputs_extra=()):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    k, n = w.shape
    nodes = [helper.make_node(op, ["a", "w", *[name for name, _ in inputs_extra]], ["y"])]
    inits = [numpy_helper.from_array(w, "w")] + [numpy_helper.from_array(v, name) for name, v in inputs_extra]
    out_type = TensorProto.INT32 if op == "MatMulInteger" else TensorProto.FLOAT
    graph = helper.make_graph(nodes, "gemm", [helper.make_tensor_value_info("a", a_type, [None, k])],
                              [helper.make_tensor_value_info("y", out_type, [None, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def runtimes(precision: str, threads: int) -> dict[str, Callable[[int, int, int], Callable[[], object]]]:
    """``{runtime: make(m, k, n)}``: each returns a call computing one product of that shape with
    constant weights; runtimes not installed here are left out."""
    out: dict[str, Callable] = {}
    rng = np.random.default_rng(0)
    try:
        import torch

        torch.set_num_threads(threads)

        def torch_float(dtype):
            def make(m, k, n):
                a = torch.randn(m, k).to(dtype)
                w = torch.randn(k, n).to(dtype)
                return lambda: torch.matmul(a, w)
            return make

        if precision == "fp32":
            out["torch"] = torch_float(torch.float32)
        elif precision == "bf16":
            out["torch"] = torch_float(torch.bfloat16)
        elif precision == "int8" and hasattr(torch, "_int_mm"):
            def int_mm(m, k, n):
                a = torch.randint(-127, 128, (m, k), dtype=torch.int8)
                w = torch.randint(-127, 128, (k, n), dtype=torch.int8)
                return lambda: torch._int_mm(a, w)
            out["torch _int_mm"] = int_mm
    except ImportError:
        pass
    try:
        import onnxruntime  # noqa: F401
        from onnx import TensorProto

        from core.qa.backends.int8_per_token import integer_products_saturate

        if precision == "fp32":
            def ort_float(m, k, n):
                session = _ort_session("MatMul", rng.standard_normal((k, n), dtype=np.float32), threads,
                                       TensorProto.FLOAT)
                a = rng.standard_normal((m, k), dtype=np.float32)
                return lambda: session.run(None, {"a": a})
            out["onnxruntime"] = ort_float
        elif precision == "int8":
            unsigned = integer_products_saturate()

            def ort_int(m, k, n):
                if unsigned:
                    w = rng.integers(1, 256, (k, n), dtype=np.uint8)
                    extra = (("a_zero", np.uint8(128)), ("w_zero", np.uint8(128)))
                else:
                    w = rng.integers(-127, 128, (k, n), dtype=np.int8)
                    extra = (("a_zero", np.uint8(128)),)
                session = _ort_session("MatMulInteger", w, threads, TensorProto.UINT8, extra)
                a = rng.integers(1, 256, (m, k), dtype=np.uint8)
                return lambda: session.run(None, {"a": a})
            out["onnxruntime" + (" (uint8 weights)" if unsigned else "")] = ort_int
    except ImportError:
        pass
    return out


def measure(shapes: Sequence[tuple[int, int, int]], threads: int, precisions: Sequence[str] = PRECISIONS,
            repeats: int = 3, min_seconds: float = 0.3, progress: Callable[[Rate], None] | None = None) -> list[Rate]:
    """Every runtime's rate on every shape, per precision."""
    rates = []
    for precision in precisions:
        for runtime, make in runtimes(precision, threads).items():
            for j, (m, k, n) in enumerate(shapes):
                if j and rates[-1].ms > SLOW_MS:   # emulated (bf16 on AVX2, torch's int8): one shape says it
                    break
                seconds = _time(make(m, k, n), repeats, min_seconds)
                gops = 2 * m * k * n / seconds / 1e9
                rate = Rate(precision, runtime, m, k, n, round(seconds * 1000, 6), round(gops, 1))
                rates.append(rate)
                if progress:
                    progress(rate)
    return rates


def attainable(rates: Sequence[Rate]) -> dict[str, dict]:
    """Per precision, the best rate measured and where: ``{precision: {gops, runtime, shape}}``.

    >>> attainable([Rate("int8", "a", 1, 2, 3, 1.0, 900.0), Rate("int8", "b", 1, 2, 3, 1.0, 1200.0)])
    {'int8': {'gops': 1200.0, 'runtime': 'b', 'shape': [1, 2, 3]}}
    """
    best: dict[str, dict] = {}
    for r in rates:
        if r.precision not in best or r.gops > best[r.precision]["gops"]:
            best[r.precision] = {"gops": r.gops, "runtime": r.runtime, "shape": [r.m, r.k, r.n]}
    return best


def record(rates: Sequence[Rate], threads: int, extra: dict | None = None) -> dict:
    """What benchmarks/peak.py writes: the attainable rates, every rate, the threads and the CPU."""
    from core.qa.roofline import detect_peak

    return {"attainable_gops": attainable(rates), "threads": threads, "cpu": detect_peak().describe(),
            "rates": [asdict(r) for r in rates], **(extra or {})}


def default_path() -> Path:
    from core.config import cache_dir

    return cache_dir() / FILE_NAME


def load(path: Path | None = None) -> dict | None:
    """The measured peak written on this machine (None when never measured or unreadable)."""
    path = path or default_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("attainable_gops"), dict) else None


def share(gops: float, precision: str, peak: dict | None) -> float | None:
    """``gops`` as a share of the measured attainable rate of ``precision`` (None when unmeasured).

    >>> share(537.0, "int8", {"attainable_gops": {"int8": {"gops": 2000.0}}})
    0.2685
    """
    best = ((peak or {}).get("attainable_gops") or {}).get(precision)
    if not best or not best.get("gops"):
        return None
    return round(gops / best["gops"], 4)
