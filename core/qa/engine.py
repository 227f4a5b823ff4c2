"""The batched extractive-QA engine: one object serves the Ask page and the sweeps.

Speed comes from three things: windows of all pairs are sorted by length so a batch holds
similar lengths, each batch is padded only to its own longest window (dynamic padding), and
inference runs under ``torch.inference_mode``. The thread count is configurable because on a
small machine the app and a sweep share the cores.
"""
from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.compat import fingerprint_suffix
from core.qa.backends.selection import BackendUnavailable, check_backend, make_forward, open_graph
from core.qa.decode import best_spans, has_word, window_candidates
from core.qa.features import build_windows
from core.qa.padding import PaddingCount
from core.qa.threads import Slot
from core.types import Prediction

ProgressFn = Callable[[int, int], None]
log = logging.getLogger(__name__)


class QAInputError(ValueError):
    """A question or context the engine cannot answer; the message says why, ``reason`` names the
    kind in a few words (what core.models.evaluate counts its skipped questions by)."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason or message


MAX_QUESTION_CHARS = 2000
MAX_CONTEXT_CHARS = 200_000


class SettingsError(ValueError):
    """An engine setting (or ``n_best``) out of range; raised where the value enters, so a bad
    value never reaches a forward pass or the prediction cache. ``setting`` names the field and
    ``problem`` says what is wrong with it (a CLI names its flag instead: core.cli)."""

    def __init__(self, setting: str, problem: str):
        super().__init__(f"{setting} {problem}")
        self.setting, self.problem = setting, problem


# The smallest window worth running: a question cut to a few tokens plus some context.
MIN_MAX_LENGTH = 32


def engine_settings(**flags) -> "EngineSettings":
    """EngineSettings from a command line's flag values (``batch_size=...``); a bad one is a
    CLIError naming the flag: ``--batch-size must be at least 1, got -1`` (core.cli's one line)."""
    from core.cli import CLIError

    try:
        return EngineSettings(**flags)
    except SettingsError as exc:
        raise CLIError(f"--{exc.setting.replace('_', '-')} {exc.problem}") from None


def check_count(name: str, value, minimum: int = 1, optional: bool = False):
    """``value`` as an int when it is a whole number >= ``minimum`` (or None when ``optional``),
    else SettingsError naming the setting. bool is refused: ``True`` is not a batch size.

    >>> check_count("n_best", 3), check_count("threads", None, optional=True)
    (3, None)
    >>> check_count("batch_size", -1)
    Traceback (most recent call last):
    ...
    core.qa.engine.SettingsError: batch_size must be at least 1, got -1
    >>> check_count("top_k", 2.5)
    Traceback (most recent call last):
    ...
    core.qa.engine.SettingsError: top_k must be a whole number, got 2.5
    """
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise SettingsError(name, f"must be a whole number, got {value!r}")
    if value < minimum:
        raise SettingsError(name, f"must be at least {minimum}, got {value}")
    return int(value)


# Per field: (minimum, None allowed). Checked on every assignment, not only in the constructor:
# a CLI or page that sets ``engine.settings.batch_size = -1`` later is refused on that line.
_LIMITS = {"max_length": (MIN_MAX_LENGTH, False), "stride": (0, False), "max_answer_tokens": (1, False),
           "batch_size": (1, True), "top_k": (1, False), "threads": (1, True),
           "long_context_chars": (1, False), "long_max_length": (MIN_MAX_LENGTH, False),
           "long_stride": (0, False)}


@dataclass
class EngineSettings:
    """How the engine windows, batches and decodes. Every field is validated whenever it is set
    (construction, ``dataclasses.replace``, or a later ``settings.x = ...``): a bad value raises
    SettingsError at once instead of giving empty answers that a cache would keep.

    ``stride`` larger than the window allows is cut down by the engine (at most half of
    ``max_length``), as is ``max_length`` beyond what the model's positions allow.
    """

    max_length: int = 384
    stride: int = 128
    max_answer_tokens: int = 30
    # None: 8 windows on CPU, 256 on a GPU. On CPU big padded batches are slower per window:
    # 2 cores, 300 XQuAD-en questions, MiniLM 28.6 q/s at 8 against 22.4 at 32, MPNet 6.3 against
    # 4.8 (python benchmarks/qa_throughput.py --batch-sizes 2,4,8,32). On an H100 the whole engine
    # answered all 1,190 XQuAD-en questions with MiniLM at 376 q/s at 32, 816-986 at 128,
    # 1,111-1,121 at 256 and 768-1,082 at 512 (two runs; docs/results/backends.md, issue 27).
    batch_size: int | None = None
    top_k: int = 20
    # None: the process-wide policy (core.qa.threads: every core when answering alone, one thread
    # beside other askers or a sweep; QAX_THREADS sets the budget). A number: always that many.
    threads: int | None = None
    # How the forward pass runs (core.qa.backends): "torch", "torch-bf16" (bf16 weights, where
    # the CPU computes in bf16), "onnx" (ONNX Runtime fp32), "onnx-int8" (per-token int8),
    # "openvino" (bf16), "openvino-int8" (NNCF int8, FFN outputs in bf16) and "openvino-int8-full"
    # (every weight product int8; core.qa.backends.openvino_runtime), or "default":
    # the model's own default, measured by the rule and recorded in its card (the engine's
    # ``default_backend``; torch without a card). A backend that cannot run here falls back to
    # torch; ``backend_name`` says which one answered.
    backend: str = "default"
    # Long contexts (at least ``long_context_chars`` characters) are read in bigger windows: a
    # 20k-character context needs ~12 windows of 512 sharing 128 instead of ~17 of 384 (docs/results/long-context.md,
    # benchmarks/long_context.py: 20% less CPU per question and a higher F1 on 36 SQuAD dev
    # documents than 384/128; 512/64 was cheaper still but lower in EM). Every SQuAD, XQuAD and
    # CMRC context is shorter than 8,000 characters, so their answers do not change.
    long_context_chars: int = 8000
    long_max_length: int = 512
    long_stride: int = 128

    def __setattr__(self, name: str, value) -> None:
        if name in _LIMITS:
            minimum, optional = _LIMITS[name]
            value = check_count(name, value, minimum, optional)
        elif name == "backend":
            try:
                value = check_backend(value)
            except ValueError as e:
                raise SettingsError("backend", str(e)) from None
        super().__setattr__(name, value)


def validate_pair(question: str, context: str) -> None:
    if not question or not question.strip():
        raise QAInputError("The question is empty.", "empty question")
    if not context or not context.strip():
        raise QAInputError("The context is empty.", "empty context")
    if not has_word(context):
        # punctuation only: any span would be an answer made of punctuation ("? ...")
        raise QAInputError("The context holds no word (no letter or digit): there is nothing to answer with.",
                           "context without a word")
    if len(question) > MAX_QUESTION_CHARS:
        raise QAInputError(
            f"The question is {len(question):,} characters long; the limit is {MAX_QUESTION_CHARS:,}.",
            "question too long",
        )
    if len(context) > MAX_CONTEXT_CHARS:
        raise QAInputError(
            f"The context is {len(context):,} characters long; the limit is {MAX_CONTEXT_CHARS:,}.",
            "context too long",
        )


def answerable_pair(question: str, context: str) -> bool:
    """Whether any engine can be asked ``question`` about ``context`` (:func:`validate_pair` passes).

    >>> answerable_pair("Who?", "Ann ran."), answerable_pair("  ", "Ann ran."), answerable_pair("Who?", "...")
    (True, False, False)
    """
    try:
        validate_pair(question, context)
    except QAInputError:
        return False
    return True


class TorchWeights:
    """An engine's torch model, held or let go of: an engine whose forward pass is an ONNX or
    OpenVINO graph needs its torch weights only for a view that reads them (attribution) or a
    switch of backend, so the engine cache (core.qa.engine_cache) drops them after the graph is
    made, and :meth:`get` loads them again (with ``reload``) the first time one is asked for.
    Shared by an engine and its views (QAEngine.with_settings): one copy for all of them."""

    def __init__(self, model, reload: Callable[[], object] | None = None):
        self.model, self.reload, self.device = model, reload, None
        self.digest = None  # sha256 state after the weights and the tokenizer (QAEngine.fingerprint)
        self.reloads = 0  # how many times the weights came back after release
        self._lock = threading.Lock()

    def get(self):
        model = self.model
        if model is not None:
            return model
        with self._lock:
            if self.model is None:
                if self.reload is None:
                    raise RuntimeError("this engine let go of its torch weights and cannot load them again")
                model = self.reload()
                if self.device is not None:
                    model.to(self.device)
                model.eval()
                self.model, self.reloads = model, self.reloads + 1
            return self.model


class QAEngine:
    """Extractive QA over any ``AutoModelForQuestionAnswering`` and its fast tokenizer; implements
    core.qa.protocol.QAModel (``predict``, ``fingerprint``, ``languages``)."""

    def __init__(self, model, tokenizer, settings: EngineSettings | None = None, device: str | None = None,
                 languages: Sequence[str] | None = None, default_backend: str = "torch",
                 reload_model: Callable[[], object] | None = None, receipt=None):
        # ``reload_model``: loads the same weights again, so that an engine answering with ONNX or
        # OpenVINO may let go of its torch copy (release_torch) and get it back when asked.
        # ``receipt`` (core.qa.receipts.Receipt): what earlier loads of the same files found; the
        # engine records into it, and with ``model`` None starts without its torch weights (they
        # load when read) and opens the graph the receipt names.
        if model is None and (receipt is None or not receipt.complete or reload_model is None):
            raise ValueError("an engine without its model needs a complete receipt and reload_model")
        self._weights = TorchWeights(model, reload_model)
        self._receipt = receipt
        self.config = model.config if model is not None else None
        self.tokenizer = tokenizer
        # what backend="default" means for this model (core.qa.registry reads it from the card)
        self.default_backend = check_backend(default_backend)
        if self.default_backend == "default":
            raise SettingsError("default_backend", "must name a backend, not 'default'")
        # what the model was made for (the registry's entry says); None: not declared
        self.languages = tuple(languages) if languages is not None else None
        # The tokenizer as loaded, for fingerprint(): calling a fast
        # tokenizer with truncation rewrites its truncation state in place (minilm-squad's loads
        # as 256/96 and reads 384/128 after one answer), so a hash of its JSON taken later would
        # depend on what the engine did before, and the app's sweeps would not match the CLI's.
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self.tokenizer_json = backend.to_str() if backend is not None else None
        self.settings = settings or EngineSettings()
        if model is not None:
            positions = getattr(model.config, "max_position_embeddings", 512)
            model_type = getattr(model.config, "model_type", "")
            folder = getattr(tokenizer, "name_or_path", "")
            if receipt is not None and folder and Path(folder).is_dir():
                receipt.record(tokenizer=str(Path(folder).resolve()), positions=positions, model_type=model_type)
        else:
            positions, model_type = receipt.data["positions"], receipt.data["model_type"]
        self.position_limit = positions
        self.model_type = model_type   # the config's, e.g. "bert": which model class its torch weights need
        # MPNet/RoBERTa reserve two positions for the padding offset.
        if model_type in ("mpnet", "roberta", "xlm-roberta"):
            self.position_limit -= 2
        self.settings.max_length, self.settings.stride = self._window_shape()
        import torch

        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        if self.settings.batch_size is None:
            self.settings.batch_size = self.default_batch_size()
        self._weights.device = self.device
        if model is not None:
            model.to(self.device)
            model.eval()
        # The forward strategy, made for the backend and remade when that setting changes.
        self._forward_impl = None
        self._forward_key: tuple | None = None
        # Streamlit sessions share one engine: one of them remakes the forward pass at a time.
        self._backend_lock = threading.Lock()
        self.backend_name = "torch"  # the backend that actually answers
        self.backend_message: str | None = None  # why a requested backend fell back to torch
        # real and padding tokens of every batch this engine ran (core.qa.padding; always on, a
        # sum per batch): how much of the forward passes' work was padding
        self.padding = PaddingCount()
        self.resolve_backend()

    @property
    def model(self):
        """The torch model (loaded again first when the engine let go of it: release_torch)."""
        return self._weights.get()

    @model.setter
    def model(self, model) -> None:
        self._weights = TorchWeights(model, self._weights.reload if hasattr(self, "_weights") else None)

    @property
    def _weights_digest(self):
        """sha256 state after the weights and the tokenizer, hashed once (fingerprint())."""
        return self._weights.digest

    @_weights_digest.setter
    def _weights_digest(self, digest) -> None:
        self._weights.digest = digest

    @property
    def holds_torch(self) -> bool:
        """Whether the torch weights are in memory now."""
        return self._weights.model is not None

    @property
    def torch_reloads(self) -> int:
        """How many times the torch weights came back after release_torch."""
        return self._weights.reloads

    def torch_bytes(self) -> int:
        """Bytes of the torch tensors held now (0 after release_torch)."""
        model = self._weights.model
        if model is None:
            return 0
        return sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))

    def graph_bytes(self) -> int:
        """Bytes of graph files the forward pass holds open (an ONNX session holds its file's
        initializers in memory; 0 for the torch backends)."""
        held = getattr(self._forward_impl, "held_bytes", None)
        return int(held()) if callable(held) else 0

    def release_torch(self) -> bool:
        """Let go of the torch weights when a graph of another backend answers (ONNX, OpenVINO or
        torch-bf16's own bf16 copy) and they can be loaded again; the fingerprint is hashed first,
        so it stays the same. True when they were let go of. The weights come back, once, the
        first time :attr:`model` is read (an attribution, a switch to torch)."""
        if self.resolve_backend() == "torch" or self._weights.reload is None or not self.holds_torch:
            return False
        if self._weights_digest is None:
            self._weights_digest = self._hash_weights_and_tokenizer()
        if self._receipt is not None:
            self.fingerprint()   # onto the receipt: the next load needs no weights for it
        self._weights.model = None
        return True

    def with_settings(self, settings: EngineSettings) -> QAEngine:
        """This engine answering under ``settings``: its own settings (windows, answer cap,
        threads) over the same weights, tokenizer and forward pass, so a second set of sidebar
        settings costs no second copy of the model. A different backend is made (or loaded) by
        the view when it first answers."""
        import copy

        view = copy.copy(self)
        view.settings = EngineSettings(**vars(settings))
        view.settings.max_length, view.settings.stride = view._window_shape()
        if view.settings.batch_size is None:
            view.settings.batch_size = view.default_batch_size()
        view.padding = PaddingCount()
        return view

    def resolve_backend(self) -> str:
        """The name of the backend that will answer with the current settings, making (and for
        ONNX, exporting once into the cache) its forward pass if the settings changed. A backend
        that cannot run here logs a warning and torch answers: never a crash."""
        s = self.settings
        if s.backend == "default":  # the card's choice was measured on CPU; a GPU runs torch
            wanted = self.default_backend if self.device.type == "cpu" else "torch"
        else:
            wanted = s.backend
        key = (wanted,)
        if key == self._forward_key:
            return self.backend_name
        with self._backend_lock:
            if key == self._forward_key:
                return self.backend_name
            try:
                # threads: which ONNX sessions to open now (others open when first asked for)
                impl = self._open_recorded_graph(wanted, s.threads)
                if impl is None:
                    impl = make_forward(wanted, self.model, self.tokenizer, self.device, s.threads)
                    if self._receipt is not None and getattr(impl, "path", None) is not None:
                        self._receipt.record(graphs={wanted: str(Path(impl.path).resolve())})
                message = None
            except BackendUnavailable as e:
                message = f"backend {wanted!r} unavailable, answering with torch: {e}"
                log.warning(message)
                impl = make_forward("torch", self.model, self.tokenizer, self.device)
            self.backend_name, self.backend_message = impl.name, message
            self._forward_impl, self._forward_key = impl, key
        return self.backend_name

    def _open_recorded_graph(self, backend: str, threads: int | None):
        """The forward pass over the graph the receipt names for ``backend`` (no torch weights
        needed), or None: none recorded, not on a CPU, or it does not open (then the weights
        find or make the graph, as without a receipt)."""
        if self._receipt is None or self.device.type != "cpu":
            return None
        path = self._receipt.graph(backend)
        if path is None:
            return None
        try:
            return open_graph(backend, path, threads)
        except Exception as e:  # a graph another version left, a backend gone: the usual way
            log.warning("could not open the recorded %s graph %s (%s: %s); loading the weights",
                        backend, path, type(e).__name__, e)
            return None

    def fingerprint(self) -> str:
        """A hash that changes whenever this engine could answer differently: the key of its
        cached predictions (core.sweeps.keys' prediction keys).

        Hashed from the weights (every tensor of the state dict, in name order), the tokenizer (the
        fast tokenizer's JSON as loaded) and the settings that change answers: max_length and
        stride as the engine windows with them (cut to what the model allows), max_answer_tokens,
        top_k, ``long_context_chars`` when not 8000, and the backend that answers when it is not
        torch (an ONNX backend that fell back is torch). ``batch_size`` and ``threads`` only change
        speed: minilm-squad on 300 XQuAD-en questions gives the same 300 spans at batch sizes 1, 8
        and 32 (scores within 2e-6), so sweeps run at any batch size share their cache. The
        weights are hashed once per engine (~0.1 s per 100 MB), the settings on every call: a
        setting changed later changes the fingerprint. Stored sweeps depend on these bytes:
        tests/test_protocol.py pins them for a shipped model.
        """
        return self.fingerprint_with(self.resolve_backend())

    def fingerprint_with(self, backend: str) -> str:
        """The fingerprint this engine has when ``backend`` answers (computed, nothing exported):
        how a stored sweep's backend is recognised from its fingerprint (core.sweeps.running.backends)."""
        s = self.settings
        max_length, stride = self._window_shape()
        # The long-context threshold and the backend, each hashed only when not the value it had
        # before it existed (core.compat.fingerprint_suffix), so stored fingerprints stay; the long
        # shape itself joins the key of each long context's prediction (long_context_tag), since
        # before it existed long contexts were read like short ones.
        line = f"{max_length}:{stride}:{s.max_answer_tokens}:{s.top_k}" + fingerprint_suffix(s.long_context_chars,
                                                                                             backend)
        if self._weights_digest is None and self._receipt is not None:
            known = self._receipt.fingerprint(line)
            if known is not None:
                return known
        if self._weights_digest is None:
            self._weights_digest = self._hash_weights_and_tokenizer()
        h = self._weights_digest.copy()
        h.update(line.encode())   # hashing a+b is hashing a, then b
        found = h.hexdigest()[:20]
        if self._receipt is not None and self._receipt.fingerprint(line) != found:   # written once, not per call
            self._receipt.record(fingerprints={line: found})
        return found

    def _hash_weights_and_tokenizer(self):
        """sha256 over the weights (every tensor, in name order) and the tokenizer as loaded."""
        import torch

        h = hashlib.sha256()
        for name, tensor in sorted(self.model.state_dict().items()):
            t = tensor.detach().to("cpu").contiguous()
            h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        h.update((self.tokenizer_json or repr(self.tokenizer)).encode())
        return h

    def default_batch_size(self) -> int:
        return 8 if self.device.type == "cpu" else 256

    def _window_shape(self, long: bool = False) -> tuple[int, int]:
        """(max_length, stride) as the model allows: at most its positions, the stride at most half
        a window. Applied at construction and again per call, since settings may change between.
        ``long``: the shape for a context of at least ``long_context_chars`` characters."""
        s = self.settings
        want, stride = (s.long_max_length, s.long_stride) if long else (s.max_length, s.stride)
        max_length = min(want, self.position_limit)
        return max_length, min(stride, max_length // 2)

    def is_long(self, context: str) -> bool:
        """Whether ``context`` is read with the long-context window shape."""
        return len(context) >= self.settings.long_context_chars

    def long_context_tag(self, context: str) -> str:
        """"" for a context read with the ordinary window shape; else the long shape, e.g.
        "long=512:128" (core.sweeps puts it into such a context's prediction key)."""
        if not self.is_long(context):
            return ""
        return "long={}:{}".format(*self._window_shape(long=True))

    def predict(
        self,
        questions: Sequence[str],
        contexts: Sequence[str],
        n_best: int = 5,
        progress: ProgressFn | None = None,
        skip_invalid: bool = False,
    ) -> list[Prediction]:
        """Answer many pairs at once. Returns one Prediction per pair, in input order.

        Invalid pairs raise ``QAInputError``, or with ``skip_invalid`` get an empty Prediction
        whose ``unanswered`` says why.
        ``n_best`` (at least 1) spans at most per pair; SettingsError otherwise.
        """
        n_best = check_count("n_best", n_best)
        if len(questions) != len(contexts):
            raise QAInputError("questions and contexts differ in length")
        valid, preds = [], [Prediction() for _ in questions]
        for i, (q, c) in enumerate(zip(questions, contexts)):
            try:
                validate_pair(q, c)
                valid.append(i)
            except QAInputError as e:
                if not skip_invalid:
                    raise
                preds[i] = Prediction(unanswered=e.reason)
        if not valid:
            return preds
        s = self.settings
        windows = []
        for long in (False, True):  # ordinary contexts, then long ones in their own window shape
            group = [j for j, i in enumerate(valid) if self.is_long(contexts[i]) == long]
            if not group:
                continue
            max_length, stride = self._window_shape(long)
            part = build_windows(self.tokenizer, [questions[valid[j]] for j in group],
                                 [contexts[valid[j]] for j in group], max_length=max_length, stride=stride)
            for w in part:
                w.pair_index = group[w.pair_index]
            windows += part
        order = sorted(range(len(windows)), key=lambda k: len(windows[k].input_ids))
        candidates: list[list] = [[] for _ in valid]
        done = 0
        self.resolve_backend()
        import torch

        old_threads = torch.get_num_threads()
        try:
            with torch.inference_mode(), Slot(s.threads) as slot:
                size = s.batch_size or self.default_batch_size()  # None set after construction
                for b in range(0, len(order), size):
                    batch = [windows[k] for k in order[b : b + size]]
                    # asked per batch: a sweep that started alone gives way to an asker arriving
                    start, end = self._forward(batch, slot.threads())
                    for w, sl, el in zip(batch, start, end):
                        candidates[w.pair_index].extend(
                            window_candidates(sl, el, w.offsets, s.top_k, s.max_answer_tokens)
                        )
                    done += len(batch)
                    if progress:
                        progress(done, len(windows))
        finally:
            if torch.get_num_threads() != old_threads:
                torch.set_num_threads(old_threads)
        for j, i in enumerate(valid):
            preds[i] = Prediction(nbest=best_spans(contexts[i], candidates[j], n_best))
        return preds

    def answer(self, question: str, context: str, n_best: int = 5) -> Prediction:
        return self.predict([question], [context], n_best=n_best)[0]

    def _forward(self, batch, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) logits of a batch as float32 numpy, from whichever backend answers, on
        ``threads`` CPU threads (None: the setting, else the policy's count for one caller)."""
        features = [{"input_ids": w.input_ids, **w.extra} for w in batch]
        enc = self.tokenizer.pad(features, padding=True, return_tensors="np")
        self.padding.add([len(w.input_ids) for w in batch], int(enc["input_ids"].shape[1]))
        return self._forward_impl(dict(enc), threads or self.settings.threads or Slot().threads())
