"""Cache keys: which stored variant and which stored prediction a unit of sweep work can reuse.

Both caches are shared by all sweeps in a file (:mod:`core.sweeps.store` has the tables):
  * variant: sha256 of (FORMAT, perturbation id, resolved params as canonical JSON, seed, repeat,
    example content hash): :func:`core.compat.variant_key`. Deterministic perturbations
    leave seed and repeat out (their output does not depend on them, so sweeps with other seeds
    share them); file specs salt it with the file's sha256. The ``random.Random`` handed to the
    perturbation is seeded from the same parts (:func:`core.perturb.spec.rng_for`), so a unit's
    variant does not depend on which other units run, or in what order.
  * prediction: sha256 of (model name, model fingerprint, question, context sha256). The
    fingerprint (:func:`engine_fingerprint`: the model's own, QAModel.fingerprint) hashes the
    weights, the tokenizer and the engine settings that change answers, so a retrained model
    never reuses stale answers.
A code change inside a perturbation is not seen by its key: after changing one, bump FORMAT or use
a new database file. The derivations themselves are in :mod:`core.compat` (the stored identities);
this module keeps their old import names.
"""
from __future__ import annotations

from core.compat import answers_json, example_hash, prediction_key, sha, variant_key
from core.qa.protocol import QAModel, fingerprint_of
from core.sweeps.config import SweepError

__all__ = ["sha", "answers_json", "example_hash", "variant_key", "prediction_key", "engine_fingerprint"]


def engine_fingerprint(engine: QAModel) -> str:
    """The model's own fingerprint (:meth:`core.qa.protocol.QAModel.fingerprint`; a test double
    may hold it as a plain string attribute); SweepError when it has none.

    A ``QAEngine`` computes it from its weights, tokenizer and the settings that change answers
    (:meth:`core.qa.engine.QAEngine.fingerprint`); the sweep never looks inside a model.
    """
    try:
        return fingerprint_of(engine)
    except TypeError as e:
        raise SweepError(str(e)) from None
