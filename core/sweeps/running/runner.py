"""The sweep runner: a sweep's pending work as chunks of steps, the same on every backend.

Every (spec, repeat, example) is one *unit*. Work is done in chunks of units: the chunk's variants
are computed (or read from the cache), then for each model one batched ``engine.predict`` call
answers every (question, context) pair the cache does not hold yet, then all of it (variants,
predictions, EM/F1 rows) is written in ONE transaction. A sweep killed at any moment loses at most
the chunk in flight; re-running the same command skips every unit that has its rows. The clean
(unperturbed) predictions are a first phase of the same kind.

A chunk is a generator of steps (:data:`ChunkSteps`): it asks for variants
(:class:`ComputeVariants`) and model answers (:class:`Predict`) and is sent the answers; the local
backend answers in this process (:func:`drive`, core.sweeps.running.run), core.sweeps.running.ray on a Ray
cluster. The cache keys are :mod:`core.sweeps.keys`'.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from core.metrics import score_answer
from core.perturb.spec import canonical_json
from core.sweeps.config import ProgressFn, SweepError, SweepRun
from core.sweeps.keys import answers_json, example_hash, prediction_key
from core.sweeps.running.resolve import Outcome, ResolvedSpec
from core.sweeps.store import Store, text_hash
from core.types import QAExample

__all__ = ["Unit", "ComputeVariants", "Predict", "ChunkSteps", "Runner", "context_tagger", "compute_locally",
           "drive", "now"]


def now() -> str:
    """The time stored with a sweep: UTC, ISO 8601, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class Unit:
    spec: ResolvedSpec
    repeat: int
    example: QAExample
    ex_hash: str
    variant_key: str


@dataclass
class _VariantRecord:
    status: str
    question: str | None
    context_hash: str | None
    golds: list[str]


# What a chunk's steps ask of whoever runs them (see Runner): the sweep's logic (caches, keys,
# rows, transactions) is the same generator on every backend; only who computes differs.
@dataclass
class ComputeVariants:
    """Compute these units' variants: answer with one :class:`Outcome` per unit, in order."""

    units: list[Unit]


@dataclass
class Predict:
    """Answer these (question, context) pairs with ``model``: one Prediction per pair, in order."""

    model: str
    questions: list[str]
    contexts: list[str]


ChunkSteps = Generator[Any, Any, int]   # yields requests, is sent their answers, returns rows written


def context_tagger(engine: Any) -> Callable[[str], str] | None:
    """The engine's ``long_context_tag`` (a long context's window shape, part of its prediction
    key), or None for an engine without one."""
    tag_of = getattr(engine, "long_context_tag", None)
    return tag_of if callable(tag_of) else None


def compute_locally(unit: Unit, seed: int) -> Outcome:
    """A unit's variant, computed here with the unit's own RNG (the same on every backend)."""
    return unit.spec.make(unit.example, unit.spec.rng(unit.ex_hash, seed, unit.repeat))


def drive(steps: ChunkSteps, serve: Callable[[Any], Any]) -> int:
    """Run a chunk's steps to the end, answering each request with ``serve``; rows written."""
    try:
        request = next(steps)
        while True:
            request = steps.send(serve(request))
    except StopIteration as stop:
        return stop.value or 0


class Runner:
    """One execution of a sweep against an open store (see run_sweep).

    :meth:`chunks` yields each chunk of pending work as a generator of steps: it asks for variants
    (:class:`ComputeVariants`) and model answers (:class:`Predict`) it does not find in the caches,
    and ends by writing the chunk in one transaction. The local backend answers the requests in
    this process, one chunk after the other (:func:`drive`); core.sweeps.running.ray answers them on a Ray
    cluster with several chunks in flight. Only the process driving the steps writes the store.
    """

    def __init__(self, store: Store, sweep_id: int, examples: list[QAExample], specs: list[ResolvedSpec],
                 fingerprints: dict[str, str], seed: int, run: SweepRun, progress: ProgressFn | None,
                 taggers: Mapping[str, Callable[[str], str] | None] | None = None):
        self.store, self.sweep_id, self.examples, self.specs = store, sweep_id, examples, specs
        self.fingerprints, self.seed, self.run = fingerprints, seed, run
        # model -> its engine's long_context_tag (part of a long context's prediction key)
        self.taggers = dict(taggers or {})
        self.models = list(fingerprints)
        self.progress = progress
        self.hashes = {ex.id: example_hash(ex) for ex in examples}
        # Context texts by hash: the data set's, plus perturbed ones as they are met; and those
        # committed to the store (a chunk writes a new context it uses unless one is committed:
        # with several chunks in flight, the chunk that met it first may not be committed yet).
        self.contexts: dict[str, str] = {text_hash(ex.context): ex.context for ex in examples}
        self.stored_contexts: set[str] = set(self.contexts)

    def _context(self, context_hash: str) -> str:
        if context_hash not in self.contexts:
            self.contexts[context_hash] = self.store.context_text(context_hash)
            self.stored_contexts.add(context_hash)
        return self.contexts[context_hash]

    def _key(self, model: str, question: str, context_hash: str) -> str:
        tag_of = self.taggers.get(model)
        tag = tag_of(self._context(context_hash)) if tag_of is not None else ""
        return prediction_key(model, self.fingerprints[model], question, context_hash, tag)

    def _heartbeat(self) -> None:
        """Inside a chunk's transaction: ``updated_at`` tells a live sweep from a killed one."""
        self.store.heartbeat(self.sweep_id, now())

    def tick(self) -> None:
        """Report progress: rows done of the complete sweep."""
        if self.progress:
            self.progress(self.run.done_units, self.run.total_units)

    def _answer(self, model: str, pairs: dict[str, tuple[str, str]]):
        """Steps: best span for each prediction key in ``pairs`` ({key: (question, context_hash)}):
        from the cache, or from ONE batched Predict request for the missing ones. Returns
        ({key: (answer, start, end)}, new prediction rows)."""
        found = {k: (r["answer"], r["span_start"], r["span_end"])
                 for k, r in self.store.fetch_by_keys(
                     "predictions", "key", pairs, "key, answer, span_start, span_end").items()}
        missing = [k for k in pairs if k not in found]
        self.run.predictions_cached += len(pairs) - len(missing)
        rows: list[dict] = []
        if missing:
            questions = [pairs[k][0] for k in missing]
            contexts = [self._context(pairs[k][1]) for k in missing]
            preds = yield Predict(model, questions, contexts)
            unanswered = [(q, p.unanswered) for q, p in zip(questions, preds) if p.unanswered]
            if unanswered:   # scored, an unanswered pair would read as a wrong answer (issue 61's audit)
                q, why = unanswered[0]
                raise SweepError(f"{model} cannot answer {len(unanswered)} of this chunk's {len(questions)} "
                                 f"questions: {why} (the first: {q[:80]!r}). The sweep stops here and keeps "
                                 f"its rows; leave {model} out, or choose passages that fit it.")
            self.run.model_calls += 1
            self.run.predictions_computed += len(missing)
            for k, pred in zip(missing, preds):
                best = pred.best
                start, end = (best.start, best.end) if best is not None else (None, None)
                score = float(best.score) if best is not None else None
                found[k] = (pred.text, start, end)
                rows.append({"key": k, "model": model, "fingerprint": self.fingerprints[model],
                             "question": pairs[k][0], "context_hash": pairs[k][1], "answer": pred.text,
                             "span_start": start, "span_end": end, "score": score})
        return found, rows

    def _commit(self, rows_written: int) -> int:
        self.run.done_units += rows_written
        self.tick()
        return rows_written

    def chunks(self, chunk_size: int, min_chunks: int = 1) -> Iterator[ChunkSteps]:
        """Every chunk of pending work, clean ones first, as steps (see the class doc). The pending
        perturbed units are read from the store when the first perturbed chunk is asked for, and
        cut into at least ``min_chunks`` chunks when there are that many units (core.sweeps.running.ray:
        a small sweep of slow perturbations then still keeps every worker busy, and a chunk's
        answers overlap the next chunk's perturbations). Chunks change no row or key."""
        yield from self.clean_chunks(chunk_size)
        yield from self.perturbed_chunks(chunk_size, min_chunks)

    # -------------------------------------------------------------------------------- clean

    def clean_chunks(self, chunk_size: int) -> Iterator[ChunkSteps]:
        done = self.store.clean_done(self.sweep_id)
        pending = [ex for ex in self.examples
                   if any((m, self.hashes[ex.id]) not in done for m in self.models)]
        for start in range(0, len(pending), chunk_size):
            yield self._clean_chunk(pending[start:start + chunk_size], done)

    def _clean_chunk(self, chunk: list[QAExample], done: set) -> ChunkSteps:
        predictions, results = [], []
        for model in self.models:
            todo = [ex for ex in chunk if (model, self.hashes[ex.id]) not in done]
            pairs = {}
            for ex in todo:
                ch = text_hash(ex.context)
                pairs[self._key(model, ex.question, ch)] = (ex.question, ch)
            answers, rows = yield from self._answer(model, pairs)
            predictions += rows
            for ex in todo:
                k = self._key(model, ex.question, text_hash(ex.context))
                em, f1 = score_answer(answers[k][0], ex.answer_texts, ex.lang)
                results.append({"sweep_id": self.sweep_id, "model": model,
                                "example_hash": self.hashes[ex.id], "prediction_key": k,
                                "em": em, "f1": f1})
        with self.store.transaction():
            self.store.insert_many("predictions", predictions)
            self.store.insert_many("clean_results", results)
            self._heartbeat()
        return self._commit(len(results))

    # ----------------------------------------------------------------------------- perturbed

    def units(self) -> list[Unit]:
        return [Unit(s, r, ex, self.hashes[ex.id], s.variant_key(self.hashes[ex.id], self.seed, r))
                for s in self.specs for r in range(s.repeats) for ex in self.examples]

    def perturbed_chunks(self, chunk_size: int, min_chunks: int = 1) -> Iterator[ChunkSteps]:
        done = self.store.perturbed_done(self.sweep_id)

        def missing_models(u: Unit) -> list[str]:
            return [m for m in self.models
                    if (m, u.spec.id, u.spec.params_json, u.repeat, u.ex_hash) not in done]

        pending = [(u, mm) for u in self.units() if (mm := missing_models(u))]
        size = max(1, min(chunk_size, -(-len(pending) // max(1, min_chunks))))
        for start in range(0, len(pending), size):
            yield self._perturbed_chunk(pending[start:start + size])

    def _perturbed_chunk(self, chunk: list[tuple[Unit, list[str]]]) -> ChunkSteps:
        records = self._cached_variants(chunk)
        todo = list({u.variant_key: u for u, _ in chunk if u.variant_key not in records}.values())
        outcomes = (yield ComputeVariants(todo)) if todo else []
        new_variants: list[dict] = []
        new_contexts: dict[str, str] = {}
        for u, outcome in zip(todo, outcomes):
            self.run.variants_computed += 1
            row, records[u.variant_key] = self._variant_row(u, outcome, new_contexts)
            new_variants.append(row)
        predictions, results = [], []
        for model in self.fingerprints:
            mine = [u for u, models in chunk if model in models]
            rows, scored = yield from self._perturbed_results(model, mine, records)
            predictions += rows
            results += scored
        with self.store.transaction():
            self.store.insert_many("contexts", [{"hash": h, "text": t} for h, t in new_contexts.items()])
            self.store.insert_many("variants", new_variants)
            self.store.insert_many("predictions", predictions)
            self.store.insert_many("results", results)
            self._heartbeat()
        self.stored_contexts.update(new_contexts)
        return self._commit(len(results))

    def _cached_variants(self, chunk: list[tuple[Unit, list[str]]]) -> dict[str, _VariantRecord]:
        """The chunk's variants found in the variant cache, by key."""
        cached = self.store.fetch_by_keys(
            "variants", "key", [u.variant_key for u, _ in chunk],
            "key, status, question, context_hash, answers_json")
        records: dict[str, _VariantRecord] = {}
        for u, _ in chunk:
            row = cached.get(u.variant_key)
            if row is not None and u.variant_key not in records:
                golds = [a[0] for a in json.loads(row["answers_json"])] if row["answers_json"] else []
                records[u.variant_key] = _VariantRecord(row["status"], row["question"], row["context_hash"], golds)
                self.run.variants_cached += 1
        return records

    def _variant_row(self, u: Unit, outcome: Outcome, new_contexts: dict[str, str]) -> tuple[dict, _VariantRecord]:
        """A computed variant's cache row and its record; a perturbed context not stored yet joins
        ``new_contexts``."""
        row = {"key": u.variant_key, "perturbation": u.spec.id, "params_json": u.spec.params_json,
               "seed": self.seed if u.spec.randomised else None,
               "repeat": u.repeat if u.spec.randomised else 0, "example_hash": u.ex_hash,
               "status": outcome.status, "note": outcome.note, "field": None, "question": None,
               "context_hash": None, "answers_json": None, "changed": None, "cer": None,
               "wer": None, "meta_json": None}
        if outcome.status == "ok":
            v = outcome.example
            if not v.answers:
                row.update(status="error", note="the perturbed example has no gold answer")
            else:
                ch = text_hash(v.context)
                self.contexts.setdefault(ch, v.context)
                if ch not in self.stored_contexts:
                    new_contexts[ch] = v.context
                row.update(field=outcome.field, question=v.question, context_hash=ch,
                           answers_json=answers_json(v.answers), changed=int(bool(outcome.changed)),
                           cer=_finite(outcome.cer), wer=_finite(outcome.wer),
                           meta_json=canonical_json(outcome.meta))
        golds = [a.text for a in outcome.example.answers] if row["status"] == "ok" else []
        return row, _VariantRecord(row["status"], row["question"], row["context_hash"], golds)

    def _perturbed_results(self, model: str, units: list[Unit], records: dict[str, _VariantRecord]):
        """Steps: ``model``'s answers to the units' variants (cached or one Predict request) and
        the result rows. Returns (new prediction rows, result rows)."""
        pairs = {}
        for u in units:
            rec = records[u.variant_key]
            if rec.status == "ok":
                pairs[self._key(model, rec.question, rec.context_hash)] = (rec.question, rec.context_hash)
        answers, predictions = (yield from self._answer(model, pairs)) if pairs else ({}, [])
        results = []
        for u in units:
            rec = records[u.variant_key]
            row = {"sweep_id": self.sweep_id, "model": model, "perturbation": u.spec.id,
                   "params_json": u.spec.params_json, "repeat": u.repeat, "example_hash": u.ex_hash,
                   "variant_key": u.variant_key, "status": rec.status, "prediction_key": None,
                   "em": None, "f1": None}
            if rec.status == "ok":
                k = self._key(model, rec.question, rec.context_hash)
                em, f1 = score_answer(answers[k][0], rec.golds, u.example.lang)
                row.update(prediction_key=k, em=em, f1=f1)
            results.append(row)
        return predictions, results


def _finite(x: float | None) -> float | None:
    return x if x is not None and x == x and abs(x) != float("inf") else None

