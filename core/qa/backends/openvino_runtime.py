"""OpenVINO forward passes for the QA engine: ``openvino`` (bf16), ``openvino-int8`` (NNCF
post-training int8, the FFN output projections kept in bf16) and ``openvino-int8-full`` (every
weight product int8), behind the same callable as core.qa.backends's backends.

Why OpenVINO: its CPU plugin runs bf16 and int8 matrix products in this CPU's AMX tiles through
oneDNN, with attention, LayerNorm and GELU as fused kernels of its own. Issue 47's roofline put the
ONNX and torch defaults at 10-25% of the CPU's peak; docs/results/backends-openvino.md has what
these backends reach.

Both backends use bf16 arithmetic (``INFERENCE_PRECISION_HINT``) for what is not int8; like
torch-bf16 they are unavailable on a CPU without native bf16 (AVX512-BF16 or AMX), where emulated
bf16 would be slower than fp32 and the answers would differ from this machine's under one recipe
tag (core.compat.FINGERPRINT_TAGS).

Files, per set of weights, under ``<cache>/openvino/<weights digest>/<recipe>/`` (the digest is the
ONNX export folder's, core.qa.backends.onnx_runtime.weights_digest; the recipe folder changes with
IR_RECIPE, so a new recipe never reuses an old graph):
- ``model.xml``/``.bin``: the torch model converted with ``openvino.convert_model`` (fp32 weights,
  dynamic batch and sequence axes: the engine pads each batch only to its own longest window),
  kept only when the fp32 backend is asked for: the int8 graph's conversion is removed once it
  is quantised;
- ``model-int8-ffn-out-bf16.xml``/``.bin`` (``openvino-int8``) and ``model-int8-full.xml``/``.bin``
  (``openvino-int8-full``): that graph quantised by ``nncf.quantize`` (transformer preset; the
  first with the FFN output projections left out, FFN_OUTPUT_KEPT), calibrated on SQuAD
  *training* windows (CALIBRATION_PAIRS questions from the end of the shuffle
  benchmarks/backend_fidelity.py draws from its front), never on an evaluation set; their
  embedding tables then stored in bf16 (embedding_tables_in_bf16);
- ``compiled/``: OpenVINO's compiled-model cache (``CACHE_DIR``): a later load reads the compiled
  blob instead of compiling again; weightless (the weights read from the IR's .bin), so the blob
  is kilobytes to a few MB, not a second copy of the weights, in a folder per IR file and version
  (``compiled/<stem>-<.bin size>-<.bin mtime>/``).
Conversion and quantisation run once, under a file lock (the app and a sweep starting together do
not write the same files); later loads open the IR.
"""
from __future__ import annotations

import fcntl
import json
import logging
import random
import threading
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

# Part of the cache folder's name: a change in how the IR is made must not reuse old files.
IR_RECIPE = "ir-v1"
# Each int8 file's name carries its recipe (what it leaves out of int8): the fp32 IR stays valid
# across int8 recipes, and the two int8 backends' graphs sit side by side.
FP32_FILE = "model.xml"
INT8_FILES = {"openvino-int8": "model-int8-ffn-out-bf16.xml", "openvino-int8-full": "model-int8-full.xml"}
# The FFN output projections (the MatMuls fed by GELU, in the converted graph's torch module names:
# BERT, MPNet and XLM-R alike) are left out of int8 and run in bf16: their inputs carry the outlier
# channels core.qa.backends.int8_split describes. On 122 windows of 120 SQuAD-train questions (minilm-squad,
# the front of the shuffle, not the calibration's) the logit MSE against torch fp32 fell from 0.0106
# (everything int8) to 0.0041, start/end argmax agreement from 96.7% to 97.1%; bf16 alone: 0.00023.
# Kept in bf16 they cost speed (MPNet 1.25x, MiniLM 1.22x at fixed shapes): openvino-int8-full
# quantises them too, and a model's card makes it the default only where its F1 stays within the
# rule's bound that way (docs/results/speed-2026-11-28.md).
FFN_OUTPUT_KEPT = r".*encoder\.layer\.\d+\.output\.dense/aten::linear/MatMul"
# What each int8 backend leaves out of int8 (NNCF ignored-scope patterns).
INT8_KEPT = {"openvino-int8": (FFN_OUTPUT_KEPT,), "openvino-int8-full": ()}
# SQuAD v1.1 training questions (the data directory's), the calibration set of the int8 graph.
TRAIN_FILE = "train/squad/train-v1.1-first4370.json"
CALIBRATION_PAIRS = 128
# The shuffle benchmarks/backend_fidelity.py (via int8_sensitivity.training_pairs) takes its
# evaluation questions from the front of; calibration takes its own from the back.
CALIBRATION_SEED = 1
PIP_HINT = "pip install openvino==2026.4.0 nncf==3.4.0"


def openvino_unavailable(backend: str, device) -> str | None:
    """Why ``backend`` (one of the OpenVINO backends) cannot run on ``device`` (a torch.device or
    its type) here (None when it can), without building or importing anything."""
    import importlib.util

    from core.qa.backends.torch_eager import bf16_unavailable

    kind = getattr(device, "type", device)
    if kind != "cpu":
        return f"the OpenVINO backends run on the CPU, not on {kind}"
    # installed or not, found without importing them (nncf imports torch: seconds)
    if importlib.util.find_spec("openvino") is None:
        return f"openvino is not installed: {PIP_HINT}"
    if backend in INT8_FILES and importlib.util.find_spec("nncf") is None:
        return f"nncf (the int8 calibration) is not installed: {PIP_HINT}"
    return bf16_unavailable(device)


def ir_dir(model) -> Path:
    from core.config import cache_dir
    from core.qa.backends.onnx_runtime import weights_digest

    return cache_dir() / "openvino" / weights_digest(model) / IR_RECIPE


def squad_train_pairs(n: int, seed: int = CALIBRATION_SEED) -> list[tuple[str, str]]:
    """The last ``n`` (question, context) pairs of SQuAD's training set shuffled with ``seed``."""
    from core.config import data_dir

    root = data_dir()
    path = (root / TRAIN_FILE) if root else Path(TRAIN_FILE)
    if not path.is_file():
        raise FileNotFoundError(f"the int8 calibration needs SQuAD training questions at {path}")
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    pairs = [(qa["question"], p["context"]) for a in data for p in a["paragraphs"] for qa in p["qas"]]
    random.Random(seed).shuffle(pairs)
    return pairs[-n:]


def _convert(model, input_names: list[str]):
    """torch -> an OpenVINO model with dynamic (batch, sequence) inputs and named logits."""
    import copy
    import warnings

    import openvino as ov
    import torch

    m = copy.deepcopy(model).to("cpu").float().eval()  # the engine's model may sit on a GPU

    class _Logits(torch.nn.Module):
        # the converter wants plain tensors out, not a ModelOutput
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            kw = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                kw["token_type_ids"] = token_type_ids
            out = self.inner(**kw)
            return out.start_logits, out.end_logits

    seq = 16
    # An example with padding (row 2 ends in 5 padded positions): traced on an all-ones mask, a
    # converter could keep a graph that skips masking.
    example = {"input_ids": torch.ones((2, seq), dtype=torch.long),
               "attention_mask": torch.ones((2, seq), dtype=torch.long),
               "token_type_ids": torch.zeros((2, seq), dtype=torch.long)}
    example["attention_mask"][1, -5:] = 0
    example = {n: example[n] for n in input_names}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on Python control flow
        converted = ov.convert_model(_Logits(m), example_input=example,
                                     input=[(n, ov.PartialShape([-1, -1]), ov.Type.i64) for n in input_names])
    converted.outputs[0].get_tensor().set_names({"start_logits"})
    converted.outputs[1].get_tensor().set_names({"end_logits"})
    return converted


def _quantize(converted, config, tokenizer, input_names: list[str], kept: tuple[str, ...]):
    """NNCF's post-training int8 of ``converted`` but for the ops matching ``kept``, calibrated on
    SQuAD-train windows of the engine's shape (384 tokens, stride 128, cut to the positions the
    model has), one window per calibration item so that no statistic sees padding."""
    import nncf

    from core.qa.features import build_windows

    max_length = min(384, calibration_positions(config))
    pairs = squad_train_pairs(CALIBRATION_PAIRS)
    windows = build_windows(tokenizer, [q for q, _ in pairs], [c for _, c in pairs],
                            max_length=max_length, stride=min(128, max_length // 2))
    items = []
    for w in windows:
        enc = tokenizer.pad([{"input_ids": w.input_ids, **w.extra}], return_tensors="np")
        items.append({k: np.asarray(v, dtype=np.int64) for k, v in enc.items() if k in input_names})
    # validate=False: a graph whose names do not match (another architecture) is quantised whole
    ignored = nncf.IgnoredScope(patterns=list(kept), validate=False)
    return nncf.quantize(converted, nncf.Dataset(items), model_type=nncf.ModelType.TRANSFORMER,
                         subset_size=len(items), ignored_scope=ignored)


def calibration_positions(config) -> int:
    """The longest window the model's position embeddings allow (the engine's rule: MPNet and
    RoBERTa keep two positions for the padding offset).

    >>> from types import SimpleNamespace
    >>> calibration_positions(SimpleNamespace(max_position_embeddings=514, model_type="mpnet"))
    512
    """
    limit = getattr(config, "max_position_embeddings", 512)
    return limit - 2 if getattr(config, "model_type", "") in ("mpnet", "roberta", "xlm-roberta") else limit


def ensure_ir(model, tokenizer, backend: str, input_names: list[str], folder: Path | None = None) -> Path:
    """The IR file for ``backend``, converted (and for int8 quantised) on the first call for these
    weights and only opened afterwards. One process converts, any other waits on the lock."""
    import openvino as ov

    folder = folder or ir_dir(model)
    fp32 = folder / FP32_FILE
    want = folder / INT8_FILES[backend] if backend in INT8_FILES else fp32
    if want.is_file():
        return want
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "convert.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if want.is_file():  # made by the process this one waited for
            return want
        if backend not in INT8_FILES:
            log.info("converting the model to OpenVINO at %s (once for these weights)", fp32)
            _save(ov, _convert(model, input_names), fp32)
            return want
        # int8 is quantised from the fp32 IR as saved and read back (saving transforms the graph:
        # quantising the in-memory conversion could give other int8 weights); an fp32 IR made only
        # for this is removed after, so an int8 model keeps no 435-470 MB fp32 IR beside it
        source = fp32
        if not fp32.is_file():
            source = folder / "model-fp32-for-int8.partial.xml"
            _save(ov, _convert(model, input_names), source)
        try:
            log.info("quantising the OpenVINO model to int8 at %s (once for these weights)", want)
            graph = ov.Core().read_model(str(source))
            quantised = _quantize(graph, model.config, tokenizer, input_names, INT8_KEPT[backend])
            embedding_tables_in_bf16(quantised)
            _save(ov, quantised, want)
        finally:
            if source != fp32:
                source.unlink(missing_ok=True)
                source.with_suffix(".bin").unlink(missing_ok=True)
    return want


def embedding_tables_in_bf16(graph) -> int:
    """Store each int8 embedding table of ``graph`` (an int8 constant, converted and scaled per row,
    then gathered) as one bf16 constant, rounded to nearest (ties to even); returns how many.

    Why: once a graph holds int8 matrix products, the CPU plugin's low-precision pipeline folds such
    a table's dequantisation into an fp32 constant at compile time, so each compiled model (and its
    cached blob) held the table in fp32: 384 MB for E5's 250,037 x 384 rows. The plugin rounds the
    gathered rows to bf16 before anything uses them (the sum with the position embeddings runs in
    bf16), so a bf16 table rounded the same way gives the same logits bit for bit
    (tests/test_openvino_backend.py) at half the fp32 table's memory. Graphs saved before this are
    rewritten when they are opened (OpenVinoForward); nothing matches twice."""
    import openvino as ov
    import openvino.opset13 as ops

    rewritten = 0
    for gather in graph.get_ordered_ops():
        if gather.get_type_name() != "Gather":
            continue
        scaled = gather.input_value(0).get_node()
        if scaled.get_type_name() != "Multiply":
            continue
        widened, scale = (scaled.input_value(i).get_node() for i in (0, 1))
        if (widened.get_type_name() != "Convert" or widened.get_output_element_type(0) != ov.Type.f32
                or scale.get_type_name() != "Constant"):
            continue
        table = widened.input_value(0).get_node()
        if table.get_type_name() != "Constant" or table.get_element_type() not in (ov.Type.i8, ov.Type.u8):
            continue
        rows, per_row = table.get_data(), scale.get_data()
        if rows.ndim != 2 or per_row.shape != (rows.shape[0], 1):
            continue
        bf16 = ov.Tensor(ov.Type.bf16, list(rows.shape))
        bits = bf16.data.view(np.uint16)
        for start in range(0, rows.shape[0], 8192):   # in slices: no second full-size fp32 copy
            part = (rows[start:start + 8192].astype(np.float32) * per_row[start:start + 8192]).view(np.uint32)
            bits[start:start + 8192] = (part + 0x7FFF + ((part >> 16) & 1)) >> 16
        lookup = ops.gather(ops.constant(bf16), gather.input_value(1), gather.input_value(2),
                            gather.get_attributes().get("batch_dims", 0))
        gather.output(0).replace(ops.convert(lookup, ov.Type.f32).output(0))
        rewritten += 1
    return rewritten


def _save(ov, graph, target: Path) -> None:
    """``graph`` at ``target`` (.xml and .bin written under a temporary name, the .bin renamed
    first: a crash never leaves an .xml under the final name without its weights)."""
    tmp = target.with_name(target.stem + ".partial.xml")
    # fp32 weights kept as they are: save_model would otherwise halve them to fp16
    ov.save_model(graph, str(tmp), compress_to_fp16=False)
    tmp.with_suffix(".bin").rename(target.with_suffix(".bin"))
    tmp.rename(target)


def compile_properties(threads: int) -> dict:
    """The CPU plugin's settings for one compiled model on ``threads`` threads.

    No pinning: OpenVINO pins each process's threads from the first CPU on, so two one-thread
    processes (a sweep's worker pool, or a second app) would share one core and leave the other idle.
    """
    return {"INFERENCE_PRECISION_HINT": "bf16", "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "LATENCY", "ENABLE_CPU_PINNING": False}


class OpenVinoForward:
    """Compiled OpenVINO models over an IR file; takes the engine's numpy batch (any width: the
    inputs are dynamic) and returns float32 (start, end) logits.

    The thread count is fixed when a model is compiled, so there is one compiled model per count
    asked for, as in onnx_runtime.OnnxForward; infer requests are not thread-safe, so each call
    takes one from a free list (Streamlit sessions share one engine)."""

    def __init__(self, path: Path, name: str, threads: int | None = None):
        import openvino as ov

        from core.qa.threads import budget

        self.name, self.path = name, path
        self.core = ov.Core()
        graph, rewritten = self._read()
        # A graph as its file holds it is cached weightless: the blob keeps the compiled graph and
        # reads the weights from the IR's .bin (MPNet's 130 MB blob becomes 2 MB, the logits the
        # same to the bit); one rewritten when read (saved before its tables were bf16) is not.
        # OpenVINO keys a weightless blob by the graph without its weights' values, so the folder
        # is keyed by the .bin's size and time: an IR written again never meets an older blob.
        self.weightless = not rewritten
        compiled = path.parent / "compiled"
        if self.weightless:
            weights = path.with_suffix(".bin").stat()
            compiled = compiled / f"{path.stem}-{weights.st_size}-{weights.st_mtime_ns}"
        self.core.set_property({"CACHE_DIR": str(compiled)})
        self.inputs = {i.get_any_name() for i in graph.inputs}
        self._compiled: dict[int, object] = {}
        self._free: dict[int, list] = {}
        self._lock = threading.Lock()
        self.loaded_from_cache: dict[int, bool] = {}
        # compiled now, not on the hot path (a bad file fails here); under the policy both counts
        for count in ([threads] if threads else sorted({1, budget()})):
            self._model(count, graph)
        # Each compiled model holds its own weights: the graph read from the file is not kept
        # (MPNet's 157 MB; another thread count asked for later reads the file again).
        del graph

    def read_graph(self):
        """The graph as compiled: read from the file, its embedding tables in bf16."""
        return self._read()[0]

    def _read(self):
        """The graph, and whether it had to be rewritten (saved before its tables were bf16)."""
        graph = self.core.read_model(str(self.path))
        return graph, embedding_tables_in_bf16(graph) > 0

    def _model(self, threads: int, graph=None):
        with self._lock:
            if threads not in self._compiled:
                graph = graph if graph is not None else self.read_graph()
                properties = compile_properties(threads)
                if self.weightless:
                    properties |= {"ENABLE_WEIGHTLESS": True, "CACHE_MODE": "OPTIMIZE_SIZE",
                                   "WEIGHTS_PATH": str(self.path.with_suffix(".bin"))}
                compiled = self.core.compile_model(graph, "CPU", properties)
                self.loaded_from_cache[threads] = bool(compiled.get_property("LOADED_FROM_CACHE"))
                self._compiled[threads], self._free[threads] = compiled, []
            return self._compiled[threads]

    def __call__(self, enc: dict, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        compiled = self._model(threads)
        with self._lock:
            request = self._free[threads].pop() if self._free[threads] else compiled.create_infer_request()
        try:
            feed = {k: np.asarray(v, dtype=np.int64) for k, v in enc.items() if k in self.inputs}
            request.infer(feed)
            # copies: the request's output buffers are reused by its next inference
            start = np.array(request.get_tensor("start_logits").data, dtype=np.float32)
            end = np.array(request.get_tensor("end_logits").data, dtype=np.float32)
        finally:
            with self._lock:
                self._free[threads].append(request)
        return start, end


def make_openvino_forward(backend: str, model, tokenizer, input_names: list[str], threads: int | None = None):
    """The forward callable for ``backend``, its IR made once into the cache."""
    return OpenVinoForward(ensure_ir(model, tokenizer, backend, input_names), backend, threads)
