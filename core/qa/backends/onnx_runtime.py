"""The ONNX Runtime backends (``onnx``: fp32, ``onnx-int8``): the export, its cache and the sessions.

The ONNX model is exported once per set of weights, lazily, into
``<cache>/onnx/<weights digest>/`` (``model.onnx``; for int8 ``model-int8-per-token.onnx``, made
from its own fusion of the export in which attention keeps its query, key and value projections
as MatMuls, after core.qa.backends.int8_split has kept the outlier channels of the FFN output projections
in fp32 and core.qa.backends.int8_per_token has quantised every weight MatMul with one scale per token),
under a file lock so two processes (the app and a sweep) starting together do not write the same
files; later loads only open the files. A LoRA model is exported as the registry hands it over:
already merged into a plain model.

Why ONNX Runtime at all: its int8 answers 2.2-4.0x faster than eager torch fp32 on this 2-core
machine (fp32 ONNX only 0.94-1.11x on a quiet machine, more on a busy one: it degrades far less
than torch when another process uses the cores); docs/results/backends.md.
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
import shutil
from pathlib import Path

import numpy as np

from core.qa.backends.int8_per_token import integer_products_saturate

log = logging.getLogger(__name__)

# Part of the export folder's name: a change in how we export must not reuse old files.
# 2: int8 weights quantised per channel. 3: traced with padding in the example batch.
# 4: eager attention, fused by onnxruntime's transformer optimizer; int8 made from the fused graph.
# 5: residual adds and LayerNorms left apart, not fused into SkipLayerNormalization (see _fuse).
EXPORT_VERSION = 5
# onnxruntime's own fusion of Add + LayerNormalization into SkipLayerNormalization, made when a
# session opens; kept off for the reason in _fuse.
SESSION_DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]
# weights stored uint8 where int8 products saturate on this CPU (int8_per_token): another file, so a
# cache folder moved between machines never gives one CPU the other's graph
INT8_FILE = "model-int8-per-token-u8-weights.onnx" if integer_products_saturate() else "model-int8-per-token.onnx"
# The logit a per-window run leaves at a padded position: far below any real one, still finite.
PAD_LOGIT = -1e4
OPSET = 17
# Kernels that read an initializer as it is, keeping no repacked copy of their own: the embedding
# tables they read can be one buffer for every session of a file (ONNX Runtime's add_initializer).
# A MatMul's weights are repacked per session anyway, so sharing them would keep the unpacked
# original beside the copies.
TABLE_READERS = frozenset({"Gather", "EmbedLayerNormalization"})


def embedding_tables(path: Path) -> dict[str, tuple[np.ndarray, object]]:
    """{name: (array, OrtValue over it)} of the graph's initializers that only TABLE_READERS read.

    For the multilingual E5's int8 graph they are 367 of its 387 MB (a 250k-token vocabulary kept
    in fp32), which a second session held again (830 -> 482 MB resident for both sessions,
    logits identical bit for bit, the same speed; docs/results/demo-walk-2026-11-27.md)."""
    from collections import defaultdict

    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    readers: dict[str, set] = defaultdict(set)
    for node in graph.node:
        for name in node.input:
            readers[name].add(node.op_type)
    tables = {}
    for init in graph.initializer:
        if readers[init.name] and readers[init.name] <= TABLE_READERS:
            array = np.ascontiguousarray(numpy_helper.to_array(init))
            tables[init.name] = (array, ort.OrtValue.ortvalue_from_numpy(array))   # the array stays: ORT reads it
    return tables


class OnnxForward:
    """onnxruntime InferenceSessions over an exported model; takes the same numpy batch.

    A session's intra-op thread count is fixed when it is made, so there is one session per count
    asked for, made on first use: under the thread policy (core.qa.threads) at most two, the
    budget's (answering alone) and one thread (beside others). The sessions read one copy of the
    graph's embedding tables (:func:`embedding_tables`).

    ``per_window`` (the int8 backend): every window of a batch runs alone, cut to its own tokens.
    Alone, a window's logits are the same bit for bit whatever the batch or thread count, so one
    question gets one answer on the Ask page and in a sweep. With ONNX Runtime's per-tensor int8
    this was needed: one activation scale per batch made a window's answer depend on its batch
    neighbours and their padding (on 400 XQuAD-en questions, minilm-squad: 44 best spans differed
    between batches of 1 and 8). The per-token recipe (core.qa.backends.int8_per_token) keeps rows apart by
    itself; running alone still pads nothing, and on this 2-core machine the windows go to
    ``threads`` concurrent runs of the one-thread session (ONNX Runtime's ``run`` is thread-safe
    and releases the GIL), without a multi-threaded run's per-op synchronisation."""

    def __init__(self, path: Path, name: str, threads: int | None = None, per_window: bool = False):
        import threading

        from core.qa.threads import budget

        self.name, self.path, self.per_window = name, path, per_window
        self._sessions: dict[int, object] = {}
        self._lock = threading.Lock()
        # only worth reading when a second session may come (the policy, on more than one core)
        self._tables = embedding_tables(path) if threads is None and budget() > 1 else {}
        self._pool, self._pool_size = None, 0
        # made now, not on the hot path (opening one takes 0.3-0.7 s for MiniLM on this machine,
        # a tenth of a 64-question answer); a bad file fails here. Under the policy both counts,
        # opened at once: ONNX Runtime sets a session up without the GIL (E5's pair 2.5 -> 1.4 s)
        counts = [threads] if threads else sorted({1, budget()})
        if len(counts) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(counts)) as pool:
                list(pool.map(self._session, counts))
        self.session = self._session(counts[-1])  # the last one used
        self.inputs = {i.name for i in self.session.get_inputs()}

    def _session(self, threads: int):
        """The session of ``threads`` intra-op threads, opened on first use. Opened outside the
        lock, so two counts open at once; two callers racing for one count keep the first."""
        with self._lock:
            found = self._sessions.get(threads)
        if found is not None:
            return found
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        # the file is already optimised at export (fusions); ENABLE_ALL adds the
        # CPU-specific layout rewrites, which are not saved
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        for name, (_, value) in self._tables.items():
            opts.add_initializer(name, value)
        made = ort.InferenceSession(str(self.path), opts, providers=["CPUExecutionProvider"],
                                    disabled_optimizers=SESSION_DISABLED_OPTIMIZERS)
        with self._lock:
            return self._sessions.setdefault(threads, made)

    def held_bytes(self) -> int:
        """The graph file's bytes once per open session (each holds its own initializers), the
        shared embedding tables once."""
        shared = sum(array.nbytes for array, _ in self._tables.values())
        with self._lock:
            return (self.path.stat().st_size - shared) * len(self._sessions) + shared

    def __call__(self, enc: dict, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        feed = {k: np.asarray(v, dtype=np.int64) for k, v in enc.items() if k in self.inputs}
        if self.per_window:
            return self._each_window(feed, threads)
        self.session = session = self._session(threads)
        start, end = session.run(["start_logits", "end_logits"], feed)
        return start.astype(np.float32, copy=False), end.astype(np.float32, copy=False)

    def _each_window(self, feed: dict, threads: int) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) logits of each row run alone on its unpadded tokens; padded positions get
        PAD_LOGIT (the span decoding never reads them: they have no context offsets)."""
        rows, width = feed["input_ids"].shape
        mask = feed.get("attention_mask")
        # the positions of each row's own tokens: right or left padding alike
        kept = [np.arange(width) if mask is None else np.flatnonzero(mask[i]) for i in range(rows)]
        start = np.full((rows, width), PAD_LOGIT, dtype=np.float32)
        end = np.full((rows, width), PAD_LOGIT, dtype=np.float32)

        def one(i: int, session) -> None:
            s, e = session.run(["start_logits", "end_logits"], {k: v[i : i + 1, kept[i]] for k, v in feed.items()})
            start[i, kept[i]], end[i, kept[i]] = s[0], e[0]

        if threads > 1 and rows > 1:
            # one thread per run, ``threads`` runs at once: the same cores as one run on
            # ``threads`` threads, without its per-op synchronisation
            self.session = session = self._session(1)
            list(self._executor(threads).map(lambda i: one(i, session), range(rows)))
        else:
            self.session = session = self._session(threads)
            for i in range(rows):
                one(i, session)
        return start, end

    def _executor(self, size: int):
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            if self._pool_size != size:
                if self._pool is not None:
                    self._pool.shutdown(wait=False)
                self._pool = ThreadPoolExecutor(size, thread_name_prefix="onnx-window")
                self._pool_size = size
            return self._pool


def weights_digest(model) -> str:
    """sha256 over every tensor of the model's state dict (name, dtype, shape, bytes), with the
    model type: the export folder's key. The same digest means the same ONNX file would result."""
    import torch

    h = hashlib.sha256(f"v{EXPORT_VERSION}:opset{OPSET}:{getattr(model.config, 'model_type', '')}".encode())
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()[:24]


def export_dir(model) -> Path:
    from core.config import cache_dir

    return cache_dir() / "onnx" / weights_digest(model)


def _export(model, input_names: list[str], target: Path) -> None:
    """torch -> ONNX fp32 at ``target`` (written beside it, then renamed: a crash never leaves a
    half file under the final name). Batch and sequence axes are dynamic: the engine pads each
    batch only to its own longest window."""
    import copy

    import torch

    # A CPU fp32 copy: the engine's model may sit on a GPU or hold fp16 weights. Eager attention:
    # its graph is the pattern onnxruntime's optimizer fuses into one Attention op (:func:`_fuse`);
    # the SDPA graph transformers uses by default is not.
    m = copy.deepcopy(model).to("cpu").float().eval()
    if hasattr(m, "set_attn_implementation"):
        try:
            m.set_attn_implementation("eager")
        except (ValueError, NotImplementedError) as e:  # a model without eager attention: unfused
            log.info("exporting with the model's own attention (%s)", e)
    seq = 16
    # An example batch with padding (row 2 ends in 5 padded positions): traced on an all-ones
    # mask, an exporter could keep a graph that skips masking, and padded batches would differ.
    example = {"input_ids": torch.ones((2, seq), dtype=torch.long),
               "token_type_ids": torch.zeros((2, seq), dtype=torch.long),
               "attention_mask": torch.ones((2, seq), dtype=torch.long)}
    example["attention_mask"][1, -5:] = 0
    dummy = tuple(example.get(n, torch.ones((2, seq), dtype=torch.long)) for n in input_names)
    axes = {n: {0: "batch", 1: "sequence"} for n in input_names}
    axes.update({"start_logits": {0: "batch", 1: "sequence"}, "end_logits": {0: "batch", 1: "sequence"}})

    class _Logits(torch.nn.Module):
        # the exporter wants plain tensors out, not a ModelOutput
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            out = self.inner(**dict(zip(input_names, args)))
            return out.start_logits, out.end_logits

    tmp = target.with_suffix(".partial")
    import warnings

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
        torch.onnx.export(_Logits(m), dummy, str(tmp), input_names=input_names,
                          output_names=["start_logits", "end_logits"], dynamic_axes=axes,
                          opset_version=OPSET, dynamo=False)
    tmp.rename(target)


def _fuse(raw: Path, target: Path, config, multi_head: bool = False) -> None:
    """onnxruntime's transformer optimizer on the raw export: attention (BERT), bias+GELU and
    embedding+LayerNorm fused into single kernels; the same numbers, fewer passes over memory
    (MiniLM: identical spans to torch on 400 XQuAD-en questions, about 1.15x the unfused graph).
    MPNet's relative-position attention does not fuse; its GELUs do. opt_level 0: only these
    fusions are saved, not ORT's hardware-specific rewrites (those are made when a session opens,
    ORT_ENABLE_ALL).

    Not fused: residual add + LayerNorm into SkipLayerNormalization. On this CPU (onnxruntime
    1.31, one thread, 140 tokens x 384) that kernel takes 0.28 ms where Add, Add and
    LayerNormalization take 0.05 ms; in the int8 MiniLM graph it was 19% of the forward pass.
    Without it the int8 graph answers 1.2x faster, the fp32 graph 1.06x, with the same fp32
    logits (largest difference 1.4e-5). Sessions keep onnxruntime from making the fusion itself
    (SESSION_DISABLED_OPTIMIZERS).

    ``multi_head`` (the int8 graph): BERT attention fuses into MultiHeadAttention, which takes the
    query, key and value already projected, so their projections stay MatMuls that the per-token
    int8 rewrite quantises; the fp32 numbers are the same as the Attention op's (logit MSE 1e-12)."""
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    fusions = FusionOptions("bert")
    fusions.enable_skip_layer_norm = fusions.enable_bias_skip_layer_norm = False
    fusions.use_multi_head_attention = multi_head
    logging.disable(logging.WARNING)  # the optimizer logs every pattern it did not find
    try:
        opt = optimizer.optimize_model(str(raw), model_type="bert", opt_level=0, use_gpu=False,
                                       optimization_options=fusions,
                                       num_heads=getattr(config, "num_attention_heads", 0),
                                       hidden_size=getattr(config, "hidden_size", 0))
        tmp = target.with_name(target.stem + ".partial.onnx")
        opt.save_model_to_file(str(tmp))
    finally:
        logging.disable(logging.NOTSET)
    log.info("fused %s", {k: v for k, v in opt.get_fused_operator_statistics().items() if v})
    tmp.rename(target)


def _quantize(raw: Path, target: Path, config, tokenizer) -> None:
    """The int8 graph at ``target`` from the raw export at ``raw``: fused with MultiHeadAttention
    (:func:`_fuse`), its FFN output projections' outlier channels split off in fp32
    (core.qa.backends.int8_split, calibrated with ``tokenizer`` on the project's calibration text), then
    every other weight MatMul quantised per token (core.qa.backends.int8_per_token). Its temporary files
    are removed whatever happens."""
    import onnx

    from core.qa.backends.int8_per_token import quantize_per_token
    from core.qa.backends.int8_split import split_for_int8

    fused = target.with_name(target.stem + ".fused.partial.onnx")
    split = target.with_name(target.stem + ".split.partial.onnx")
    tmp = target.with_name(target.stem + ".partial.onnx")
    try:
        try:
            _fuse(raw, fused, config, multi_head=True)
            source = fused
        except Exception as e:  # unfused, attention's projections are MatMuls all the same
            log.warning("onnxruntime's optimizer failed (%s: %s); quantising the unfused export", type(e).__name__, e)
            source = raw
        kept_fp32 = split_for_int8(source, split, tokenizer)
        graph = onnx.load(str(split))
        done = quantize_per_token(graph, skip=set(kept_fp32))
        log.info("per-token int8: %d MatMuls quantised, %d outlier MatMuls kept fp32", len(done), len(kept_fp32))
        onnx.save(graph, str(tmp))
        tmp.rename(target)
    finally:
        for f in (fused, split, tmp):
            f.unlink(missing_ok=True)


def ensure_export(model, input_names: list[str], backend: str, folder: Path | None = None,
                  tokenizer=None) -> Path:
    """The ONNX file for ``backend`` ('onnx' or 'onnx-int8'), exported on the first call for these
    weights and only opened afterwards. One process exports, any other waits on the lock. int8
    needs the ``tokenizer`` (its calibration text is tokenised to find the outlier channels).

    Each backend's file is made from its own torch export, and only that file is kept: the int8
    graph is fused from the raw export, not from the fp32 file, so an int8 model keeps no fp32
    graph beside it (420-450 MB for an MPNet or the multilingual E5)."""
    if backend == "onnx-int8" and tokenizer is None:
        raise ValueError("the onnx-int8 export needs the model's tokenizer (its calibration)")
    folder = folder or export_dir(model)
    want = folder / (INT8_FILE if backend == "onnx-int8" else "model.onnx")
    if want.is_file():
        return want
    folder.mkdir(parents=True, exist_ok=True)
    raw = folder / "model-raw.onnx"  # torch's export, removed once the file is made
    with open(folder / "export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if want.is_file():  # made by the process this one waited for
                return want
            log.info("exporting the model to ONNX for %s at %s (once for these weights)", backend, want)
            _export(model, input_names, raw)
            if backend == "onnx-int8":
                _quantize(raw, want, model.config, tokenizer)
            else:
                try:
                    _fuse(raw, want, model.config)
                except Exception as e:  # the unfused graph gives the same numbers, only slower
                    log.warning("onnxruntime's optimizer failed (%s: %s); using the unfused export",
                                type(e).__name__, e)
                    tmp = want.with_name(want.stem + ".partial.onnx")
                    shutil.copyfile(raw, tmp)
                    tmp.rename(want)
        finally:
            raw.unlink(missing_ok=True)
    return want


def model_input_names(tokenizer, model) -> list[str]:
    """The inputs the model takes, in the tokenizer's order: MPNet has no token_type_ids."""
    import inspect

    params = inspect.signature(model.forward).parameters
    names = [n for n in getattr(tokenizer, "model_input_names", ["input_ids", "attention_mask"]) if n in params]
    return names if "input_ids" in names else ["input_ids", *names]

