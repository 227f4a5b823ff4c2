"""Cache keys: which stored variant and which stored prediction a unit of sweep work can reuse.

Both caches are shared by all sweeps in a file (:mod:`core.sweeps.store` has the tables):
  * variant: sha256 of (FORMAT, perturbation id, resolved params as canonical JSON, seed, repeat,
    example content hash): :func:`core.perturb.spec.variant_key`. Deterministic perturbations
    leave seed and repeat out (their output does not depend on them, so sweeps with other seeds
    share them); file specs salt it with the file's sha256. The ``random.Random`` handed to the
    perturbation is seeded from the same parts (:func:`core.perturb.spec.rng_for`), so a unit's
    variant does not depend on which other units run, or in what order.
  * prediction: sha256 of (model name, model fingerprint, question, context sha256). The
    fingerprint (:func:`engine_fingerprint`) hashes the weights, the tokenizer and the engine
    settings that change answers, so a retrained model never reuses stale answers.
A code change inside a perturbation is not seen by its key: after changing one, bump FORMAT or use
a new database file.
"""
from __future__ import annotations

import hashlib
import weakref
from typing import Any

from core.perturb.spec import answers_json, example_hash, sha, variant_key
from core.sweeps.config import SweepError

__all__ = ["sha", "answers_json", "example_hash", "variant_key", "prediction_key", "engine_fingerprint"]


def prediction_key(model: str, fingerprint: str, question: str, context_hash: str, tag: str = "") -> str:
    """The cache key of one model's answer. ``tag``: the engine's window shape for a long context
    (``QAEngine.long_context_tag``), "" (left out of the key) for ordinary ones."""
    if tag:
        return sha("prediction", model, fingerprint, question, context_hash, tag)
    return sha("prediction", model, fingerprint, question, context_hash)


# engine -> sha256 state after its weights and tokenizer: the settings are hashed on every call,
# since they may change after the first (a cached digest would then key stale answers).
_fingerprints: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def engine_fingerprint(engine: Any) -> str:
    """A hash that changes whenever the engine could answer differently.

    An engine with a ``fingerprint`` str attribute supplies its own. A ``QAEngine`` is hashed
    from its weights (every tensor of the state dict, in name order), its tokenizer (the fast
    tokenizer's JSON) and the settings that change answers (max_length, stride,
    max_answer_tokens, top_k, and the backend when it is not torch: every field of EngineSettings
    but two). ``batch_size`` and
    ``threads`` only change speed: minilm-squad on 300 XQuAD-en questions gives the same 300 spans
    at batch sizes 1, 8 and 32 (scores within 2e-6), so sweeps run at any batch size share their
    cache. ``n_best`` is not a setting: the sweep always keeps the best span. Invalid settings
    cannot be hashed: EngineSettings refuses them when they are set. The weights are hashed once
    per engine object (~0.1 s per 100 MB), the settings on every call: a setting changed after
    the first call changes the fingerprint. max_length and stride are the values the engine
    windows with (cut to what the model allows, as at construction).
    """
    own = getattr(engine, "fingerprint", None)
    if isinstance(own, str) and own:
        return own
    try:
        h = _fingerprints[engine].copy()
    except (KeyError, TypeError):
        h = _weights_hash(engine)
        try:
            _fingerprints[engine] = h.copy()
        except TypeError:
            pass
    s = getattr(engine, "settings", None)
    if s is not None:
        shape = getattr(engine, "_window_shape", None)
        max_length, stride = shape() if callable(shape) else (s.max_length, s.stride)
        h.update(f"{max_length}:{stride}:{s.max_answer_tokens}:{s.top_k}".encode())
        # Long contexts' window shape: its threshold hashed only when not the default (stored
        # fingerprints stay); the shape itself joins the key of each long context's prediction
        # (:func:`prediction_key`), since before it existed long contexts were read like short ones.
        threshold = getattr(s, "long_context_chars", 8000)
        if threshold != 8000:
            h.update(f":long_from={threshold}".encode())
        # The backend that answers (an ONNX one that fell back is torch), hashed only when not
        # torch: every fingerprint from before backends existed, and their stored sweeps, stay.
        resolve = getattr(engine, "resolve_backend", None)
        backend = resolve() if callable(resolve) else getattr(s, "backend", "torch")
        if backend != "torch":
            from core.qa.onnx_backend import FINGERPRINT_TAGS

            h.update(f":backend={FINGERPRINT_TAGS.get(backend, backend)}".encode())
    return h.hexdigest()[:20]


def _weights_hash(engine: Any):
    """sha256 over an engine's weights (every tensor, in name order) and its tokenizer."""
    import torch

    model = getattr(engine, "model", None)
    if model is None or not hasattr(model, "state_dict"):
        raise SweepError(f"cannot fingerprint engine {engine!r}: it has neither a 'fingerprint' "
                         "attribute nor a torch 'model'")
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    tokenizer = getattr(engine, "tokenizer", None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    # as loaded (QAEngine.tokenizer_json), not as the last call left its truncation state
    loaded = getattr(engine, "tokenizer_json", None)
    h.update((loaded or (backend.to_str() if backend is not None else repr(tokenizer))).encode())
    return h

