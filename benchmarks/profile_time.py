"""Where a question's time goes, for a shipped model on its default backend (issue 58, item 2).

    python benchmarks/profile_time.py                                   # minilm-squad-v2 and mpnet-squad-v2
    python benchmarks/profile_time.py --model e5-qa-multi --n 100 --json out.json

Answers the first ``--n`` questions of ``--dataset`` once to warm up, then again under two profilers
at once, on one thread (so every ONNX Runtime run happens on the profiled thread):

* Python's cProfile splits the engine's ``predict`` into tokenising and windowing
  (core.qa.features.build_windows), padding each batch (the tokenizer's ``pad``), ONNX Runtime's
  runs, span decoding (core.qa.decode: ``window_candidates``, ``best_spans``) and the rest (Python
  around them: the engine's loop, numpy copies, the prediction objects);
* on an ONNX backend, ONNX Runtime's own profiler (``enable_profiling``) splits the runs by operator into GEMMs
  (MatMul, MatMulInteger, MatMulIntegerToFloat, Gemm, FusedMatMul), attention (MultiHeadAttention,
  Attention, Softmax; an fp32 graph's fused Attention holds its query, key and value projections
  too, so there attention includes those GEMMs), LayerNorm and GELU, quantise/dequantise
  (DynamicQuantizeLinear, QuantizeLinear, DequantizeLinear), the embeddings (Gather) and every
  other operator; the ten costliest operators are printed by name;
* on an OpenVINO backend, its CPU plugin's per-node counters (``PERF_COUNT``) split each
  inference the same way by node type, the GEMMs apart by the precision their kernel ran in
  (int8 or bf16); what the inference took beyond its nodes' timers is its own part (new batch
  shapes' preparation is some of it: docs/results/speed-2026-11-28.md); where the timers add up
  to more than the inference took, they are read as shares of it.

Prints, per model, milliseconds per question and share of the total for each part, and writes
them with ``--json``. Times include the profilers' own overhead (cProfile adds to the Python parts
most); the shares, not the absolute figures, are what this measures.
"""
from __future__ import annotations

import cProfile
import json
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core import cli  # noqa: E402  (the project on the path first)
from core.budgets import MAX_QUESTIONS  # noqa: E402

MODELS = ("minilm-squad-v2", "mpnet-squad-v2")
# ONNX Runtime operator -> part of the time
OP_PARTS = {
    "gemm": {"MatMul", "MatMulInteger", "MatMulIntegerToFloat", "Gemm", "FusedMatMul", "DynamicQuantizeMatMul",
             "QGemm", "MatMulNBits"},
    "attention": {"MultiHeadAttention", "Attention", "QAttention", "Softmax"},
    "layernorm+gelu": {"LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization", "Gelu",
                       "FastGelu", "BiasGelu", "Erf"},
    "quantise": {"DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear"},
    "embeddings": {"Gather", "EmbedLayerNormalization"},
}
# OpenVINO CPU plugin node types (PERF_COUNT) -> part of the time; the GEMMs split by kernel precision
OV_PARTS = {
    "gemm": {"FullyConnected", "FullyConnectedQuantizedLegacy", "MatMul", "FullyConnectedCompressed"},
    "attention": {"ScaledDotProductAttention", "Softmax", "SoftMax"},
    "layernorm+gelu": {"MVN", "Gelu", "RMS"},
    "quantise": {"FakeQuantize", "Quantize"},
    "embeddings": {"Gather"},
}
# Python functions (cProfile's cumulative time) -> part of the time
PY_PARTS = {
    "tokenise+window": ("features.py", "build_windows"),
    "pad": ("tokenization_utils_base.py", "pad"),
    "onnxruntime": ("onnxruntime_inference_collection.py", "run"),
    "decode": ("decode.py", "window_candidates"),
    "decode_best": ("decode.py", "best_spans"),
}


def _op_part(op: str) -> str:
    return next((part for part, ops in OP_PARTS.items() if op in ops), "other ops")


def _ov_part(node_type: str, exec_type: str, name: str) -> str:
    """The part of the time an OpenVINO node belongs to: a fused ``Subgraph`` is attention when
    it holds scaled dot-product attention, a GEMM is named by its kernel's precision.

    >>> _ov_part("FullyConnected", "brgemm_avx512_I8", "l0.q"), _ov_part("FullyConnected", "brgemm_avx512_bf16", "")
    ('gemm (int8)', 'gemm (bf16)')
    >>> _ov_part("Subgraph", "jit_avx512_i8", "layer.0/ScaledDotProductAttention"), _ov_part("Add", "jit", "")
    ('attention', 'other ops')
    """
    if node_type == "Subgraph" and "attention" in name.lower():
        return "attention"
    part = next((part for part, types in OV_PARTS.items() if node_type in types), "other ops")
    if part == "gemm":
        return "gemm (int8)" if "i8" in exec_type.lower() else f"gemm ({exec_type.rsplit('_', 1)[-1].lower()})"
    return part


def _cumulative(stats: pstats.Stats, file_end: str, func: str) -> float:
    """Seconds spent in ``func`` (defined in a file ending ``file_end``) and below it."""
    total = 0.0
    for (filename, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():
        if name == func and filename.endswith(file_end):
            total += ct
    return total


def _profiled_predict(engine, questions: list[str], contexts: list[str]) -> tuple[cProfile.Profile, float]:
    """The engine's answers to every question under cProfile: the profiler and the seconds taken."""
    profiler = cProfile.Profile()
    wall_start = time.perf_counter()
    profiler.enable()
    engine.predict(questions, contexts, n_best=1)
    profiler.disable()
    return profiler, time.perf_counter() - wall_start


def _python_parts(profiler: cProfile.Profile) -> dict[str, float]:
    """Seconds in each of PY_PARTS' functions and below, span decoding's two functions as one."""
    stats = pstats.Stats(profiler)
    py = {part: _cumulative(stats, *where) for part, where in PY_PARTS.items()}
    py["decode"] += py.pop("decode_best")
    return py


def profile_model(name: str, questions: list[str], contexts: list[str]) -> dict:
    import onnxruntime as ort

    from core.qa.engine import EngineSettings
    from core.qa.registry import load_engine

    engine = load_engine(name, EngineSettings(threads=1))
    backend = engine.resolve_backend()
    forward = engine._forward_impl
    if not hasattr(forward, "_sessions") and not backend.startswith("openvino"):
        raise SystemExit(f"{name} answers with {backend}: this profile reads ONNX Runtime's or OpenVINO's "
                         "operators only")
    engine.predict(questions, contexts, n_best=1)                     # warm: sessions, caches, allocator
    wall_start = time.perf_counter()
    engine.predict(questions, contexts, n_best=1)
    plain_s = time.perf_counter() - wall_start
    if backend.startswith("openvino"):
        return _profile_openvino(name, engine, backend, questions, contexts, plain_s)

    folder = Path(tempfile.mkdtemp(prefix="qax_profile_"))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = 1, 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.enable_profiling = True
    opts.profile_file_prefix = str(folder / "ort")
    from core.qa.backends.onnx_runtime import SESSION_DISABLED_OPTIMIZERS

    session = ort.InferenceSession(str(forward.path), opts, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=SESSION_DISABLED_OPTIMIZERS)
    saved, saved_current = dict(forward._sessions), forward.session
    forward._sessions = {count: session for count in saved} | {1: session}
    try:
        import numpy as np

        warm = {"input_ids": [[101, 102]], "attention_mask": [[1, 1]], "token_type_ids": [[0, 0]]}
        session.run(None, {i.name: np.asarray(warm[i.name], dtype=np.int64)   # its first run, set apart
                           for i in session.get_inputs()})
        profiler, profiled_s = _profiled_predict(engine, questions, contexts)
        trace = Path(session.end_profiling())
    finally:   # the cached engine answers with its own sessions again
        forward._sessions, forward.session = saved, saved_current
    events = json.loads(trace.read_text())
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()

    ops: dict[str, float] = defaultdict(float)
    by_op: dict[str, float] = defaultdict(float)
    runs = sorted((ev for ev in events if ev.get("cat") == "Session" and ev.get("name") == "model_run"),
                  key=lambda ev: ev["ts"])
    warm_end = runs[0]["ts"] + runs[0]["dur"]   # the warm-up run made above is not a question's
    for ev in events:
        if ev.get("cat") == "Node" and ev.get("name", "").endswith("_kernel_time") and ev["ts"] >= warm_end:
            op = ev.get("args", {}).get("op_name", "")
            ops[_op_part(op)] += ev["dur"] / 1e6
            by_op[op] += ev["dur"] / 1e6
    py = _python_parts(profiler)
    parts = {"tokenise+window": py["tokenise+window"], "pad": py["pad"]}
    ort_total = py["onnxruntime"]
    op_total = sum(ops.values())
    parts |= {f"onnx: {k}": v for k, v in sorted(ops.items(), key=lambda kv: -kv[1])}
    parts["onnx: between operators"] = max(0.0, ort_total - op_total)
    parts["decode"] = py["decode"]
    parts["python and the rest"] = max(0.0, profiled_s - py["tokenise+window"] - py["pad"] - ort_total - py["decode"])
    return _result(name, backend, questions, plain_s, profiled_s, parts, by_op)


def _profile_openvino(name: str, engine, backend: str, questions: list[str], contexts: list[str],
                      plain_s: float) -> dict:
    """profile_model's OpenVINO half: the engine answers through one request of a model compiled
    as the backend compiles it, plus ``PERF_COUNT``; each inference's node times are summed by part."""
    import numpy as np
    import openvino as ov

    from core.qa.backends.openvino_runtime import compile_properties

    forward = engine._forward_impl
    # its own Core: the backend's has the compiled-model cache set, and a profiling model's blob
    # (268 MB for MPNet) would be written there for no later load to read
    compiled = ov.Core().compile_model(forward.read_graph(), "CPU", compile_properties(1) | {"PERF_COUNT": True})
    request = compiled.create_infer_request()
    ops: dict[str, float] = defaultdict(float)
    by_op: dict[str, float] = defaultdict(float)
    infer_s = [0.0]

    def openvino_infer(enc: dict, threads: int = 1):
        feed = {k: np.asarray(v, dtype=np.int64) for k, v in enc.items() if k in forward.inputs}
        start = time.perf_counter()
        request.infer(feed)
        infer_s[0] += time.perf_counter() - start
        for node in request.profiling_info:
            if node.status == node.Status.EXECUTED:
                seconds = node.real_time.total_seconds()
                ops[_ov_part(node.node_type, node.exec_type, node.node_name)] += seconds
                by_op[f"{node.node_type} ({node.exec_type})"] += seconds
        return (np.array(request.get_tensor("start_logits").data, dtype=np.float32),
                np.array(request.get_tensor("end_logits").data, dtype=np.float32))

    engine._forward_impl = openvino_infer
    try:
        openvino_infer({k: np.asarray([[101, 102]]) for k in ("input_ids", "attention_mask", "token_type_ids")})
        ops.clear(), by_op.clear()
        infer_s[0] = 0.0
        profiler, profiled_s = _profiled_predict(engine, questions, contexts)
    finally:   # the cached engine answers with its own compiled model again
        engine._forward_impl = forward
    py = _python_parts(profiler)
    node_total = sum(ops.values())
    # the node timers can add up to more than the inference's wall time (seen with a batch shape
    # met before): then they are read as shares of it
    scale = min(1.0, infer_s[0] / node_total) if node_total else 1.0
    parts = {"tokenise+window": py["tokenise+window"], "pad": py["pad"]}
    parts |= {f"openvino: {k}": v * scale for k, v in sorted(ops.items(), key=lambda kv: -kv[1])}
    parts["openvino: beyond the node timers"] = max(0.0, infer_s[0] - node_total)
    parts["decode"] = py["decode"]
    parts["python and the rest"] = max(0.0, profiled_s - py["tokenise+window"] - py["pad"] - infer_s[0] - py["decode"])
    return _result(name, backend, questions, plain_s, profiled_s, parts, by_op)


def _result(name, backend, questions, plain_s, profiled_s, parts, by_op) -> dict:
    n = len(questions)
    return {"model": name, "backend": backend, "n": n, "threads": 1,
            "ms_per_question_unprofiled": round(1000 * plain_s / n, 2),
            "ms_per_question_profiled": round(1000 * profiled_s / n, 2),
            "parts_ms_per_question": {k: round(1000 * v / n, 3) for k, v in parts.items()},
            "parts_share_percent": {k: round(100 * v / profiled_s, 1) for k, v in parts.items()},
            "operators_ms_per_question": {k: round(1000 * v / n, 3)
                                          for k, v in sorted(by_op.items(), key=lambda kv: -kv[1])}}


def _print(result: dict) -> None:
    print(f"\n{result['model']} ({result['backend']}, {result['n']} questions, 1 thread): "
          f"{result['ms_per_question_unprofiled']} ms a question unprofiled, "
          f"{result['ms_per_question_profiled']} profiled")
    print(f"{'part':38s} {'ms/question':>12s} {'share':>7s}")
    for part, ms in result["parts_ms_per_question"].items():
        print(f"{part:38s} {ms:12.2f} {result['parts_share_percent'][part]:6.1f}%")
    print("operators (ms a question): " + ", ".join(
        f"{op} {ms:.2f}" for op, ms in list(result["operators_ms_per_question"].items())[:10]))


@cli.command("benchmarks/profile_time.py")
def main(argv: list[str] | None = None) -> int:
    from core.datasets import load_dataset

    ap = cli.ArgumentParser(prog="benchmarks/profile_time.py", description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", help="a registered model (repeatable; default: "
                    + ", ".join(MODELS) + ")")
    ap.add_input("--dataset", paths=cli.dataset_files(), default="xquad/xquad.en")
    ap.add_argument("--n", type=cli.Bounded(1, MAX_QUESTIONS.value()), default=200,
                    help="questions from the start of the data set (default 200)")
    ap.add_output("--json", help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    examples = load_dataset(args.dataset).examples[: args.n]
    questions, contexts = [e.question for e in examples], [e.context for e in examples]
    results = [profile_model(m, questions, contexts) for m in (args.model or MODELS)]
    for r in results:
        _print(r)
    if args.json:
        cli.write_bytes_atomic(args.json, json.dumps(results, indent=1).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
