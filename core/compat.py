"""Stored identities: every value and derivation that stored data depends on, in one place.

A sweep store, the variant and prediction caches inside it, a speech trial's folder and the
answers cached under a model's fingerprint are all found again by keys computed here. Changing
any of these bytes makes old data unreachable (a sweep no longer resumes, a cache no longer
hits, a seed draws other variants), so a change here is a format change: bump the format tag it
belongs to, and say so in the commit. ``tests/test_sweep_fixture.py`` (a store written before
core/sweeps existed), ``tests/test_spec_rng.py`` and ``tests/test_protocol.py`` pin them.

What lives here, and who uses it:

* format tags: :data:`SWEEP_FORMAT` (a sweep's configuration, every variant key and so every
  spec's random generator; also importable as ``FORMAT`` from here, ``core.perturb.spec`` and
  ``core.sweeps.config``), :data:`TRIAL_FORMAT` (a speech trial's ``trial.json``);
* key derivations: :func:`sha` (every cache key's form), :func:`canonical_json`,
  :func:`example_hash`, :func:`text_hash`, :func:`variant_key`, :func:`prediction_key`;
* random-generator derivations: :func:`key_rng` (a variant's generator from its key) and
  :func:`step_rng` (a chain's later steps);
* salts: :data:`RESEEDED_SALT` (chains reseeded by issue 25);
* fingerprint tags: :data:`FINGERPRINT_TAGS` (a backend's recipe in a model's fingerprint) and
  :func:`fingerprint_suffix`, the rule that a setting enters the fingerprint only when it is not
  the value it had before the setting existed, so older fingerprints stay valid.

The old places keep their names (``core.perturb.spec.FORMAT``, ``core.sweeps.running.resolve.RESEEDED_SALT``,
``core.sweeps.keys.prediction_key``, ...): they import them from here; the backends' fingerprint
tags are imported from here by their users (core.qa.registry, the tests). This module depends on
the standard library only.

>>> variant_key("DPQ", "{}", 0, 1, "e" * 64, randomised=False) == variant_key("DPQ", "{}", 7, 3, "e" * 64,
...                                                                        randomised=False)
True
>>> fingerprint_suffix(8000, "torch"), fingerprint_suffix(4000, "onnx")
('', ':long_from=4000:backend=onnx:fused-v5')
"""
from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.types import Answer, QAExample

__all__ = [
    "SWEEP_FORMAT", "FORMAT", "TRIAL_FORMAT", "RESEEDED_SALT", "FINGERPRINT_TAGS", "UNHASHED_BACKEND",
    "UNHASHED_LONG_CONTEXT_CHARS", "canonical_json", "sha", "answers_json", "example_hash", "text_hash",
    "variant_key", "prediction_key", "key_rng", "step_rng", "fingerprint_suffix", "backend_of_line",
]

# ---------------------------------------------------------------------------------- format tags

# The sweep store's format tag: part of every variant's cache key and so of every spec's RNG.
SWEEP_FORMAT = "qax-sweep-1"
FORMAT = SWEEP_FORMAT
# A speech trial's folder format (core.collect.trials): trial.json's "format".
TRIAL_FORMAT = "qax-trial-1"

# ---------------------------------------------------------------------------------- salts

# Appended to the cache keys of chains whose generator issue 25 reseeded (ResolvedSpec.rng_reseeded).
RESEEDED_SALT = ":rng=chain"

# ---------------------------------------------------------------------------------- fingerprint tags

# What a backend's answers depend on beyond the weights, for the prediction cache key
# (QAEngine.fingerprint): a new export or quantisation recipe must not reuse the old one's answers.
# Per-channel int8 against per-tensor on XQuAD-en: MiniLM F1 71.1 against 69.1 (torch 72.6, 160
# questions), MPNet 86.1 against 72.5 (torch 91.0, 48 questions), at the same speed. The fused
# graph (export 4) gives torch's spans; its int8 quantises the fused Attention ops too. Since the
# outlier split (core.qa.backends.int8_split; its own file name, model-int8-outliers.onnx): MPNet's XQuAD-en
# F1 80.55 against 78.94 for the plain int8 recipe (fp32 80.93, all 1,190 questions).
# per-window: each window runs alone (OnnxForward.per_window); before, an int8 answer depended on
# the other windows of its batch (44 of 400 XQuAD-en best spans differed between batches of 1 and 8).
# per-token (core.qa.backends.int8_per_token; its own file, INT8_FILE): one activation scale per token instead
# of one per tensor, query/key/value projections included, GELU outputs shifted and unsigned; a
# quarter of the logit error (minilm-squad on SQuAD-train windows: MSE 0.0039 against 0.0171).
# torch-bf16: the model's weights cast to bfloat16, every op in bf16 (TorchForward).
# openvino, openvino-int8 (core.qa.backends.openvino_runtime): converted from torch, bf16 inference precision;
# int8 by NNCF's post-training transformer preset, calibrated on 128 SQuAD-train questions, the FFN
# output projections left in bf16 (logit MSE 0.0041 against 0.0106 with them in int8);
# openvino-int8-full: the same with them in int8 too.
FINGERPRINT_TAGS = {"torch": "torch", "torch-bf16": "torch-bf16:weights", "onnx": "onnx:fused-v5",
                    "onnx-int8": "onnx-int8:mha-v5-per-token-gelu-unsigned-per-channel-outliers-fp32:per-window",
                    "openvino": "openvino:ir-v1:bf16",
                    "openvino-int8": "openvino-int8:ir-v1:nncf-transformer-squad-train-128:ffn-out-bf16:bf16",
                    "openvino-int8-full": "openvino-int8-full:ir-v1:nncf-transformer-squad-train-128:bf16"}
# The values settings had before they entered the fingerprint: a setting at this value is not
# hashed, so every fingerprint from before the setting existed stays (fingerprint_suffix).
UNHASHED_BACKEND = "torch"
UNHASHED_LONG_CONTEXT_CHARS = 8000


def fingerprint_suffix(long_context_chars: int, backend: str) -> str:
    """What the engine's settings add to a fingerprint after the window shape, answer cap and
    top-k (QAEngine.fingerprint_with): the long-context threshold and the answering backend, each
    only when it differs from the value fingerprints were made with before it existed."""
    out = ""
    if long_context_chars != UNHASHED_LONG_CONTEXT_CHARS:
        out += f":long_from={long_context_chars}"
    if backend != UNHASHED_BACKEND:
        out += f":backend={FINGERPRINT_TAGS.get(backend, backend)}"
    return out


def backend_of_line(line: str) -> str | None:
    """The backend a fingerprint's settings line (:func:`fingerprint_suffix` at its end) was hashed
    with: how a load receipt's fingerprints tell a stored sweep's backend without loading the model.

    >>> backend_of_line("384:128:30:20"), backend_of_line("384:128:30:20:backend=onnx:fused-v5")
    ('torch', 'onnx')
    >>> backend_of_line("384:128:30:20:backend=onnx:fused-v4") is None   # a recipe this code no longer makes
    True
    """
    at = line.find(":backend=")
    if at < 0:
        return UNHASHED_BACKEND
    tag = line[at + len(":backend="):]
    return next((backend for backend, known in FINGERPRINT_TAGS.items() if known == tag), None)


# ---------------------------------------------------------------------------------- keys


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal strings (cache keys, params).

    >>> canonical_json({"p": 0.5, "a": [1, "ü"]})
    '{"a":[1,"ü"],"p":0.5}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha(*parts: Any) -> str:
    """sha256 hex digest of the parts' text, joined by the unit separator (every cache key's form)."""
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    """sha256 hex digest of a text (UTF-8): a context's hash in prediction keys."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def answers_json(answers: Sequence[Answer]) -> str:
    """Gold answers as stored and hashed: ``[[text, answer_start], ...]``."""
    return json.dumps([[a.text, a.answer_start] for a in answers], ensure_ascii=False)


def example_hash(ex: QAExample) -> str:
    """Content hash of an example: id, language, question, context and gold answers (not title)."""
    return sha("example", ex.id, ex.lang, ex.question, ex.context, answers_json(ex.answers))


def variant_key(pid: str, params_json: str, seed: int, repeat: int, ex_hash: str, *, randomised: bool,
                salt: str = "") -> str:
    """The cache key of one variant: (SWEEP_FORMAT, spec id, resolved params as canonical JSON,
    seed, repeat, example hash, salt). A deterministic spec leaves seed and repeat out: its output
    does not depend on them, so sweeps with other seeds share it. ``salt``: a challenge file's
    sha256 (core.sweeps.running.resolve), "" for a registered perturbation."""
    if randomised:
        return sha("variant", SWEEP_FORMAT, pid, params_json, seed, repeat, ex_hash, salt)
    return sha("variant", SWEEP_FORMAT, pid, params_json, "-", 0, ex_hash, salt)


def prediction_key(model: str, fingerprint: str, question: str, context_hash: str, tag: str = "") -> str:
    """The cache key of one model's answer. ``tag``: the engine's window shape for a long context
    (``QAEngine.long_context_tag``), "" (left out of the key) for ordinary ones."""
    if tag:
        return sha("prediction", model, fingerprint, question, context_hash, tag)
    return sha("prediction", model, fingerprint, question, context_hash)

# ---------------------------------------------------------------------------------- random generators


def key_rng(key: str) -> random.Random:
    """The generator of the variant whose cache key is ``key``: seeded from sha256("rng" + key)."""
    digest = hashlib.sha256(("rng" + key).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def step_rng(rng: random.Random, step: int) -> random.Random:
    """The generator of a chain's step ``step`` (0-based): the first step draws from the chain's
    ``rng`` itself, so ``A`` and ``A+B`` make the same A-variant; each later step from a
    generator seeded by the chain's ``rng`` as the steps before it left it."""
    return rng if step == 0 else random.Random(rng.getrandbits(64))
