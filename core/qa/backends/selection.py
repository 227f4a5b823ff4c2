"""Which backend answers: the names, the setting "default", the rule that picks a model's default
from its card's measurements, why a backend cannot run here, and the forward callable for one.

Every backend is a callable ``(encoded batch, threads) -> (start logits, end logits)``
(:class:`core.qa.backends.torch_eager.TorchForward`,
:class:`core.qa.backends.onnx_runtime.OnnxForward`,
:class:`core.qa.backends.openvino_runtime.OpenVinoForward`): the engine takes it from
:func:`make_forward` and keeps windows, batching and decoding its own.
"""
from __future__ import annotations

from pathlib import Path

from core.qa.backends.onnx_runtime import OnnxForward, ensure_export, model_input_names
from core.qa.backends.torch_eager import TorchForward, bf16_unavailable

# openvino, openvino-int8 and openvino-int8-full: core.qa.backends.openvino_runtime
OPENVINO_BACKENDS = ("openvino", "openvino-int8", "openvino-int8-full")
BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8", *OPENVINO_BACKENDS)
# The setting that means "this model's default": the fastest backend whose XQuAD-en F1 is within
# 0.5 of torch fp32's, as measured and recorded in its model card (benchmarks/qa_throughput.py
# --compare-backends --card); torch for a model without that record.
DEFAULT = "default"
CHOICES = (DEFAULT, *BACKENDS)


class BackendUnavailable(RuntimeError):
    """A backend that cannot run here (onnxruntime missing, export or session failed); the engine
    answers with torch instead and keeps this message."""


def check_backend(value) -> str:
    """``value`` when it names a backend or "default", else ValueError naming the choices.

    >>> check_backend("onnx-int8"), check_backend("default")
    ('onnx-int8', 'default')
    >>> check_backend("tensorrt")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: must be one of default, torch, torch-bf16, onnx, onnx-int8, openvino, openvino-int8,
    openvino-int8-full, got 'tensorrt'
    """
    if not isinstance(value, str) or value not in CHOICES:
        raise ValueError(f"must be one of {', '.join(CHOICES)}, got {value!r}")
    return value



def backend_unavailable(backend: str, device) -> str | None:
    """Why ``backend`` cannot run on ``device`` (a torch.device or its type, "cpu") here (None
    when it can), without building it or importing its runtime."""
    import importlib.util

    if backend == "torch-bf16":
        return bf16_unavailable(device)
    if backend in ("onnx", "onnx-int8") and importlib.util.find_spec("onnxruntime") is None:
        return "onnxruntime is not installed: pip install onnxruntime==1.31.1"
    if backend in OPENVINO_BACKENDS:
        from core.qa.backends.openvino_runtime import openvino_unavailable

        return openvino_unavailable(backend, device)
    return None


# A backend may be a model's default only when its F1 is at most this far below torch fp32's.
F1_TOLERANCE = 0.5


def choose_default(backends: dict[str, dict], tolerance: float = F1_TOLERANCE) -> str:
    """Issue 27's rule: the fastest backend whose F1 is within ``tolerance`` of torch's (torch
    itself qualifies), from measured ``{name: {"f1", "questions_per_second"}}``.

    >>> choose_default({"torch": {"f1": 80.0, "questions_per_second": 50},
    ...                 "onnx": {"f1": 80.0, "questions_per_second": 75},
    ...                 "onnx-int8": {"f1": 78.9, "questions_per_second": 150}})
    'onnx'
    """
    floor = backends["torch"]["f1"] - tolerance
    ok = [name for name, b in backends.items() if b["f1"] >= floor]
    return max(ok, key=lambda name: backends[name]["questions_per_second"])



def open_graph(backend: str, path: Path, threads: int | None = None):
    """The forward strategy over ``path``, a graph made for ``backend`` before (by make_forward,
    for the same weights): no torch model needed (core.qa.receipts). Raises BackendUnavailable
    when the backend cannot run here."""
    check_backend(backend)
    missing = backend_unavailable(backend, "cpu")
    if missing:
        raise BackendUnavailable(missing)
    if backend in OPENVINO_BACKENDS:
        from core.qa.backends.openvino_runtime import OpenVinoForward

        return OpenVinoForward(path, backend, threads)
    if backend in ("onnx", "onnx-int8"):
        return OnnxForward(path, backend, threads, per_window=backend == "onnx-int8")
    raise ValueError(f"backend {backend!r} answers from no graph file")


def make_forward(backend: str, model, tokenizer, device, threads: int | None = None):
    """The forward strategy for ``backend``; raises BackendUnavailable (with the reason) when it
    cannot run here (no native bf16, no onnxruntime or openvino, a failed export). torch is always
    available."""
    check_backend(backend)
    missing = backend_unavailable(backend, device)
    if missing:
        raise BackendUnavailable(missing)
    if backend in ("torch", "torch-bf16"):
        return TorchForward(model, device, bf16=backend == "torch-bf16")
    if backend in OPENVINO_BACKENDS:
        from core.qa.backends.openvino_runtime import make_openvino_forward

        try:
            return make_openvino_forward(backend, model, tokenizer, model_input_names(tokenizer, model), threads)
        except Exception as e:  # conversion, calibration or compilation: torch answers instead
            raise BackendUnavailable(f"{backend} conversion or compilation failed ({type(e).__name__}: {e})") from e
    try:
        path = ensure_export(model, model_input_names(tokenizer, model), backend, tokenizer=tokenizer)
        return OnnxForward(path, backend, threads, per_window=backend == "onnx-int8")
    except Exception as e:  # export or session errors of any kind: torch answers instead
        raise BackendUnavailable(f"{backend} export or session failed ({type(e).__name__}: {e})") from e
