"""Whether this CPU's int8 product saturates, and what storing the weights uint8 costs: one per-token
int8 MatMul (core.qa.backends.int8_per_token) at the shapes of the shipped encoders' layers, with
int8 weights and with uint8 ones, side by side in one run.

    python benchmarks/int8_saturation.py
    python benchmarks/int8_saturation.py --tokens 384 --repeats 50 --threads 1

For each shape and weight type: milliseconds per run (one thread by default, as the engine's int8
runs) and the largest absolute difference from the exact integer arithmetic
(``int8_per_token.reference_matmul``). On an x86 CPU without VNNI, the int8 weights' error is the
saturation of ONNX Runtime's uint8 x int8 kernel; the uint8 weights' is float rounding.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import cli
from core.budgets import MAX_QUESTIONS, MAX_THREADS
from core.qa.backends import int8_per_token

# (K, N): MiniLM's FFN in and out, MPNet's and E5-base's attention projection and FFN in
SHAPES = [(384, 1536), (1536, 384), (768, 768), (768, 3072)]


def one_matmul(w: np.ndarray):
    from onnx import TensorProto, helper, numpy_helper

    k, n = w.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")], "one_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", n])],
        [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def measure(k: int, n: int, unsigned: bool, tokens: int, repeats: int, threads: int) -> dict:
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    w = rng.normal(size=(k, n)).astype(np.float32)
    x = rng.normal(size=(1, tokens, k)).astype(np.float32)
    model = one_matmul(w)
    int8_per_token.quantize_per_token(model, unsigned_weights=unsigned)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    for _ in range(3):
        session.run(["y"], {"x": x})
    start = time.perf_counter()
    for _ in range(repeats):
        y = session.run(["y"], {"x": x})[0]
    ms = (time.perf_counter() - start) / repeats * 1000
    error = float(np.abs(y - int8_per_token.reference_matmul(x, w)).max())
    return {"shape": f"{k}x{n}", "weights": "uint8" if unsigned else "int8", "ms": round(ms, 3),
            "max_abs_error": error}


@cli.command("benchmarks/int8_saturation.py")
def main(argv=None) -> int:
    parser = cli.ArgumentParser(prog="benchmarks/int8_saturation.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=cli.Bounded(1, 4096), default=384)
    parser.add_argument("--repeats", type=cli.Count(MAX_QUESTIONS), default=30)
    parser.add_argument("--threads", type=cli.Count(MAX_THREADS), default=1)
    args = parser.parse_args(argv)
    print(json.dumps({"integer_products_saturate": int8_per_token.integer_products_saturate()}))
    for k, n in SHAPES:
        pair = [measure(k, n, unsigned, args.tokens, args.repeats, args.threads) for unsigned in (False, True)]
        for row in pair:
            print(json.dumps(row))
        print(json.dumps({"shape": f"{k}x{n}", "uint8_over_int8_time": round(pair[1]["ms"] / pair[0]["ms"], 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
